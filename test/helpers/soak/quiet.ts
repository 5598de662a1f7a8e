import { rm } from "node:fs/promises";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { defaultIds as ids } from "../../../src/simulator/index.js";
import type { State } from "../../../src/state/store.js";
import { driftlessAsync } from "../cli.js";
import type { SoakStatus } from "./daemon.js";
import { checkNoSecret, loadState } from "./invariants.js";
import { operateOnUnknown } from "./operator.js";
import type { FaultSoak } from "./run.js";
import { current, declared, liveTiles, owned, render } from "./world.js";

/**
 * The soak's last phase: the faults stop, the manifests are whole, and the daemon (restarted only if
 * the last step left it down) must bring every resource to Synced, or to Unknown with a message that
 * says what to do; the operator then settles each Unknown as documented, and every resource must end
 * Synced, with each endpoint's and each tile's id in the state the platform's. A clean stop ends it.
 */

/** How long the daemon gets to settle once the faults stop (a request left hanging times out in 30 s). */
const SETTLE_MS = 180_000;
const OPERATOR_ROUNDS = 3;

export async function quietPhase(soak: FaultSoak): Promise<void> {
  soak.rig.sim.clearFaults();
  soak.rig.fake?.setFault(undefined);
  soak.world.broken = undefined;
  soak.quiet = true;
  await soak.rig.layout.publish(render(soak.world));
  soak.log(`quiet phase: every fault cleared, manifests whole at ${soak.rig.layout.revision}`);
  // The objects removed from git are to be deleted by the end: a daemon that prunes nothing is restarted.
  if (soak.daemon.running && soak.daemon.lives.at(-1)?.prune === false) await soak.daemon.stop("SIGTERM");
  if (!soak.daemon.running) await soak.daemon.start(soak.allowanceEnv());

  for (let round = 1; ; round++) {
    const status = await settled(soak, new Date().toISOString());
    await soak.check();
    const unknown = status.resources.filter((r) => r.status === "Unknown");
    const held = status.resources.filter(isHeld);
    const stale = status.resources.filter(isStaleTarget);
    soak.log(
      `quiet phase: settled, ${unknown.length} Unknown, ${held.length} deletes held, ${stale.length} key targets of deleted keys`,
    );
    if (unknown.length + held.length + stale.length === 0) break;
    if (round > OPERATOR_ROUNDS) {
      throw new Error(
        `still waiting for an operator after ${OPERATOR_ROUNDS} rounds: ${describe([...unknown, ...held, ...stale])}`,
      );
    }
    if (stale.length > 0) soak.log(await removeStaleTargets(soak, stale));
    if (held.length > 0) soak.log(await letDeletesGo(soak, held.length));
    if (unknown.length > 0) soak.log(await operateOnUnknown(soak, soak.randomOf(-round)));
  }

  checkIdsAgree(soak, await loadState(soak.rig.source));
  const code = await soak.daemon.stop("SIGTERM");
  soak.log(`quiet phase: daemon stopped, exit code ${code}`);
  if (code !== 0) throw new Error(`the daemon's clean stop exited ${code}, not 0`);
  await soak.check();
}

/**
 * Polls /status until a pass that started after `since` read the newest revision and left every
 * declared resource Synced, or Unknown (an endpoint), or Pending behind one (the pipe naming it).
 */
async function settled(soak: FaultSoak, since: string): Promise<SoakStatus> {
  const deadline = performance.now() + SETTLE_MS;
  let why = "no status yet";
  for (;;) {
    soak.daemon.checkAlive();
    const status = await soak.daemon.status();
    why = unsettled(soak, status, since) ?? "";
    if (!why) return status;
    if (performance.now() > deadline) {
      throw new Error(
        `${SETTLE_MS / 1000} s after the faults stopped, not every resource is Synced or says why: ${why}\n/status: ${JSON.stringify(status.resources, null, 1)}`,
      );
    }
    await sleep(500);
  }
}

/** Why `status` is not settled yet, or undefined. */
function unsettled(soak: FaultSoak, status: SoakStatus, since: string): string | undefined {
  if (status.revision !== soak.rig.layout.revision) return `the last pass read ${status.revision}`;
  if (!status.lastPass || status.lastPass.startedAt < since) return "no pass since the faults stopped";
  if (status.passError) return `the last pass failed: ${status.passError}`;
  const first = `ReversePrivateEndpoint/${current(soak.world.endpoints[0]?.names ?? [])}`;
  const ids = new Set(declared(soak.world));
  // What is left of the manifests that left git: deleted, orphaned, or held for an operator.
  const gone = status.resources.filter(
    (r) => !ids.has(`${r.kind}/${r.name}`) && !["Deleted", "Unmanaged"].includes(r.status) && !isHeld(r),
  );
  if (gone.length > 0) return describe(gone);
  const waiting = describe(
    declared(soak.world)
      .map((id) => [id, status.resources.find((r) => `${r.kind}/${r.name}` === id)] as const)
      .filter(([id, r]) => {
        if (r?.status === "Synced") return false;
        if (r?.status === "Unknown" && r.kind === "ReversePrivateEndpoint") return false;
        if (r && isStaleTarget(r)) return false;
        const behindUnknown = status.resources.some(
          (x) => `${x.kind}/${x.name}` === first && x.status === "Unknown",
        );
        return !(id === "DataPipe/orders-from-kafka" && r?.status === "Pending" && behindUnknown);
      })
      .map(([id, r]) => r ?? { kind: id, name: "", status: "missing", lastError: null }),
  );
  return waiting || undefined;
}

