import { request } from "node:http";
import { describe, expect, it } from "vitest";
import { driftlessAsync } from "./helpers/cli.js";
import type { DaemonProcess } from "./helpers/daemon-process.js";
import { files, passesFinished, useDaemonRun, WEBHOOK_TOKEN } from "./helpers/daemon-run.js";

/**
 * `driftless reconcile` through the built CLI and a running `driftless run` on the simulator: a pass
 * now, its result printed once it ended, exit codes as apply's. And the quick start's promise: a
 * daemon on a loopback address with no token takes suspend, resume and reconcile from this machine's
 * CLI without one, but not from a web page (no JSON body, or a Host that is not loopback).
 */

const run = useDaemonRun();
const TOKEN = { DRIFTLESS_WEBHOOK_TOKEN: WEBHOOK_TOKEN };
const INVALID = "apiVersion: driftless/v1\nkind: ApiKey\nmetadata:\n  name: broken\nspec:\n  roles: 7\n";

const started = async (env: Record<string, string> = {}) => {
  const d = await run.start(env);
  await d.waitForLog((l) => l.msg === "pass finished");
  return d;
};

/** A POST of `path` with raw headers (a browser's or a rebinding page's request, not the CLI's). */
function post(d: DaemonProcess, path: string, headers: Record<string, string>): Promise<number> {
  return new Promise((resolve, reject) => {
    const call = request(`${d.url}${path}`, { method: "POST", headers }, (answer) => {
      answer.resume();
      resolve(answer.statusCode ?? 0);
    });
    call.on("error", reject);
    call.end("{}");
  });
}

describe("driftless reconcile", () => {
  it("runs a pass now, waits for it and prints its result, exit 0 when all is in sync", async () => {
    const d = await started();
    const before = passesFinished(d);

    const result = await driftlessAsync(["reconcile", "--url", d.url], TOKEN);

    expect(result.stderr).toBe("");
    expect(result.code).toBe(0);
    // The answer came after the pass it asked for: it is already in the logs.
    expect(passesFinished(d)).toBe(before + 1);
    expect(d.logs.filter((l) => l.msg === "pass finished").at(-1)?.trigger).toBe("operator");
    expect(result.stdout).toMatch(
      /^all 3 resources are Synced \(as applied; the live objects are not read: DRIFTLESS_READS=off\)\nReconcile: pass ok at \S+: 3 resources, 0 not Synced\.\n$/,
    );
  });

  it("exits 1 and shows what is not in sync when a resource is not", async () => {
    await run.layout.publish({ ...files("ci-deployer"), "broken.yaml": INVALID });
    const d = await started();

    const text = await driftlessAsync(["reconcile", "--url", d.url], TOKEN);
    const json = await driftlessAsync(["reconcile", "--url", d.url, "-o", "json"], TOKEN);

    expect(text.code, text.stderr).toBe(1);
    expect(text.stdout).toMatch(/ApiKey\s+broken\s+Invalid/);
    expect(text.stdout).toMatch(
      /Reconcile: pass failed at \S+: 4 resources, 1 not Synced \(1 Invalid\)\.\n$/,
    );
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({
      ok: false,
      exitCode: 1,
      status: { resources: expect.any(Array) },
    });
  });

  it("exits 1 while driftless is suspended, saying the pass sent nothing rather than that it went well", async () => {
    const d = await started();
    const suspended = await driftlessAsync(["suspend", "--url", d.url, "--reason", "freeze"], TOKEN);

    const text = await driftlessAsync(["reconcile", "--url", d.url], TOKEN);
    const json = await driftlessAsync(["reconcile", "--url", d.url, "-o", "json"], TOKEN);

    expect(suspended.code, suspended.stderr).toBe(0);
    expect(text.code, text.stderr).toBe(1);
    expect(text.stdout).toMatch(/^driftless is suspended since \S+: freeze \(driftless resume\)\n/);
    expect(text.stdout).toMatch(/ApiKey\s+ci-deployer\s+Suspended/);
    expect(text.stdout).toMatch(
      /\nReconcile: pass at \S+ sent nothing: driftless is suspended \(driftless resume\): 3 resources, 1 not Synced \(1 Suspended\)\.\n$/,
    );
    expect(json.code).toBe(1);
    expect(JSON.parse(json.stdout)).toMatchObject({ ok: true, exitCode: 1 });
  });

  it("exits 3 when no daemon answers, and 1 with a wrong token", async () => {
    const d = await started();

    const unreachable = await driftlessAsync(["reconcile", "--url", "http://127.0.0.1:1"], TOKEN);
    const wrong = await driftlessAsync(["reconcile", "--url", d.url], { DRIFTLESS_STATUS_TOKEN: "not-it" });
    const none = await driftlessAsync(["reconcile", "--url", d.url]);

    expect(unreachable.code).toBe(3);
    expect(unreachable.stderr).toContain("cannot reach the daemon at http://127.0.0.1:1");
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("refused the token");
    expect(none.code).toBe(1);
    expect(none.stderr).toContain("wants its token: set DRIFTLESS_STATUS_TOKEN");
    expect(passesFinished(d)).toBe(1);
  });
});

describe("a daemon on a loopback address with no token", () => {
  it("takes suspend, resume and reconcile from this machine's CLI without a token", async () => {
    const d = await started({ DRIFTLESS_WEBHOOK_TOKEN: "" });

    const suspend = await driftlessAsync(["suspend", "--url", d.url, "--reason", "trying it"]);
    const resume = await driftlessAsync(["resume", "--url", d.url]);
    const reconcile = await driftlessAsync(["reconcile", "--url", d.url]);

    expect(suspend.code, suspend.stderr).toBe(0);
    expect(suspend.stdout).toContain("suspended since");
    expect(resume.code, resume.stderr).toBe(0);
    expect(reconcile.code, reconcile.stderr).toBe(0);
    expect(reconcile.stdout).toContain("Reconcile: pass ok");
  });

  it("refuses a request without a JSON body or to a Host that is not loopback (a web page's)", async () => {
    const d = await started({ DRIFTLESS_WEBHOOK_TOKEN: "" });

    const form = await post(d, "/suspend", { "content-type": "text/plain" });
    const rebound = await post(d, "/suspend", {
      "content-type": "application/json",
      host: "attacker.example",
    });
    const reconcile = await post(d, "/reconcile", { "content-type": "application/x-www-form-urlencoded" });
    const status = (await (await fetch(`${d.url}/status`)).json()) as { suspended: unknown };

    expect([form, rebound, reconcile]).toEqual([403, 403, 403]);
    expect(status.suspended).toBeNull();
    expect(passesFinished(d)).toBe(1);
  });
});
