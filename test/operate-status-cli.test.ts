import { writeFile } from "node:fs/promises";
import { createServer } from "node:net";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { driftlessAsync, startDriftless } from "./helpers/cli.js";
import { apiKey, useDaemonRun, WATCHES } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/** `driftless status` through the built CLI against a running `driftless run`. */

const TOKEN = "status-token-for-status-tests";
const run = useDaemonRun();

/** A port nothing listens on (bound, then released). */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  await new Promise((resolve) => server.close(resolve));
  return port;
}

/** Waits until the daemon has polled its watches once, so every resource has a status. */
const started = async (env: Record<string, string> = {}) => {
  const d = await run.start(env);
  await until(async () => {
    const answer = await fetch(`${d.url}/status`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = (await answer.json()) as { resources: Array<{ polledAt?: string }> };
    return body.resources.filter((r) => r.polledAt).length === 2;
  });
  return d;
};

describe("driftless status", () => {
  it("says all is Synced and exits 0, lists everything with --all, and gives the document with -o json", async () => {
    const d = await started();
    const port = new URL(d.url).port;

    // No --url: the listen address, 0.0.0.0 asked as 127.0.0.1.
    const quiet = await driftlessAsync(["status"], { DRIFTLESS_LISTEN: `0.0.0.0:${port}` });
    const all = await driftlessAsync(["status", "--all", "--url", d.url]);
    const json = await driftlessAsync(["status", "-o", "json", "--url", d.url]);

    expect(quiet).toEqual({
      code: 0,
      stdout: "all 3 resources are Synced (as applied; the live objects are not read: DRIFTLESS_READS=off)\n",
      stderr: "",
    });
    expect(all.code).toBe(0);
    const lines = all.stdout.trimEnd().split("\n");
    expect(lines[0]).toMatch(/^KIND +NAME +STATUS +AGE +ID +MESSAGE$/);
    expect(lines.slice(1).map((line) => line.split(/ +/).slice(0, 3))).toEqual(
      expect.arrayContaining([
        ["ApiKey", "ci-deployer", "Synced"],
        ["AlertWatch", "ingest-lag", "Synced"],
        ["BackupWatch", "analytics-backups", "Synced"],
      ]),
    );
    expect(lines.find((line) => line.startsWith("ApiKey"))).toMatch(
      / Synced +\d+s +[0-9a-f-]{36} +applied; not verified: the live object is not read \(DRIFTLESS_READS=off\)$/,
    );
    // A watch is never applied: its age is since its last poll, as the status page shows it.
    expect(lines.find((line) => line.startsWith("AlertWatch"))).toMatch(/ Synced +\d+s/);
    expect(json.code).toBe(0);
    expect(JSON.parse(json.stdout).resources).toHaveLength(3);
  });

  it("shows only what is not Synced, with its message; exits 1 for a Suspended one: it is not Synced", async () => {
    const d = await started();
    const annotated = apiKey("ci-deployer-renamed").replace(
      "  name: ci-deployer\n",
      '  name: ci-deployer\n  annotations:\n    driftless/suspend: "true"\n',
    );
    const revision = await run.layout.publish({
      "keys/ci-deployer.yaml": annotated,
      "watches.yaml": WATCHES,
    });
    await until(async () => {
      const body = (await (await fetch(`${d.url}/status`)).json()) as { revision: string };
      return body.revision === revision;
    });

    const result = await driftlessAsync(["status", "--url", d.url]);

    expect(result.code).toBe(1);
    expect(result.stdout.split("\n")).toEqual([
      expect.stringMatching(/^KIND +NAME +STATUS +AGE +ID +MESSAGE$/),
      expect.stringMatching(
        /^ApiKey +ci-deployer +Suspended +\d+s +[0-9a-f-]{36} +suspended by its annotation driftless\/suspend: "true": nothing is sent for it until it is removed$/,
      ),
      "",
    ]);
  });

  it("exits 3 when the daemon cannot be reached, and when it wants a token it was not given", async () => {
    const tokenFile = join(run.root, "status-token");
    await writeFile(tokenFile, `${TOKEN}\n`);
    const d = await started({ DRIFTLESS_STATUS_TOKEN_FILE: tokenFile });

    const nobody = await driftlessAsync(["status", "--url", `http://127.0.0.1:${await closedPort()}`]);
    const noToken = await driftlessAsync(["status", "--url", d.url]);
    const withToken = await driftlessAsync(["status", "--url", d.url], {
      DRIFTLESS_STATUS_TOKEN_FILE: tokenFile,
    });

    expect(nobody.code).toBe(3);
    expect(nobody.stderr).toMatch(
      /^driftless: cannot reach the daemon at http:\/\/127\.0\.0\.1:\d+ \(.+\): is driftless run listening there\? Give its address with --url\n$/,
    );
    expect(noToken.code).toBe(3);
    expect(noToken.stderr).toContain("wants a token: set DRIFTLESS_STATUS_TOKEN");
    expect(withToken.code).toBe(0);
  });

  it("--watch prints the table again when it changes, until interrupted", async () => {
    const d = await started({ DRIFTLESS_STATUS_TOKEN: TOKEN });
    const env = { DRIFTLESS_STATUS_TOKEN: TOKEN };
    const watching = startDriftless(["status", "--watch", "--url", d.url], env);
    await until(() => watching.stdout().includes("all 3 resources are Synced"));

    const suspend = await driftlessAsync(["suspend", "--url", d.url, "--reason", "freeze"], env);
    await until(() => watching.stdout().includes("Suspended"));
    watching.child.kill("SIGINT");
    const ended = await watching.exited;

    expect(suspend.code, suspend.stderr).toBe(0);
    // A busy machine may show a step between (suspended, resources not yet marked): the last table counts.
    const tables = ended.stdout.split("\n\n");
    expect(tables[0]).toBe(
      "all 3 resources are Synced (as applied; the live objects are not read: DRIFTLESS_READS=off)",
    );
    expect(tables.at(-1)).toMatch(
      /^driftless is suspended since \S+: freeze \(driftless resume\)\nKIND +NAME +STATUS/,
    );
    // Suspended by an operator's choice, but not Synced: git's changes are not applied meanwhile.
    expect(ended.code).toBe(1);
  });

  it("prints what came from outside on one line, its control characters escaped", async () => {
    const d = await started({ DRIFTLESS_STATUS_TOKEN: TOKEN });
    const env = { DRIFTLESS_STATUS_TOKEN: TOKEN };
    await driftlessAsync(["suspend", "--url", d.url, "--reason", "line one\n\u001b[2Jfake line"], env);

    const result = await driftlessAsync(["status", "--url", d.url], env);

    expect(result.stdout).not.toContain("\u001b");
    expect(result.stdout.split("\n")[0]).toMatch(
      /^driftless is suspended since \S+: line one\\n\\u001b\[2Jfake line \(driftless resume\)$/,
    );
  });

  it("exits 1 while no pass has finished, saying so", async () => {
    // Every management answer is held until the status has been asked.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    run.simulator.inject({
      api: "management",
      kind: "latency",
      until: held,
      count: Number.POSITIVE_INFINITY,
    });
    const d = await run.start();

    const result = await driftlessAsync(["status", "--url", d.url]);
    release();

    expect(result).toEqual({ code: 1, stdout: "no reconcile pass has finished yet\n", stderr: "" });
  });
});
