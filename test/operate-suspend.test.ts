import { readFileSync } from "node:fs";
import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { driftlessAsync, repo } from "./helpers/cli.js";
import type { DaemonProcess } from "./helpers/daemon-process.js";
import { apiKey, files, KEY_ROUTE, metricsOf, useDaemonRun, WATCHES } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/**
 * Suspend and resume through the built CLI and a running `driftless run`: the whole daemon
 * (`driftless suspend|resume`, kept in the state across a restart) and one resource (its annotation).
 */

const TOKEN = "status-token-for-suspend-tests";
const ORG_ROUTE = "/v1/organizations/{organizationId}";
const ORGANIZATION = readFileSync(join(repo, "examples", "organization.yaml"), "utf8");
const run = useDaemonRun();

type Status = {
  revision: string | null;
  suspended: { since: string; reason?: string } | null;
  resources: Array<{
    kind: string;
    name: string;
    status: string;
    lastError: string | null;
    polledAt?: string;
  }>;
};

const statusOf = async (d: DaemonProcess): Promise<Status> =>
  (
    await fetch(`${d.url}/status`, { headers: { authorization: `Bearer ${TOKEN}` } })
  ).json() as Promise<Status>;

/** The status once a pass has read `revision` and the ApiKey has status `status`. */
const settled = (d: DaemonProcess, revision: string, status: string) =>
  until(async () => {
    const body = await statusOf(d);
    const key = body.resources.find((r) => r.kind === "ApiKey");
    return body.revision === revision && key?.status === status ? body : undefined;
  });

const pollSuccesses = async (d: DaemonProcess) =>
  Number(/^driftless_poll_total\{result="success"\} (\d+)$/m.exec(await metricsOf(d))?.[1] ?? "0");

const suspendedGauge = async (d: DaemonProcess) =>
  /^driftless_suspended (\d+)$/m.exec(await metricsOf(d))?.[1];

const renamed = () =>
  run.keyPatches().filter((r) => (r.body as { name?: string }).name === "ci-deployer-renamed");

