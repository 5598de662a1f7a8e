import { describe, expect, it } from "vitest";
import type { DriftField } from "../../src/drift/compare.js";
import { driftOf } from "../../src/kinds/index.js";
import type { PlanInput } from "../../src/kinds/kind.js";
import type { Kind } from "../../src/manifests/manifest.js";
import { configOfSeries } from "../../src/platform/tile-config.js";

/**
 * Drift, as each kind's module compares (its observe.drift): what of a live object differs from what
 * its manifest states. Each test names the rule it checks.
 */

type Comparable = { kind: Kind; spec: Record<string, unknown> };
type Known = {
  /** A dashboard's tile ids, as its record holds them. */
  tileIds?: Record<string, string>;
  /** The server id of an endpoint by manifest name, as its record holds it. */
  endpointId?: (name: string) => string | undefined;
};

/** The drift of `live` against `manifest`, with what driftless recorded (`known`). */
function compare(manifest: Comparable, live: unknown, known: Known = {}): DriftField[] {
  const record = { kind: manifest.kind, name: "t", ...(known.tileIds ? { tileIds: known.tileIds } : {}) };
  const ref = (_kind: string, name: string) => {
    const id = known.endpointId?.(name);
    return id ? { state: "ready" as const, id } : { state: "waiting" as const, reason: "not created" };
  };
  const context = { now: new Date(), reassert: false, ref };
  // The specs here are partial (ids like "org-1"): the comparison reads only what they state.
  const input = { kind: manifest.kind, name: "t", spec: manifest.spec, record, context } as PlanInput;
  return driftOf(input, live);
}

const org = (spec: Record<string, unknown>) =>
  ({ kind: "Organization", spec: { organizationId: "org-1", ...spec } }) as Comparable;
const key = (spec: Record<string, unknown>) =>
  ({ kind: "ApiKey", spec: { organizationId: "org-1", keyId: "key-1", ...spec } }) as Comparable;
const pipe = (spec: Record<string, unknown>) =>
  ({
    kind: "DataPipe",
    spec: { organizationId: "org-1", serviceId: "svc-1", dataPipeId: "pipe-1", ...spec },
  }) as Comparable;
const series = { type: "time", aggFn: "count", where: "level:error" };
const tile = (extra: Record<string, unknown> = {}) => ({
  key: "errors",
  name: "Errors",
  x: 0,
  y: 0,
  w: 6,
  h: 4,
  series: [series],
  ...extra,
});
const dashboard = (spec: Record<string, unknown> = {}) =>
  ({ kind: "Dashboard", spec: { dashboardId: "d-1", name: "Ops", tiles: [tile()], ...spec } }) as Comparable;
const liveTile = (extra: Record<string, unknown> = {}) => ({
  id: "t-1",
  name: "Errors",
  x: 0,
  y: 0,
  w: 6,
  h: 4,
  series: [series],
  ...extra,
});

describe("compare: fields the manifest states", () => {
  it("rule: an equal live object has no drift, whatever else it carries", () => {
    expect(compare(org({ name: "Acme" }), { id: "org-1", name: "Acme", createdAt: "x" })).toEqual([]);
  });

  it("rule: a differing field is named with both values", () => {
    expect(compare(org({ name: "Acme" }), { name: "Acme (renamed)" })).toEqual([
      { path: "name", want: "Acme", have: "Acme (renamed)" },
    ]);
  });

  it("rule: a field the manifest does not state is not compared", () => {
    expect(compare(key({ name: "ci" }), { name: "ci", roles: ["developer"] })).toEqual([]);
  });

  it("rule: a field the answer does not carry is not compared (no false diff)", () => {
    expect(compare(key({ name: "ci", state: "enabled" }), { name: "ci" })).toEqual([]);
  });

  it("rule: nested objects compare member by member, with dotted paths", () => {
    const want = pipe({ settings: { streamingMaxInsertWaitMs: 500, replicas: 2 } });
    const have = { settings: { streamingMaxInsertWaitMs: 900, replicas: 2 } };
    expect(compare(want, have)).toEqual([
      { path: "settings.streamingMaxInsertWaitMs", want: 500, have: 900 },
    ]);
  });

  it("rule: ids that address the resource are never compared", () => {
    expect(compare(pipe({ name: "orders" }), { id: "other", name: "orders" })).toEqual([]);
  });
});

