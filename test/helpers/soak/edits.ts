import {
  COLLECTION_OF,
  type Collection,
  CREATED_KINDS,
  type CreatedKind,
  created,
  current,
  endpoint,
  liveCreated,
  liveEndpoints,
  liveTiles,
  render,
  tile,
  WATCHED_TILE,
  type World,
} from "./world.js";

/**
 * The edits a team makes to the manifests between two git-sync revisions, drawn at random. A rename is
 * made the way the documentation says (an endpoint with the previous-name annotation, or by its spec.id),
 * and only once the state holds the record under the current name: renaming again before any pass saw
 * the first rename is a user's mistake the documentation does not cover, not a fault of driftless.
 */

/** What the last load of the state showed: the records by `Kind/name`. */
export type StateFacts = {
  records: Record<
    string,
    {
      serverId?: string;
      tileIds?: Record<string, string>;
      intent?: unknown;
      deletionPolicy?: string;
      unmanagedSince?: string;
    }
  >;
};

export type Random = () => number;
export const pick = <T>(random: Random, items: readonly T[]): T | undefined =>
  items[Math.floor(random() * items.length)];
export const between = (random: Random, low: number, high: number) =>
  low + Math.floor(random() * (high - low + 1));

type Edit = (world: World, random: Random, facts: StateFacts) => string | undefined;

const KIND_OF: Record<Exclude<Collection, "endpoints">, CreatedKind> = {
  keys: "ApiKey",
  pipes: "DataPipe",
  dashboards: "Dashboard",
};

/**
 * Adds a manifest without an id whose object lands in `collection` (a key, pipe or dashboard only when
 * the platform creates them): driftless must create it. One in five is annotated orphan.
 */
export function addToCreate(world: World, random: Random, collection: Collection): string {
  const orphan = random() < 0.2;
  const policy = orphan ? " (deletion policy orphan)" : "";
  if (collection === "endpoints") {
    const added = endpoint(world.seed, ++world.counter, orphan);
    world.endpoints.push(added);
    return `endpoint ${current(added.names)} added${policy}`;
  }
  const added = created(world.seed, KIND_OF[collection], ++world.counter, orphan);
  world.created.push(added);
  return `${added.kind} ${added.name} added, no id${policy}`;
}

const TABLES = ["customers", "addresses", "orders", "invoices", "refunds"];

