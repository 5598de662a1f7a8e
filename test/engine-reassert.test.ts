import { Registry } from "prom-client";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createPlatform } from "../src/commands/platform.js";
import { createReconciler } from "../src/reconcile/engine.js";
import { resultOf } from "../src/resources.js";
import { createFileStore } from "../src/state/file-store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/** Re-assertion heals changes made behind git's back; pass metrics when the caller asks for them. */

const pipe = `${header("DataPipe", "clicks")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kinesisPipeId}
  name: clicks
  source:
    kinesis:
      iamRole: arn:aws:iam::1:role/clicks
      accessKey:
        accessKeyId: {fromEnv: CLICKS_ID}
        secretKey: {fromEnv: CLICKS_SECRET}
`;

describe("re-assertion", () => {
  let world: EngineWorld;
  beforeEach(async () => {
    world = await startEngineWorld();
    world.env.CLICKS_ID = "id-1";
    world.env.CLICKS_SECRET = "secret-1";
    await world.write("pipe.yaml", pipe);
  });
  afterEach(() => world.close());

  it("re-sends unchanged fields to heal a change made in the console, but not the unchanged secrets", async () => {
    await world.apply();
    const live = world.sim.state.pipes.find((p) => p.id === ids.kinesisPipeId);
    if (live) live.name = "renamed in the console";
    world.sim.clearRequests();

    const plain = await world.apply();
    const reasserted = await world.apply({ reassert: true });

    expect(plain.ok).toBe(true);
    expect(world.writes().map((r) => r.body)).toEqual([
      { name: "clicks", source: { kinesis: { iamRole: "arn:aws:iam::1:role/clicks" } } },
    ]);
    expect(reasserted.ok).toBe(true);
    expect(world.sim.state.pipes.find((p) => p.id === ids.kinesisPipeId)?.name).toBe("clicks");
  });

  it("logs the fields it re-sent, never an empty list nor a secret's value", async () => {
    await world.apply();
    world.logs.length = 0;

    await world.apply({ reassert: true });

    const applied = world.logs.map((line) => JSON.parse(line)).filter((l) => l.msg === "resource applied");
    expect(applied).toEqual([
      expect.objectContaining({ reasserted: true, fields: ["name", "source.kinesis.iamRole"] }),
    ]);
    expect(world.logs.join("")).not.toContain("secret-1");
  });

  it("re-sends only the resources a pass is told to heal, as a re-assertion would", async () => {
    const events = `${header("DataPipe", "events")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.objectStoragePipeId}
  name: events
`;
    await world.write("events.yaml", events);
    await world.apply();
    world.sim.clearRequests();

    const healed = await world.apply({ trigger: "drift", heal: ["DataPipe/clicks"] });

    expect(healed.ok).toBe(true);
    expect(world.writes().map((r) => r.path)).toEqual([expect.stringContaining(ids.kinesisPipeId)]);
  });

  it("sends nothing for a resource the pass is told to hold, and reports the status it was given", async () => {
    world.sim.clearRequests();
    const held = resultOf({ kind: "DataPipe", name: "clicks" }, "platform-error", { message: "503 earlier" });

    const result = await world.apply({
      trigger: "retry",
      hold: (id) => (id === "DataPipe/clicks" ? held : undefined),
    });

    expect(world.writes()).toEqual([]);
    expect(result.statuses).toEqual([held]);
  });

  it("records pass metrics when given the Metrics object", async () => {
    const registry = new Registry();
    const metrics = createMetrics(registry, { defaultMetrics: false });
    const logger = createLogger("silent");
    const store = createFileStore(world.stateDir);
    const platform = await createPlatform(world.config, { logger });
    const reconciler = createReconciler({
      manifests: world.manifests,
      store,
      send: platform.send,
      secrets: { env: world.env, secretsDir: world.secretsDir },
      logger,
      metrics,
    });

    await reconciler.pass({ trigger: "cli" });
    await platform.close();
    await store.close();

    const text = await registry.metrics();
    expect(text).toContain('driftless_resources{kind="DataPipe",status="Synced"} 1');
    expect(text).toContain('driftless_reconcile_total{result="success"} 1');
    expect(text).toMatch(/driftless_last_success_timestamp_seconds \d/);
  });
});