describe("compare: secrets", () => {
  it("rule: secret references and credential fields are never compared nor shown", () => {
    const want = pipe({
      source: {
        postgres: {
          host: "db",
          credentials: { username: "u", password: { fromEnv: "PG_PASSWORD" } },
        },
      },
    });
    const have = { source: { postgres: { host: "db", credentials: { username: "u", password: "other" } } } };
    expect(compare(want, have)).toEqual([]);
    const drift = compare(want, { source: { postgres: { host: "db2", credentials: { username: "v" } } } });
    expect(drift.map((d) => d.path)).toEqual([
      "source.postgres.host",
      "source.postgres.credentials.username",
    ]);
    expect(JSON.stringify(drift)).not.toContain("PG_PASSWORD");
  });
});

describe("compare: lists", () => {
  it("rule: an API key's roles compare as a set (the platform does not keep their order)", () => {
    expect(compare(key({ roles: ["admin", "developer"] }), { roles: ["developer", "admin"] })).toEqual([]);
    expect(compare(key({ roles: ["admin"] }), { roles: ["admin", "developer"] })).toEqual([
      { path: "roles", want: ["admin"], have: ["admin", "developer"] },
    ]);
  });

  it("rule: an ipAccessList is sent whole, so an entry added in the console is drift; order is not", () => {
    const want = key({ ipAccessList: [{ source: "10.0.0.0/8" }, { source: "1.2.3.4", description: "vpn" }] });
    const same = [
      { source: "1.2.3.4", description: "vpn" },
      { source: "10.0.0.0/8", description: "" },
    ];
    expect(compare(want, { ipAccessList: same })).toEqual([]);
    const added = [...same, { source: "0.0.0.0/0", description: "console" }];
    expect(compare(want, { ipAccessList: added }).map((d) => d.path)).toEqual(["ipAccessList"]);
  });

  it("rule: an organization's private endpoints need every desired entry; others are someone else's", () => {
    const want = org({ privateEndpoints: [{ id: "pe-1", description: "vpc" }] });
    const foreign = { id: "pe-9", description: "console" };
    expect(compare(want, { privateEndpoints: [foreign, { id: "pe-1", description: "vpc" }] })).toEqual([]);
    expect(compare(want, { privateEndpoints: [foreign] })).toEqual([
      { path: "privateEndpoints[pe-1]", want: { id: "pe-1", description: "vpc" }, have: null },
    ]);
    expect(compare(want, { privateEndpoints: [{ id: "pe-1", description: "edited" }] })).toEqual([
      { path: "privateEndpoints[pe-1].description", want: "vpc", have: "edited" },
    ]);
  });

  it("rule: an entry stated without a description matches a live one with any description", () => {
    const want = org({ privateEndpoints: [{ id: "pe-1" }] });
    expect(compare(want, { privateEndpoints: [{ id: "pe-1", description: "x" }] })).toEqual([]);
  });

  it("rule: a postgres pipe's table mappings need every desired mapping, in any order", () => {
    const mapping = { sourceSchemaName: "public", sourceTable: "orders", targetTable: "orders" };
    const other = { sourceSchemaName: "public", sourceTable: "users", targetTable: "users" };
    const want = pipe({ source: { postgres: { tableMappings: [mapping] } } });
    expect(compare(want, { source: { postgres: { tableMappings: [other, mapping] } } })).toEqual([]);
    expect(compare(want, { source: { postgres: { tableMappings: [other] } } })).toEqual([
      { path: "source.postgres.tableMappings[public.orders -> orders]", want: mapping, have: null },
    ]);
  });

  it("rule: a pipe's endpoint names compare as the ids driftless recorded for them", () => {
    const want = pipe({ source: { kafka: { brokers: "b:9092", reversePrivateEndpoints: ["msk"] } } });
    const endpointId = (name: string) => (name === "msk" ? "rpe-1" : undefined);
    const live = (ids: string[]) => ({
      source: { kafka: { brokers: "b:9092", reversePrivateEndpointIds: ids } },
    });
    expect(compare(want, live(["rpe-1"]), { endpointId })).toEqual([]);
    expect(compare(want, live(["rpe-2"]), { endpointId }).map((d) => d.path)).toEqual([
      "source.kafka.reversePrivateEndpointIds",
    ]);
    expect(compare(want, live(["rpe-2"]), {})).toEqual([]);
  });

  it("rule: other lists compare entry by entry, in order", () => {
    const want = pipe({ destination: { columns: [{ name: "a", type: "String" }] } });
    expect(compare(want, { destination: { columns: [{ name: "a", type: "UInt8" }] } })).toEqual([
      { path: "destination.columns[0].type", want: "String", have: "UInt8" },
    ]);
  });
});

