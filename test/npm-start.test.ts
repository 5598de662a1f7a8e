import { spawn } from "node:child_process";
import { mkdtemp, readFile, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { repo } from "./helpers/cli.js";
import { freshClone } from "./helpers/fresh-clone.js";
import { until } from "./helpers/wait.js";

/**
 * The README's quick start, `npm start`, in a fresh clone (its build writes the clone's dist/, never the
 * one the other tests run): the build says nothing, the first line after npm's header is the status
 * page's address, and that address serves the page of a daemon on the built-in simulator. On port 0
 * (DRIFTLESS_LISTEN), so the line names the port that was really bound.
 */

let root: string;
const { version } = JSON.parse(await readFile(join(repo, "package.json"), "utf8")) as { version: string };

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-start-"));
  await freshClone(join(root, "clone"));
});

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("npm start", () => {
  it("builds quietly, then prints the status page's address first, where the page is served", async () => {
    const child = spawn("npm", ["start"], {
      cwd: join(root, "clone"),
      env: {
        PATH: process.env.PATH ?? "",
        HOME: process.env.HOME ?? root,
        npm_config_update_notifier: "false",
        DRIFTLESS_LISTEN: "127.0.0.1:0",
      },
      // Its own process group, stopped as a terminal's Ctrl-C stops npm and what npm started.
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.setEncoding("utf8").on("data", (chunk: string) => {
      stdout += chunk;
    });
    child.stderr.setEncoding("utf8").on("data", (chunk: string) => {
      stderr += chunk;
    });
    const exited = new Promise<number | null>((resolve) => child.once("close", resolve));

    try {
      const url = await until(() => /^driftless run: status page (\S+) /m.exec(stdout)?.[1], 60_000);
      const page = await fetch(url);
      const html = await page.text();
      const status = (await (await fetch(`${url}status`)).json()) as { platform: string };

      const lines = stdout.split("\n").filter((line) => line !== "");
      const first = lines.findIndex((line) => !line.startsWith("> "));
      // npm's own header (`> driftless@VERSION start`, the script) and nothing of the build before it.
      expect(lines[0]).toBe(`> driftless@${version} start`);
      expect(lines.slice(first)).toEqual([
        `driftless run: status page ${url} (against the BUILT-IN SIMULATOR, not a real platform)`,
      ]);
      expect(stderr).not.toMatch(/rolldown|chunk|Finished in/);
      expect(page.status).toBe(200);
      expect(html).toContain("<title>driftless status</title>");
      expect(status.platform).toBe("simulator");
    } finally {
      if (child.pid) process.kill(-child.pid, "SIGINT");
      await exited;
    }
  });
});
