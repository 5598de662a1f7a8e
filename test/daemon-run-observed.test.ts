import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { files, ids, KEY_ROUTE, metricsOf, useDaemonRun } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/**
 * `driftless run` as a real process: readiness, the metrics exposition, polls following the simulator,
 * and shutdown on SIGTERM. Needs dist/ built (npm test builds first).
 */

/** Every metric name docs/daemon.md#metrics fixes (the names dashboards and alerts rely on). */
const FIXED_METRICS = [
  "driftless_reconcile_total",
  "driftless_reconcile_duration_seconds",
  "driftless_resources",
  "driftless_manifest_errors",
  "driftless_api_requests_total",
  "driftless_api_request_duration_seconds",
  "driftless_alert_state",
  "driftless_backup_last_finished_timestamp_seconds",
  "driftless_backup_stale",
  "driftless_last_success_timestamp_seconds",
  "driftless_source_revision_info",
  "driftless_build_info",
  "driftless_suspended",
  "driftless_lifecycle_total",
  "driftless_deletes_held",
];

/** The type and label names docs/daemon.md#metrics gives each of them (histograms' `le` aside). */
const FIXED_SHAPES: Record<string, { type: string; labels: string[] }> = {
  driftless_reconcile_total: { type: "counter", labels: ["result"] },
  driftless_reconcile_duration_seconds: { type: "histogram", labels: [] },
  driftless_resources: { type: "gauge", labels: ["kind", "status"] },
  driftless_manifest_errors: { type: "gauge", labels: [] },
  driftless_api_requests_total: { type: "counter", labels: ["api", "method", "route", "code"] },
  driftless_api_request_duration_seconds: { type: "histogram", labels: ["api", "method", "route"] },
  driftless_alert_state: { type: "gauge", labels: ["alert", "name", "state"] },
  driftless_backup_last_finished_timestamp_seconds: { type: "gauge", labels: ["organization", "service"] },
  driftless_backup_stale: { type: "gauge", labels: ["organization", "service"] },
  driftless_last_success_timestamp_seconds: { type: "gauge", labels: [] },
  driftless_source_revision_info: { type: "gauge", labels: ["revision"] },
  driftless_build_info: { type: "gauge", labels: ["version", "revision", "node"] },
  driftless_suspended: { type: "gauge", labels: [] },
  driftless_lifecycle_total: { type: "counter", labels: ["kind", "action"] },
  driftless_deletes_held: { type: "gauge", labels: [] },
};

const run = useDaemonRun();

