import { cp } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, describe, expect, it } from "vitest";
import { createPlatform } from "../src/commands/platform.js";
import { loadRevision } from "../src/manifests/load.js";
import { createRead } from "../src/platform/client.js";
import { contextOfRecords, readAndCompare } from "../src/reconcile/plan-drift.js";
import { resourceId } from "../src/resources.js";
import { createLogger } from "../src/telemetry/logger.js";
import { type EngineWorld, startEngineWorld } from "./helpers/engine-world.js";

/**
 * No false diff: once examples/ is applied to the simulator's published contract (which answers in its
 * own shapes: tiles as config, defaults filled in, fields driftless never sent), a read of every
 * managed object finds it equal to its manifest.
 */

const examples = join(import.meta.dirname, "..", "examples");
let world: EngineWorld | undefined;
afterEach(async () => {
  await world?.close();
  world = undefined;
});

describe("reads after an apply of examples/ against the full contract", () => {
  it("find every live object equal to its manifest", async () => {
    const unlimited = { requests: 10_000, windowMs: 1_000 };
    const w = await startEngineWorld({
      simulator: { contract: "full", rateLimit: { management: false, observability: false } },
      platform: { budgets: { management: unlimited, observability: unlimited } },
    });
    world = w;
    await cp(examples, w.manifests, { recursive: true, filter: (source) => !source.includes("secrets") });
    await cp(join(examples, "secrets"), w.secretsDir, { recursive: true });
    w.env.EXAMPLE_KAFKA_PASSWORD = "demo-kafka-password";
    const applied = await w.apply();
    expect(applied.statuses.filter((s) => s.status !== "Synced")).toEqual([]);

    const state = await w.state();
    const platform = await createPlatform(w.config, { logger: createLogger("silent") });
    const drift: Record<string, unknown> = {};
    let read = 0;
    try {
      const context = contextOfRecords(state.resources, new Date());
      for (const manifest of (await loadRevision(w.manifests)).manifests) {
        const record = state.resources[resourceId(manifest)];
        const found = await readAndCompare(createRead(platform.client), manifest, record, context);
        if (!found) continue;
        read++;
        if (found.live === undefined || found.fields.length > 0) drift[resourceId(manifest)] = found.fields;
      }
    } finally {
      await platform.close();
    }
    expect(drift).toEqual({});
    expect(read).toBeGreaterThanOrEqual(8);
  });
});
