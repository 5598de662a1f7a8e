import { Registry } from "prom-client";
import { expect, it } from "vitest";
import { type ResourceStatus, resultOf } from "../src/resources.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { PassMetrics } from "../src/telemetry/pass-metrics.js";

it('counts manifests of unknown kinds under one kind="Invalid" series, not one series per typo', async () => {
  const registry = new Registry();
  const passMetrics = new PassMetrics(createMetrics(registry, { defaultMetrics: false }));
  const invalid = (kind: string): ResourceStatus => resultOf({ kind, name: "x" }, "invalid");

  passMetrics.recordStatuses([invalid("Dashbord"), invalid("Organisation"), invalid("x".repeat(500))]);

  const text = await registry.metrics();
  const resources = text.split("\n").filter((line) => line.startsWith("driftless_resources{"));
  expect(resources.filter((line) => /Dashbord|Organisation|xxxx/.test(line))).toEqual([]);
  expect(resources).toContain('driftless_resources{kind="Invalid",status="Invalid"} 3');
});

it("keeps a known kind's Invalid manifests under their own kind", async () => {
  const registry = new Registry();
  const passMetrics = new PassMetrics(createMetrics(registry, { defaultMetrics: false }));

  passMetrics.recordStatuses([resultOf({ kind: "Dashboard", name: "x" }, "invalid")]);

  expect(await registry.metrics()).toContain('driftless_resources{kind="Dashboard",status="Invalid"} 1');
});

it("counts Failed resources as transient or terminal in driftless_resources_failed", async () => {
  const registry = new Registry();
  const passMetrics = new PassMetrics(createMetrics(registry, { defaultMetrics: false }));

  passMetrics.recordStatuses([
    resultOf({ kind: "ApiKey", name: "a" }, "refused-by-platform"),
    resultOf({ kind: "ApiKey", name: "b" }, "platform-error"),
    resultOf({ kind: "ApiKey", name: "c" }, "save-failed"),
  ]);

  const text = await registry.metrics();
  expect(text).toContain('driftless_resources_failed{kind="ApiKey",failure="terminal"} 1');
  expect(text).toContain('driftless_resources_failed{kind="ApiKey",failure="transient"} 2');
  expect(text).toContain('driftless_resources_failed{kind="Dashboard",failure="terminal"} 0');
});