describe("compare: values the platform spells its own way", () => {
  it('rule: an expiry compares as an instant, and "never" ("") as null', () => {
    expect(
      compare(key({ expireAt: "2030-01-01T00:00:00Z" }), { expireAt: "2030-01-01T00:00:00.000Z" }),
    ).toEqual([]);
    expect(compare(key({ expireAt: "" }), { expireAt: null })).toEqual([]);
    expect(compare(key({ expireAt: "" }), { expireAt: "2030-01-01T00:00:00Z" })).toEqual([
      { path: "expireAt", want: null, have: "2030-01-01T00:00:00Z" },
    ]);
  });
});

describe("compare: reverse private endpoints", () => {
  it("rule: the type's fields and description compare; the ids that address it do not", () => {
    const want: Comparable = {
      kind: "ReversePrivateEndpoint",
      spec: { organizationId: "o", serviceId: "s", description: "msk", type: "MSK_MULTI_VPC" },
    };
    expect(
      compare(want, { id: "rpe-1", description: "msk", type: "MSK_MULTI_VPC", status: "Ready" }),
    ).toEqual([]);
    expect(compare(want, { id: "rpe-1", description: "edited", type: "MSK_MULTI_VPC" })).toEqual([
      { path: "description", want: "msk", have: "edited" },
    ]);
  });
});

describe("compare: dashboards", () => {
  const tileIds = { errors: "t-1" };

  it("rule: tiles compare by the id driftless recorded for their key, series as series", () => {
    expect(compare(dashboard(), { name: "Ops", tiles: [liveTile()] }, { tileIds })).toEqual([]);
    expect(compare(dashboard(), { name: "Ops", tiles: [liveTile({ w: 12 })] }, { tileIds })).toEqual([
      { path: "tiles[errors].w", want: 6, have: 12 },
    ]);
  });

  it("rule: a series answered as config is equal when it means the same", () => {
    const config = { ...configOfSeries([series], undefined), granularity: "auto" };
    const { series: _s, ...place } = liveTile();
    expect(compare(dashboard(), { name: "Ops", tiles: [{ ...place, config }] }, { tileIds })).toEqual([]);
    const edited = { ...config, select: [{ aggFn: "count", where: "level:warn", whereLanguage: "lucene" }] };
    expect(compare(dashboard(), { name: "Ops", tiles: [{ ...place, config: edited }] }, { tileIds })).toEqual(
      [{ path: "tiles[errors].config.select[0].where", want: "level:error", have: "level:warn" }],
    );
  });

  it("rule: a tile deleted in the console, or one added there, is drift (a PUT replaces the dashboard)", () => {
    expect(compare(dashboard(), { name: "Ops", tiles: [] }, { tileIds })).toEqual([
      { path: "tiles[errors]", want: "(tile t-1)", have: null },
    ]);
    const extra = liveTile({ id: "t-9", name: "Console" });
    expect(compare(dashboard(), { name: "Ops", tiles: [liveTile(), extra] }, { tileIds })).toEqual([
      { path: "tiles[t-9]", want: null, have: '(tile t-9 "Console", added outside git)' },
    ]);
  });

  it("rule: a tile whose id is not known yet is not compared, nor are the live tiles it may be", () => {
    expect(compare(dashboard(), { name: "Ops", tiles: [liveTile({ id: "t-5", w: 1 })] })).toEqual([]);
  });

  it("rule: tags compare as a set", () => {
    const want = dashboard({ tags: ["a", "b"] });
    expect(compare(want, { name: "Ops", tags: ["b", "a"], tiles: [liveTile()] }, { tileIds })).toEqual([]);
    expect(compare(want, { name: "Ops", tags: ["a"], tiles: [liveTile()] }, { tileIds })).toEqual([
      { path: "tags", want: ["a", "b"], have: ["a"] },
    ]);
  });
});
