import { sameId } from "../manifests/identity.js";
import { tableMappingKey } from "../manifests/kinds/data-pipe.js";
import type { Kind, ManifestOf } from "../manifests/manifest.js";
import { isSecret } from "../plan/secret.js";
import { isPlainObject, member, omit } from "../plan/values.js";
import { configOfSeries, type SeriesInput } from "../platform/tile-config.js";
import { unmatched } from "./set-match.js";

/**
 * Drift, as a pure function: what of a live object differs from what its manifest states. Only the
 * fields the manifest states are compared; a field the answer does not carry is not compared (an
 * answer that leaves a field out says nothing of it, and a false diff is worse than none); secrets are
 * never compared (answers do not carry them, and their values must not be shown). The values are
 * normalized as the platform keeps them: lists whose order the platform does not keep compare as
 * sets, a three-way list (an organization's privateEndpoints, a postgres pipe's tableMappings) only
 * needs the desired entries to be there (the others are someone else's), a dashboard tile sent as
 * `series` and answered as `config` compares through the platform's own translation.
 */

/** One field that differs: its path (as `plan` prints paths), what git states and what is live. */
export type DriftField = { path: string; want: unknown; have: unknown };

/** What a comparison of one resource knows beyond its manifest. */
export type CompareContext = {
  /** A Dashboard's tile ids by tile key, as driftless last recorded them. */
  tileIds?: Readonly<Record<string, string>>;
  /** The server id of a ReversePrivateEndpoint by manifest name, when known (a pipe's endpoint names). */
  endpointId?: (name: string) => string | undefined;
};

/** The manifest's spec of one kind, secrets still as references (they are never compared). */
export type Comparable = { [K in Kind]: { kind: K; spec: ManifestOf<K>["spec"] } }[Kind];

/** Credentials fields: never compared, whatever form they take. */
const SECRET_FIELDS = new Set(["password", "secretKey", "accessKeyId", "connectionString"]);

/** How the lists of one kind compare, by dotted path (list entries have no path segment). */
type ListRule = { kind: "set" } | { kind: "contains"; key: (entry: unknown) => string };

type Rules = Readonly<Record<string, ListRule>>;

const byId = (entry: unknown) => String(member(entry, "id"));
const byMapping = (entry: unknown) =>
  isPlainObject(entry)
    ? tableMappingKey({
        sourceSchemaName: String(entry.sourceSchemaName),
        sourceTable: String(entry.sourceTable),
        targetTable: String(entry.targetTable),
      })
    : String(entry);

const RULES: { [K in Kind]?: Rules } = {
  Organization: { privateEndpoints: { kind: "contains", key: byId } },
  // A PATCH sends the whole ipAccessList: an entry added in the console is drift.
  ApiKey: { roles: { kind: "set" }, ipAccessList: { kind: "set" } },
  DataPipe: {
    "source.kafka.reversePrivateEndpointIds": { kind: "set" },
    "source.postgres.tableMappings": { kind: "contains", key: byMapping },
  },
  Dashboard: { tags: { kind: "set" } },
};

/** The fields of `live` that differ from what `manifest` states; [] when it is equal. */
export function compare(manifest: Comparable, live: unknown, context: CompareContext = {}): DriftField[] {
  switch (manifest.kind) {
    case "Organization":
      return walk(omit(manifest.spec, ["organizationId"]), live, RULES.Organization);
    case "ApiKey":
      return walk(apiKeyWant(manifest.spec), live, RULES.ApiKey);
    case "DataPipe":
      return walk(pipeWant(manifest.spec, context), live, RULES.DataPipe);
    case "ReversePrivateEndpoint":
      return walk(omit(manifest.spec, ["organizationId", "serviceId", "id"]), live);
    case "Dashboard":
      return compareDashboard(manifest.spec, live, context);
    default:
      return [];
  }
}

/** An API key as the platform keeps it: "never expires" (`""`) is null there. */
function apiKeyWant(spec: ManifestOf<"ApiKey">["spec"]): Record<string, unknown> {
  const want: Record<string, unknown> = omit(spec, ["organizationId", "keyId", "allowLockout"]);
  if (spec.expireAt === "") want.expireAt = null;
  return want;
}

/** A pipe as the platform keeps it: its endpoints named in the manifest are ids there. */
function pipeWant(spec: ManifestOf<"DataPipe">["spec"], context: CompareContext): Record<string, unknown> {
  const want: Record<string, unknown> = omit(spec, ["organizationId", "serviceId", "dataPipeId"]);
  const kafka = spec.source?.kafka;
  if (!kafka?.reversePrivateEndpoints) return want;
  const { reversePrivateEndpoints: names, ...fields } = kafka;
  const ids = [...(kafka.reversePrivateEndpointIds ?? [])];
  for (const name of names) {
    const id = context.endpointId?.(name);
    // An endpoint not created yet is not compared: the pipe is not applied with it either.
    if (id === undefined)
      return { ...want, source: { ...spec.source, kafka: omit(fields, ["reversePrivateEndpointIds"]) } };
    if (!ids.some((known) => sameId(known, id))) ids.push(id);
  }
  return { ...want, source: { ...spec.source, kafka: { ...fields, reversePrivateEndpointIds: ids } } };
}

