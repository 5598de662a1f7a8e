import { createHash } from "node:crypto";
import type { ResourceRecord, State } from "../../src/state/store.js";

/**
 * A state of `count` DataPipe records shaped like the reconciler's: the applied spec (a secret as a
 * salted hash), the platform's last result, ids that do not compress. For measuring the state's size.
 */
export function realisticState(count: number): State {
  const resources: Record<string, ResourceRecord> = {};
  for (let i = 0; i < count; i++) {
    const name = `pipe-${i}`;
    resources[`DataPipe/${name}`] = pipe(i, name);
  }
  return { version: 1, salt: "5f0c3a9d2b7e41c8a6f1d3e5b7c9a1e3", resources };
}

const ORGANIZATION = "9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f";
const SERVICE = "2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7";

/** A deterministic v4-shaped uuid per seed, as random-looking (and as incompressible) as a real one. */
function uuid(seed: string): string {
  const h = createHash("sha256").update(seed).digest("hex");
  return `${h.slice(0, 8)}-${h.slice(8, 12)}-4${h.slice(13, 16)}-a${h.slice(17, 20)}-${h.slice(20, 32)}`;
}

function pipe(i: number, name: string): ResourceRecord {
  const id = uuid(`pipe-${i}`);
  const columns = Array.from({ length: 8 }, (_, c) => ({
    name: `col_${c}_${i % 50}`,
    type: ["String", "UInt64", "DateTime64(3)", "Float64"][c % 4],
  }));
  const fieldMappings = columns.map((col, c) => ({
    sourceField: `field${c}_${i % 50}`,
    destinationField: col.name,
  }));
  const kafka = {
    brokers: `b-1.kafka-${i % 20}.example.internal:9092,b-2.kafka-${i % 20}.example.internal:9092`,
    topics: `orders-${i}`,
    consumerGroup: `driftless-${i}`,
  };
  const settings = { streaming_max_insert_wait_ms: 5000, engine_max_threads: 4 };
  return {
    kind: "DataPipe",
    name,
    applied: {
      organizationId: ORGANIZATION,
      serviceId: SERVICE,
      dataPipeId: id,
      name,
      source: { kafka: { ...kafka, password: `sha256:${createHash("sha256").update(name).digest("hex")}` } },
      destination: { columns },
      fieldMappings,
      settings,
    },
    appliedAt: new Date(Date.UTC(2026, 10, 23) - i * 1000).toISOString(),
    observed: {
      id,
      serviceId: SERVICE,
      name,
      state: "Running",
      scaling: { replicas: 2, concurrency: 1, replicaCpuMillicores: 500, replicaMemoryGb: 2 },
      source: { kafka: { ...kafka, reversePrivateEndpointIds: [] } },
      destination: {
        database: "default",
        table: `orders_${i}`,
        managedTable: true,
        tableDefinition: { sortingKey: ["col_0"], partitionBy: "", primaryKey: "" },
        columns,
      },
      fieldMappings,
      settings,
      createdAt: "2026-11-12T08:00:00.000Z",
      updatedAt: new Date(Date.UTC(2026, 10, 23) - i * 1000).toISOString(),
    },
  };
}