describe("driftless suspend and resume", () => {
  it("stops every write at once, stays suspended across a restart, keeps polling and ready, and resume sends what waited", async () => {
    const env = { DRIFTLESS_STATUS_TOKEN: TOKEN };
    const first = await run.start(env);
    await first.waitForLog((l) => l.msg === "pass finished");

    const suspend = await driftlessAsync(["suspend", "--url", first.url, "--reason", "incident 42"], env);
    const revision = await run.layout.publish(files("ci-deployer-renamed"));
    const during = await settled(first, revision, "Suspended");
    const polls = await pollSuccesses(first);
    await until(async () => (await pollSuccesses(first)) > polls);
    const ready = (await fetch(`${first.url}/readyz`)).status;
    const gauge = await suspendedGauge(first);
    await first.stop("SIGTERM");
    const second = await run.start(env);
    const afterRestart = await settled(second, revision, "Suspended");
    const sentWhileSuspended = renamed().length;
    const resume = await driftlessAsync(["resume", "--url", second.url], env);
    await until(() => renamed().length > 0);
    const resumed = await settled(second, revision, "Synced");

    expect(suspend.code, suspend.stderr).toBe(0);
    expect(suspend.stdout).toMatch(
      /^suspended since \S+ \(incident 42\): no write is sent until driftless resume\n$/,
    );
    expect(during.suspended).toEqual({ since: expect.any(String), reason: "incident 42" });
    expect(during.resources.find((r) => r.kind === "ApiKey")?.lastError).toContain(
      "driftless is suspended since",
    );
    expect(ready).toBe(200);
    expect(gauge).toBe("1");
    expect(afterRestart.suspended).toEqual(during.suspended);
    expect(sentWhileSuspended).toBe(0);
    expect(resume.code, resume.stderr).toBe(0);
    expect(resume.stdout).toBe("resumed: writes are sent again\n");
    expect(resumed.suspended).toBeNull();
    expect(await suspendedGauge(second)).toBe("0");
  });

  it("stops a pass that is running when the suspend arrives, before its next write", async () => {
    // The first contact with the organization takes two PATCHes (its name, then its endpoint list);
    // the simulator holds the first until the daemon has taken the suspend.
    await run.layout.publish({ ...files("ci-deployer"), "organization.yaml": ORGANIZATION });
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    run.simulator.inject({
      api: "management",
      method: "PATCH",
      route: ORG_ROUTE,
      kind: "latency",
      until: held,
    });
    const env = { DRIFTLESS_STATUS_TOKEN: TOKEN };
    const d = await run.start(env);
    await until(() => run.simulator.requests.some((r) => r.route === ORG_ROUTE));

    const suspending = driftlessAsync(["suspend", "--url", d.url], env);
    await d.waitForLog((l) => l.msg === "suspended: no write is sent until resume");
    release();
    const suspend = await suspending;
    const line = await d.waitForLog((l) => l.msg === "pass finished");
    const status = await statusOf(d);

    expect(suspend.code, suspend.stderr).toBe(0);
    expect(run.simulator.requests.filter((r) => r.route === ORG_ROUTE).map((r) => r.body)).toEqual([
      { name: "Acme Analytics" },
    ]);
    expect(status.resources.find((r) => r.kind === "Organization")?.status).toBe("Suspended");
    expect(line.ok).toBe(true);
  });

  it("answers a suspend only once the writes already sent have their answers", async () => {
    // Two writes on the wire when the suspend arrives: the organization's answers come first (and their
    // records are saved, the suspension with them); the simulator holds the key's until the daemon has
    // taken the suspend.
    await run.layout.publish({ ...files("ci-deployer-renamed"), "organization.yaml": ORGANIZATION });
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    run.simulator.inject({ api: "management", method: "PATCH", route: ORG_ROUTE, kind: "latency", ms: 300 });
    run.simulator.inject({
      api: "management",
      method: "PATCH",
      route: KEY_ROUTE,
      kind: "latency",
      until: held,
    });
    const env = { DRIFTLESS_STATUS_TOKEN: TOKEN };
    const d = await run.start(env);
    const onTheWire = (route: string) => run.simulator.requests.some((r) => r.route === route);
    await until(() => onTheWire(ORG_ROUTE) && onTheWire(KEY_ROUTE));

    const suspending = driftlessAsync(["suspend", "--url", d.url], env);
    await d.waitForLog((l) => l.msg === "suspended: no write is sent until resume");
    release();
    const suspend = await suspending;
    const keyAnswers = run.simulator.requests.filter((r) => r.route === KEY_ROUTE).map((r) => r.status);

    expect(suspend.code, suspend.stderr).toBe(0);
    expect(suspend.stderr).toBe("");
    expect(keyAnswers).toEqual([200]);
  });

  it("drops a write that waits for a retry after a 429: nothing is sent once suspend has answered", async () => {
    const env = { DRIFTLESS_STATUS_TOKEN: TOKEN };
    const d = await run.start(env);
    await d.waitForLog((l) => l.msg === "pass finished");
    // The platform asks for 20 s: far longer than the suspend below takes to arrive.
    run.simulator.inject({
      api: "management",
      method: "PATCH",
      route: KEY_ROUTE,
      kind: "status",
      status: 429,
      headers: { "retry-after": "20" },
    });

    run.simulator.clearRequests();
    const revision = await run.layout.publish(files("ci-deployer-renamed"));
    await until(() => run.simulator.requests.some((r) => r.route === KEY_ROUTE && r.status === 429));
    const suspend = await driftlessAsync(["suspend", "--url", d.url], env);
    const line = await d.waitForLog((l) => l.msg === "pass finished" && l.revision === revision);
    const status = await statusOf(d);
    const keyRequests = run.simulator.requests.filter((r) => r.route === KEY_ROUTE).map((r) => r.status);

    expect(suspend.code, suspend.stderr).toBe(0);
    expect(suspend.stderr).not.toContain("not saved");
    expect(keyRequests).toEqual([429]);
    expect(renamed()).toEqual([]);
    expect(status.resources.find((r) => r.kind === "ApiKey")?.status).toBe("Suspended");
    const dropped = d.logs.find((l) => l.msg === "resource not in sync" && l.status === "Suspended");
    expect(dropped?.reason).toMatch(
      /^driftless is suspended since .*; the write waiting to be sent was dropped \(its last attempt: management API PATCH \/v1\/organizations\/\{organizationId\}\/keys\/\{keyId\} answered 429/,
    );
    expect(line.aborted).toBe(false);
  });

  it('leaves alone a resource annotated driftless/suspend: "true", keeps polling its watches, and sends once the annotation goes', async () => {
    const annotated = annotatedKey();
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");

    const revision = await run.layout.publish({
      "keys/ci-deployer.yaml": annotated,
      "watches.yaml": WATCHES,
    });
    const suspended = await settled(d, revision, "Suspended");
    const polled = await until(async () => {
      const watch = (await statusOf(d)).resources.find((r) => r.kind === "AlertWatch");
      return watch?.polledAt && Date.parse(watch.polledAt) > Date.parse(suspendedAt(suspended))
        ? watch
        : undefined;
    });
    const sentWhileAnnotated = renamed().length;
    const gauge = await suspendedGauge(d);
    const metrics = await metricsOf(d);
    const next = await run.layout.publish(files("ci-deployer-renamed"));
    await settled(d, next, "Synced");

    expect(suspended.suspended).toBeNull();
    expect(suspended.resources.find((r) => r.kind === "ApiKey")?.lastError).toBe(
      'suspended by its annotation driftless/suspend: "true": nothing is sent for it until it is removed',
    );
    expect(polled.status).toBe("Synced");
    expect(sentWhileAnnotated).toBe(0);
    expect(gauge).toBe("0");
    expect(metrics).toContain('driftless_resources{kind="ApiKey",status="Suspended"} 1');
    expect(renamed()).toHaveLength(1);
  });

  it("plan shows an annotated resource as waiting, with nothing to send, as apply would do", async () => {
    const folder = join(run.root, "annotated");
    await mkdir(folder, { recursive: true });
    await writeFile(join(folder, "key.yaml"), annotatedKey());

    const plan = await driftlessAsync(["plan", folder], {
      DRIFTLESS_STATE_DIR: join(run.root, "plan-state"),
    });

    expect(plan.stdout).toContain(
      '… ApiKey/ci-deployer: waits: suspended by its annotation driftless/suspend: "true": nothing is sent for it until it is removed',
    );
    expect(plan.stdout).not.toContain("PATCH");
  });

  it("takes the webhook token when no status token is set, and refuses without any token or with a wrong one", async () => {
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");

    const noToken = await driftlessAsync(["suspend", "--url", d.url]);
    const wrong = await driftlessAsync(["suspend", "--url", d.url], { DRIFTLESS_WEBHOOK_TOKEN: "not-it" });
    const right = await driftlessAsync(["suspend", "--url", d.url], {
      DRIFTLESS_WEBHOOK_TOKEN: "hook-token-for-tests",
    });
    const body = (await (await fetch(`${d.url}/status`)).json()) as Status;

    expect(noToken.code).toBe(1);
    expect(noToken.stderr).toBe(
      `driftless: the daemon at ${d.url} wants its token: set DRIFTLESS_STATUS_TOKEN (or, when the daemon has none, DRIFTLESS_WEBHOOK_TOKEN), or its _FILE twin, as the daemon has it\n`,
    );
    expect(wrong.code).toBe(1);
    expect(wrong.stderr).toContain("refused the token");
    expect(right.code, right.stderr).toBe(0);
    expect(body.suspended).toEqual({ since: expect.any(String) });
    expect(d.stderr()).not.toContain("hook-token-for-tests");
  });

  it("answers 403 to a POST /suspend that is not this machine's CLI on a daemon with neither token, and stays unsuspended", async () => {
    const d = await run.start({ DRIFTLESS_WEBHOOK_TOKEN: "" });
    await d.waitForLog((l) => l.msg === "pass finished");

    // No JSON body: what a web page can send to another origin without asking first.
    const answer = await fetch(`${d.url}/suspend`, {
      method: "POST",
      headers: { authorization: "Bearer x" },
    });
    const body = (await (await fetch(`${d.url}/status`)).json()) as Status;

    expect(answer.status).toBe(403);
    expect(await answer.text()).toContain("set DRIFTLESS_STATUS_TOKEN");
    expect(body.suspended).toBeNull();
  });
});

/** The ApiKey renamed, and annotated so that nothing is sent for it. */
const annotatedKey = () =>
  apiKey("ci-deployer-renamed").replace(
    "  name: ci-deployer\n",
    '  name: ci-deployer\n  annotations:\n    driftless/suspend: "true"\n',
  );

/** The newest time anything in `status` was polled: a later poll proves polls went on. */
function suspendedAt(status: Status): string {
  const times = status.resources.flatMap((r) => (r.polledAt ? [r.polledAt] : []));
  return times.sort().at(-1) ?? new Date(0).toISOString();
}
