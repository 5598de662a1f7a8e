import { expect, it } from "vitest";
import { KEY_ROUTE, metricsOf, statusOf, until, useDaemonRun } from "./helpers/daemon-run.js";

/** /status and the metrics say whether a Failed resource is retried by the next pass or waits for a change. */

const run = useDaemonRun();

it("shows a refused request as a terminal failure in /status and driftless_resources_failed", async () => {
  run.simulator.inject({ api: "management", route: KEY_ROUTE, kind: "status", status: 403, count: Infinity });
  const d = await run.start();

  const key = await until(async () => {
    const entry = (await statusOf(d)).resources.find((r) => r.kind === "ApiKey");
    return entry?.status === "Failed" ? entry : undefined;
  });

  expect(key).toMatchObject({ status: "Failed", failure: "terminal" });
  expect(await metricsOf(d)).toContain('driftless_resources_failed{kind="ApiKey",failure="terminal"} 1');
});