describe("driftless run, observed", () => {
  it("is not ready until the first pass has finished", async () => {
    // The key's answer is held until the test has asked.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    run.simulator.inject({ api: "management", route: KEY_ROUTE, kind: "latency", until: held });
    const d = await run.start();

    const before = await fetch(`${d.url}/readyz`);
    release();
    await d.waitForLog((l) => l.msg === "pass finished");
    const after = await fetch(`${d.url}/readyz`);

    expect(before.status).toBe(503);
    expect(after.status).toBe(200);
  });

  it("exposes every metric docs/daemon.md#metrics fixes, in valid exposition format", async () => {
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");
    await until(async () => ((await metricsOf(d)).includes("driftless_alert_state{") ? true : undefined));

    const text = await metricsOf(d);
    const names = new Set(
      text
        .split("\n")
        .filter((line) => line.startsWith("# TYPE "))
        .map((line) => line.split(" ")[2]),
    );
    const promtool = spawnSync("promtool", ["check", "metrics"], { input: text, encoding: "utf8" });

    // Prometheus parses values with Go's ParseFloat (NaN in any case; prom-client writes "Nan").
    const samples = text.split("\n").filter((line) => line && !line.startsWith("#"));
    const malformed = samples.filter(
      (line) =>
        !/^[a-zA-Z_:][a-zA-Z0-9_:]*(\{(\w+="(?:[^"\\]|\\.)*",?)*\})? (-?[0-9.]+(e[+-]?\d+)?|[Nn]a[Nn]|[+-]Inf)$/.test(
          line,
        ),
    );

    expect(malformed).toEqual([]);
    for (const name of FIXED_METRICS) expect(names, name).toContain(name);
    expect(text).toMatch(
      /^driftless_api_requests_total\{api="management",method="PATCH",route="\/v1\/organizations\/\{organizationId\}\/keys\/\{keyId\}",code="200"\} \d+$/m,
    );
    // No exception: a lint finding (exit 3) fails as a parse error (exit 1) does.
    expect(promtool.error, "promtool is needed: apt-get install prometheus").toBeUndefined();
    expect(`${promtool.stdout}${promtool.stderr}`.trim()).toBe("");
    expect(promtool.status).toBe(0);
  });

  it("gives every metric docs/daemon.md#metrics fixes its type and exactly its labels", async () => {
    const d = await run.start();
    // The polls run on their own schedule too: a loaded machine may poll before the first pass ends.
    await d.waitForLog((l) => l.msg === "pass finished");
    await until(async () => ((await metricsOf(d)).includes("driftless_backup_stale{") ? true : undefined));
    await until(async () => ((await metricsOf(d)).includes("driftless_alert_state{") ? true : undefined));

    const text = await metricsOf(d);
    const shapes = Object.fromEntries(
      Object.keys(FIXED_SHAPES).map((name) => {
        const type = text.match(new RegExp(`^# TYPE ${name} (\\w+)$`, "m"))?.[1];
        const labelSets = text
          .split("\n")
          .filter((line) => new RegExp(`^${name}(_bucket|_sum|_count)?[{ ]`).test(line))
          .map((line) =>
            [...(line.match(/\{(.*)\}/)?.[1] ?? "").matchAll(/(\w+)="/g)]
              .map((m) => m[1])
              .filter((label) => label !== "le")
              .join(","),
          );
        return [name, { type, labels: [...new Set(labelSets)] }];
      }),
    );

    expect(shapes).toEqual(
      Object.fromEntries(
        Object.entries(FIXED_SHAPES).map(([name, shape]) => [
          name,
          { type: shape.type, labels: [shape.labels.join(",")] },
        ]),
      ),
    );
  });

  it("follows the alert's state and the newest backup in its metrics", async () => {
    const d = await run.start();
    await until(async () => ((await metricsOf(d)).includes('state="OK"} 1') ? true : undefined));

    run.simulator.setAlertState(ids.alertId, "ALERT");
    const backup = run.simulator.addBackup(ids.serviceId);

    const text = await until(async () => {
      const t = await metricsOf(d);
      return t.includes('state="ALERT"} 1') && t.includes(`${Date.parse(backup.finishedAt) / 1000}`)
        ? t
        : undefined;
    });
    expect(text).not.toContain('state="OK"');
    expect(text).toContain(
      `driftless_backup_stale{organization="${ids.organizationId}",service="${ids.serviceId}"} 0`,
    );
  });

  it("on SIGTERM during a pass, lets the in-flight request finish, saves the state and exits 0", async () => {
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");
    // The PATCH is held at the simulator until the daemon has taken the SIGTERM.
    let release = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    run.simulator.inject({ api: "management", route: KEY_ROUTE, kind: "latency", until: held });

    await run.layout.publish(files("renamed-before-shutdown"));
    await until(() =>
      run.simulator.requests.find((r) => r.method === "PATCH" && r.route === KEY_ROUTE && r.status === 0),
    );
    const stopping = d.stop("SIGTERM");
    await d.waitForLog((l) => String(l.msg).startsWith("shutting down"));
    release();
    const code = await stopping;
    const state = JSON.parse(await readFile(join(run.root, "state", "state.json"), "utf8"));

    expect(code).toBe(0);
    expect(JSON.stringify(state.resources["ApiKey/ci-deployer"].applied)).toContain(
      "renamed-before-shutdown",
    );
  });
});
