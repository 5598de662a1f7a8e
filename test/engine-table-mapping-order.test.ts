import { afterEach, describe, expect, it } from "vitest";
import type { TableMappingOrder } from "../src/simulator/index.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/**
 * A changed postgres table mapping reaches its end state whatever order the platform applies a
 * PATCH's tableMappingsToAdd and tableMappingsToRemove in (the published contract does not say).
 */

const pipe = (
  excluded: string,
) => `${header("DataPipe", "customers-from-postgres")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.postgresPipeId}
  source:
    postgres:
      tableMappings:
        - {sourceSchemaName: public, sourceTable: customers, targetTable: customers}
        - {sourceSchemaName: public, sourceTable: addresses, targetTable: customer_addresses, excludedColumns: [${excluded}]}
`;

const addresses = { sourceSchemaName: "public", sourceTable: "addresses", targetTable: "customer_addresses" };

let world: EngineWorld | undefined;
afterEach(() => world?.close());

describe.each<TableMappingOrder>(["remove-first", "add-first"])("a platform that applies %s", (order) => {
  it("ends with the changed mapping, removed in one PATCH and added in the next", async () => {
    world = await startEngineWorld({ simulator: { tableMappingOrder: order } });
    await world.write("pipe.yaml", pipe("street"));
    await world.apply();
    world.sim.clearRequests();
    await world.write("pipe.yaml", pipe("street, city"));

    const result = await world.apply();
    const again = await world.apply();

    const live = world.sim.state.pipes.find((p) => p.id === ids.postgresPipeId)?.source.postgres
      ?.tableMappings;
    expect(result.statuses.map((s) => s.status)).toEqual(["Synced"]);
    expect(live).toContainEqual({ ...addresses, excludedColumns: ["street", "city"] });
    expect(world.writes().map((r) => r.body)).toEqual([
      { source: { postgres: { tableMappingsToRemove: [addresses] } } },
      {
        source: { postgres: { tableMappingsToAdd: [{ ...addresses, excludedColumns: ["street", "city"] }] } },
      },
    ]);
    expect(again.statuses.map((s) => s.status)).toEqual(["Synced"]);
  });
});
