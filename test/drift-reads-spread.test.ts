import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, expect, it } from "vitest";
import { ReadRounds } from "../src/daemon/drift-reads.js";
import { periodOf } from "../src/daemon/schedules.js";
import { loadRevision } from "../src/manifests/load.js";
import type { PlatformClient } from "../src/platform/client.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createMetrics } from "../src/telemetry/metrics.js";

/**
 * A read round spreads its reads evenly over the time it is given (the daemon gives most of the poll
 * period): the reads never take the rate budget's window ahead of a change from git all at once.
 */

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

async function fiveKeys() {
  root = await mkdtemp(join(tmpdir(), "driftless-spread-"));
  for (let i = 0; i < 5; i++) {
    await writeFile(
      join(root, `key-${i}.yaml`),
      `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: key-${i}
spec:
  organizationId: 00000000-0000-4000-8000-000000000001
  keyId: 00000000-0000-4000-8000-00000000010${i}
  name: key ${i}
`,
    );
  }
  return (await loadRevision(root)).manifests.map((manifest) => ({ manifest, lastAppliedAt: undefined }));
}

/** A platform whose reads answer at once, noting the virtual time each was sent at. */
function virtualWorld() {
  let now = 0;
  const sentAt: number[] = [];
  const platform: PlatformClient = {
    async call(_name, params) {
      sentAt.push(now);
      const { keyId } = params as { keyId: string };
      return { result: { id: keyId, name: `key ${keyId.at(-1)}`, roles: [], state: "enabled" } } as never;
    },
  };
  const sleep = async (ms: number) => {
    now += ms;
  };
  return { platform, sentAt, sleep, monotonic: () => now };
}

const reader = (world: ReturnType<typeof virtualWorld>, spreadMs?: number) =>
  new ReadRounds({
    platform: world.platform,
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
    logger: createLogger("silent"),
    records: async () => ({}),
    concurrency: 1,
    sleep: world.sleep,
    monotonic: world.monotonic,
    ...(spreadMs === undefined ? {} : { spreadMs }),
  });

it("starts a round's reads evenly over the time it is given", async () => {
  const world = virtualWorld();
  await reader(world, 48_000).round(await fiveKeys(), () => true);
  expect(world.sentAt).toEqual([0, 9_600, 19_200, 28_800, 38_400]);
});

it("sends a round's reads at once when given no time (in-process tests, a schedule that is off)", async () => {
  const world = virtualWorld();
  await reader(world).round(await fiveKeys(), () => true);
  expect(world.sentAt).toEqual([0, 0, 0, 0, 0]);
});

it("knows the poll period of a cron schedule, and none of one that is off", () => {
  expect(periodOf("* * * * *")).toBe(60_000);
  expect(periodOf("*/30 * * * * *")).toBe(30_000);
  expect(periodOf("off")).toBeUndefined();
});
