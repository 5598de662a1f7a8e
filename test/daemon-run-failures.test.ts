import { expect, it } from "vitest";
import {
  files,
  KEY_ROUTE,
  metricsOf,
  statusOf,
  until,
  useDaemonRun,
  WATCHES,
  WEBHOOK_TOKEN,
} from "./helpers/daemon-run.js";

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

it("forgets a refused request once its manifest is gone: brought back, the request is sent again", async () => {
  const d = await run.start();
  await d.waitForLog((l) => l.msg === "pass finished");
  run.simulator.inject({ api: "management", route: KEY_ROUTE, kind: "status", status: 400 });
  const settled = (revision: string) =>
    until(async () => {
      const body = await statusOf(d);
      return body.revision === revision ? body : undefined;
    });

  const refused = await settled(await run.layout.publish(files("refused-name")));
  await fetch(`${d.url}/hooks/sync/${WEBHOOK_TOKEN}`, { method: "POST" });
  await d.waitForLog((l) => l.msg === "pass finished" && l.trigger === "webhook");
  const remembered = run.simulator.requests.filter((r) => r.route === KEY_ROUTE).map((r) => r.status);
  await settled(await run.layout.publish({ "watches.yaml": WATCHES }));
  const back = await run.layout.publish(files("refused-name"));
  const synced = await until(async () => {
    const key = (await statusOf(d)).resources.find((r) => r.kind === "ApiKey");
    return key?.status === "Synced" || key?.lastError?.includes("not sent again") ? key : undefined;
  });

  expect(refused.resources.find((r) => r.kind === "ApiKey")).toMatchObject({ failure: "terminal" });
  expect(remembered.slice(-1)).toEqual([400]);
  expect(synced).toMatchObject({ status: "Synced" });
  expect(run.keyPatches().at(-1)?.body).toEqual({ name: "refused-name" });
  expect((await statusOf(d)).revision).toBe(back);
});