const describe = (entries: readonly Entry[]) =>
  entries.map((r) => `${r.kind}/${r.name} ${r.status}${r.lastError ? ` (${r.lastError})` : ""}`).join("; ");

type Entry = { kind: string; name: string; status: string; lastError: string | null };

/** A delete the mass-deletion guard holds for an operator. */
const isHeld = (r: Entry) => r.status === "Pending" && (r.lastError ?? "").includes("mass-deletion guard");

/**
 * A key driftless cannot create again because its target still holds the pair of the key it deleted
 * (an empty checkout deleted it, the checkout that came back creates it): driftless never writes over
 * a pair, and says to remove the target if its key is gone.
 */
const isStaleTarget = (r: Entry) =>
  r.kind === "ApiKey" &&
  r.status === "Failed" &&
  (r.lastError ?? "").includes("already holds the id and secret");

/**
 * The operator of docs/operations.md ("The mass-deletion guard"): the deletes are meant (the manifests
 * left git for good), so one `driftless apply --allow-deletes N` sends them, with the daemon stopped
 * (it holds the state's lock); the daemon is started again after.
 */
async function letDeletesGo(soak: FaultSoak, held: number): Promise<string> {
  await soak.daemon.stop("SIGTERM");
  const { DRIFTLESS_LOG_LEVEL: _level, ...env } = soak.rig.env();
  const allow = String(held);
  soak.operatorRuns.push({
    what: `the operator's apply --allow-deletes ${allow}`,
    startedAt: Date.now(),
    maxDeletes: held,
    prune: true,
    logs: () => [],
  });
  const apply = await driftlessAsync(["apply", "--allow-deletes", allow, "--output", "json"], env);
  checkNoSecret("driftless apply's output", `${apply.stdout}\n${apply.stderr}`, soak.rig.secrets);
  await soak.daemon.start(soak.allowanceEnv());
  return `operator: driftless apply --allow-deletes ${allow} exited ${apply.code}, daemon started again`;
}

/**
 * The operator of a key's refused create (docs/manifests.md, ApiKey): the target holds the pair of a
 * key whose id ends with the characters the message names; when the platform holds no such key, the
 * target is removed, and the next pass creates the key with a new pair.
 */
async function removeStaleTargets(soak: FaultSoak, stale: readonly Entry[]): Promise<string> {
  const done: string[] = [];
  for (const entry of stale) {
    const suffix = /its id ends (\S+?)\)/.exec(entry.lastError ?? "")?.[1];
    const c = soak.world.created.find((x) => x.kind === "ApiKey" && x.name === entry.name);
    if (!suffix || !c || soak.rig.sim.state.keys.some((k) => k.keySuffix === suffix)) continue;
    await rm(join(soak.rig.keySecretsDir, c.name), { force: true });
    done.push(`removed ${c.name}'s target (its key ending ${suffix} is gone)`);
  }
  return `operator: ${done.join("; ") || "no stale key target to remove"}`;
}

/**
 * What the platform holds at the end: one object for each manifest object, its id in the record; of
 * those whose manifest left git, none when its policy deletes it (unless its record was orphaned:
 * its create's outcome unknown, or DRIFTLESS_PRUNE=off then), at most one when it keeps it. Each
 * tile's record holds its platform id.
 */
function checkIdsAgree(soak: FaultSoak, state: State): void {
  for (const o of owned(soak.world)) {
    const held = soak.ledger.held(o.collection, o.identity);
    const records = o.names.flatMap((name) => state.resources[`${o.kind}/${name}`] ?? []);
    const shown = `${o.kind} ${o.names.at(-1)}: the platform holds ${held.map((x) => x.id).join(", ") || "none"}`;
    if (!o.removed) {
      const record = state.resources[`${o.kind}/${o.names.at(-1)}`];
      if (held.length !== 1 || record?.serverId !== held[0]?.id)
        throw new Error(`${shown}, the state ${record?.serverId ?? "no id"}`);
      continue;
    }
    const kept = o.orphan || soak.keptSince.has(o.identity);
    const orphaned = records.some((r) => r.unmanagedSince !== undefined);
    if (held.length > (kept || orphaned ? 1 : 0))
      throw new Error(`${shown}, though its manifest left git and its deletion policy deletes it`);
  }
  const record = state.resources[`Dashboard/${current(soak.world.dashboardNames)}`];
  const platform = soak.rig.sim.state.dashboards.find((d) => d.id === ids.dashboardId);
  for (const t of liveTiles(soak.world)) {
    const saved = record?.tileIds?.[current(t.keys)];
    const shown = platform?.tiles.find((x) => x.name === t.name)?.id;
    if (!saved || saved !== shown) {
      throw new Error(
        `tile ${t.name}: the state holds ${saved ?? "no id"}, the platform shows ${shown ?? "no tile"}`,
      );
    }
  }
}