/** The differing fields of `have` against what `want` states, from `path` down. */
function walk(want: unknown, have: unknown, rules: Rules = {}, path = ""): DriftField[] {
  if (want === undefined || have === undefined || isSecretValue(want)) return [];
  if (isPlainObject(want)) {
    if (!isPlainObject(have)) return [{ path: path || "(object)", want, have }];
    const fields: DriftField[] = [];
    for (const [key, value] of Object.entries(want)) {
      if (SECRET_FIELDS.has(key)) continue;
      fields.push(...walk(value, have[key], rules, path ? `${path}.${key}` : key));
    }
    return fields;
  }
  if (Array.isArray(want)) return compareList(want, have, rules, path);
  return sameScalar(want, have, path) ? [] : [{ path, want, have }];
}

/** A list: as a set, as the entries a three-way list must contain, or entry by entry in order. */
function compareList(want: unknown[], have: unknown, rules: Rules, path: string): DriftField[] {
  if (!Array.isArray(have)) return [{ path, want, have }];
  const rule = rules[path];
  if (rule?.kind === "contains") return containsEntries(want, have, rule.key, rules, path);
  if (rule?.kind === "set") return sameSet(want, have, rules, path) ? [] : [{ path, want, have }];
  if (want.length !== have.length) return [{ path, want, have }];
  return want.flatMap((entry, index) => walk(entry, have[index], rules, `${path}[${index}]`));
}

/**
 * Whether the two lists hold the same entries in any order, an entry matching as walk judges it: keyed
 * (set-match.ts), in linear time. A list whose entries hold lists with rules of their own is compared
 * entry with entry (no kind has one: the keyed comparison does not know those rules).
 */
function sameSet(want: unknown[], have: unknown[], rules: Rules, path: string): boolean {
  const nested = Object.keys(rules).some((p) => p.startsWith(`${path}.`));
  if (!nested) {
    const { missing, extra } = unmatched(want, have, {
      field: (key) => SECRET_FIELDS.has(key),
      value: isSecretValue,
    });
    return missing === 0 && extra === 0;
  }
  const matches = (w: unknown, h: unknown) => walk(w, h, rules, path).length === 0;
  return (
    want.every((w) => have.some((h) => matches(w, h))) && have.every((h) => want.some((w) => matches(w, h)))
  );
}

/** Each desired entry is live, with what it states; entries only live are someone else's. */
function containsEntries(
  want: unknown[],
  have: unknown[],
  key: (entry: unknown) => string,
  rules: Rules,
  path: string,
): DriftField[] {
  const live = new Map(have.map((entry) => [key(entry), entry]));
  return want.flatMap((entry) => {
    const at = `${path}[${key(entry)}]`;
    const found = live.get(key(entry));
    if (found === undefined) return [{ path: at, want: entry, have: null }];
    return walk(entry, found, rules, at);
  });
}

/** Scalars; an expiry compares as the instant it names, whatever its spelling. */
function sameScalar(want: unknown, have: unknown, path: string): boolean {
  if (want === have) return true;
  if (path === "expireAt" && typeof want === "string" && typeof have === "string") {
    const [a, b] = [Date.parse(want), Date.parse(have)];
    return Number.isFinite(a) && a === b;
  }
  return false;
}

const isSecretValue = (value: unknown): boolean =>
  isSecret(value) ||
  (isPlainObject(value) &&
    Object.keys(value).length === 1 &&
    (typeof value.fromEnv === "string" || typeof value.fromFile === "string"));

type DashboardSpec = ManifestOf<"Dashboard">["spec"];
type TileSpec = DashboardSpec["tiles"][number];

/**
 * A dashboard: its name and tags, and each tile by its id. A PUT replaces the whole dashboard, so a
 * tile added in the console is drift too (the next write removes it). A tile whose id is not known yet
 * is not compared, and then neither are the live tiles it may be.
 */
function compareDashboard(spec: DashboardSpec, live: unknown, context: CompareContext): DriftField[] {
  const fields = walk(omit(spec, ["dashboardId", "tiles"]), live, RULES.Dashboard);
  const liveTiles = member(live, "tiles");
  if (!Array.isArray(liveTiles)) return fields;
  const byId = new Map(liveTiles.filter(isPlainObject).map((tile) => [String(tile.id), tile]));
  let allKnown = true;
  for (const tile of spec.tiles) {
    const id = tile.id ?? context.tileIds?.[tile.key];
    if (id === undefined) {
      allKnown = false;
      continue;
    }
    const found = byId.get(id);
    byId.delete(id);
    const path = `tiles[${tile.key}]`;
    if (!found) fields.push({ path, want: `(tile ${id})`, have: null });
    else fields.push(...compareTile(tile, found, path));
  }
  if (!allKnown) return fields;
  for (const [id, tile] of byId) {
    fields.push({ path: `tiles[${id}]`, want: null, have: `(tile ${id}${nameOf(tile)}, added outside git)` });
  }
  return fields;
}

const nameOf = (tile: Record<string, unknown>) => (typeof tile.name === "string" ? ` "${tile.name}"` : "");

/** A tile: its place and name, and its series as the live tile keeps them (series, or config). */
function compareTile(tile: TileSpec, live: Record<string, unknown>, path: string): DriftField[] {
  const { series, asRatio, ...place } = omit(tile, ["key", "id"]);
  const fields = walk(place, live, {}, path);
  if (Array.isArray(live.series)) {
    fields.push(...walk(series, live.series, {}, `${path}.series`));
    fields.push(...walk(asRatio, live.asRatio, {}, `${path}.asRatio`));
    return fields;
  }
  if (!isPlainObject(live.config)) return fields;
  const want = configOfSeries(series as readonly SeriesInput[], asRatio);
  fields.push(...walk(want, live.config, {}, `${path}.config`));
  return fields;
}