const EDITS: Record<string, Edit> = {
  keyTitle(world) {
    world.keyTitle = `ci deployer ${++world.counter}`;
    return `key title "${world.keyTitle}"`;
  },
  keyRename(world, _random, facts) {
    if (!facts.records[`ApiKey/${current(world.keyNames)}`]) return undefined;
    world.keyNames.push(`ci-deployer-${++world.counter}`);
    return `ApiKey renamed to ${current(world.keyNames)}`;
  },
  orgName(world) {
    world.orgName = `Acme Analytics ${++world.counter}`;
    return `organization name "${world.orgName}"`;
  },
  orgEndpoints(world, random) {
    if (world.orgEndpoints.length > 0 && random() < 0.5) {
      const gone = pick(random, world.orgEndpoints) as number;
      world.orgEndpoints = world.orgEndpoints.filter((n) => n !== gone);
      return `organization private endpoint vpce-soak-${gone} removed`;
    }
    world.orgEndpoints.push(++world.counter);
    return `organization private endpoint vpce-soak-${world.counter} added`;
  },
  dashboardTitle(world) {
    world.dashboardTitle = `Platform overview ${++world.counter}`;
    return `dashboard title "${world.dashboardTitle}"`;
  },
  dashboardRename(world, _random, facts) {
    if (!facts.records[`Dashboard/${current(world.dashboardNames)}`]) return undefined;
    world.dashboardNames.push(`platform-overview-${++world.counter}`);
    return `Dashboard renamed to ${current(world.dashboardNames)}`;
  },
  tileMove(world, random) {
    const t = pick(random, liveTiles(world));
    if (!t) return undefined;
    Object.assign(t, { x: between(random, 0, 18), y: between(random, 0, 12), w: between(random, 1, 6) });
    t.h = between(random, 1, 4);
    t.where = `kind:t${t.number}v${++world.counter}`;
    return `tile ${t.name} moved to ${t.x},${t.y} (${t.w}x${t.h}), where ${t.where}`;
  },
  tileAdd(world, random) {
    const added = tile(++world.counter, { x: between(random, 0, 18), y: between(random, 0, 12) });
    world.tiles.push(added);
    return `tile ${added.name} added`;
  },
  tileRemove(world, random) {
    const t = pick(
      random,
      liveTiles(world).filter((x) => x.number !== WATCHED_TILE),
    );
    if (!t) return undefined;
    t.removed = true;
    return `tile ${t.name} removed`;
  },
  tileKeyRename(world, random) {
    const t = pick(random, liveTiles(world));
    if (!t) return undefined;
    t.keys.push(`tile-${t.number}-k${++world.counter}`);
    return `tile ${t.name} key renamed to ${current(t.keys)}`;
  },
  tileDropsId(world, random, facts) {
    // An adopted tile may stop stating its id once the state holds it under its current key.
    const record = facts.records[`Dashboard/${current(world.dashboardNames)}`];
    const t = pick(
      random,
      liveTiles(world).filter((x) => x.id && record?.tileIds?.[current(x.keys)] === x.id),
    );
    if (!t) return undefined;
    t.id = undefined;
    return `tile ${t.name} no longer states its id`;
  },
  endpointAdd(world, random) {
    if (liveEndpoints(world).length >= 6 && random() < 0.8) return undefined;
    return addToCreate(world, random, "endpoints");
  },
  endpointRename(world, random, facts) {
    const renamable = liveEndpoints(world).filter(
      (e) =>
        facts.records[`ReversePrivateEndpoint/${current(e.names)}`] &&
        e.names.slice(0, -1).every((old) => !facts.records[`ReversePrivateEndpoint/${old}`]),
    );
    const e = pick(random, renamable);
    if (!e) return undefined;
    e.names.push(`soak-endpoint-${e.number}-r${++world.counter}`);
    // An adopted endpoint is known by its spec.id: the annotation is then optional.
    e.annotated = !e.adoptedId || random() < 0.5;
    return `endpoint ${e.names[e.names.length - 2]} renamed to ${current(e.names)}${e.annotated ? "" : " (by spec.id)"}`;
  },
  endpointRemove(world, random) {
    const e = pick(
      random,
      liveEndpoints(world).filter((x) => x !== world.endpoints[0]),
    );
    if (!e) return undefined;
    e.removed = true;
    return `endpoint ${current(e.names)} removed`;
  },
  createdAdd(world, random) {
    if (!world.creates || (liveCreated(world).length >= 6 && random() < 0.8)) return undefined;
    const kind = pick(random, CREATED_KINDS) as CreatedKind;
    return addToCreate(world, random, COLLECTION_OF[kind]);
  },
  createdRemove(world, random) {
    const c = pick(random, liveCreated(world));
    if (!c) return undefined;
    c.removed = true;
    return `${c.kind} ${c.name} removed`;
  },
  createdChange(world, random) {
    const c = pick(random, liveCreated(world));
    if (!c) return undefined;
    c.detail += 1;
    return `${c.kind} ${c.name} changed (detail ${c.detail})`;
  },
  kafkaSetting(world, random) {
    world.kafkaWaitMs = between(random, 5, 50) * 100;
    return `kafka pipe streaming_max_insert_wait_ms ${world.kafkaWaitMs}`;
  },
  postgresBatch(world, random) {
    world.postgresBatch = between(random, 1, 100) * 1000;
    return `postgres pipe pullBatchSize ${world.postgresBatch}`;
  },
  postgresTables(world, random) {
    const table = pick(random, TABLES) as string;
    if (world.postgresTables.includes(table)) {
      world.postgresTables = world.postgresTables.filter((t) => t !== table);
      return `postgres mapping ${table} removed`;
    }
    world.postgresTables.push(table);
    return `postgres mapping ${table} added`;
  },
};

/**
 * Endpoints, keys, pipes and dashboards come and go, and manifests are renamed, more often than the
 * rest: a create is the request never repeated blindly, a delete the one the guard counts, and a rename
 * moves a record within the state.
 */
const EDIT_DRAWS = [
  ...Object.keys(EDITS),
  ...["endpointAdd", "endpointAdd", "endpointRemove", "endpointRename", "endpointRename", "endpointRename"],
  ...["createdAdd", "createdAdd", "createdRemove"],
  ...["dashboardRename", "keyRename"],
];

const BREAKABLE = ["keys/api-key.yaml", "dashboards/overview.yaml", "pipes/postgres.yaml"];

/**
 * One to three edits of `world` (an edit that does not apply now is skipped and said so), and now and
 * then a file left broken until the next edit. Returns what was done, for the step list.
 */
export function editWorld(world: World, random: Random, facts: StateFacts): string[] {
  const done: string[] = [];
  world.broken = undefined;
  const count = between(random, 1, 3);
  for (let i = 0; i < count; i++) {
    const name = pick(random, EDIT_DRAWS) as string;
    done.push((EDITS[name] as Edit)(world, random, facts) ?? `${name} skipped (not applicable now)`);
  }
  if (random() < 0.1) {
    const ownFiles = Object.keys(render(world)).filter(
      (path) => path.startsWith("endpoints/") || path.startsWith("created/"),
    );
    world.broken = pick(random, [...BREAKABLE, ...ownFiles]);
    done.push(`${world.broken} left broken`);
  }
  return done;
}
