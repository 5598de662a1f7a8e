import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { useDaemonRun } from "./helpers/daemon-run.js";

/** `driftless run` with DRIFTLESS_STATUS_TOKEN_FILE: /status behind a bearer token read from a file. */

const context = useDaemonRun();

describe("driftless run with a /status token", () => {
  it("answers /status only with the file's current token, and leaves the probes and metrics open", async () => {
    const tokenFile = join(context.root, "status-token");
    await writeFile(tokenFile, "status-token-one\n");
    const daemon = await context.start({ DRIFTLESS_STATUS_TOKEN_FILE: tokenFile });
    const status = (token?: string) =>
      fetch(`${daemon.url}/status`, token ? { headers: { authorization: `Bearer ${token}` } } : {}).then(
        (answer) => answer.status,
      );

    const before = { none: await status(), right: await status("status-token-one") };
    await writeFile(tokenFile, "status-token-two\n");
    const after = { old: await status("status-token-one"), rotated: await status("status-token-two") };
    const open = await Promise.all(
      ["/metrics", "/healthz"].map(async (path) => (await fetch(`${daemon.url}${path}`)).status),
    );

    expect(before).toEqual({ none: 401, right: 200 });
    expect(after).toEqual({ old: 401, rotated: 200 });
    expect(open).toEqual([200, 200]);
    expect(daemon.stderr()).not.toContain("status-token-");
  });
});
