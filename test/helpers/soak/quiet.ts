import { setTimeout as sleep } from "node:timers/promises";
import { defaultIds as ids } from "../../../src/simulator/index.js";
import type { State } from "../../../src/state/store.js";
import type { SoakStatus } from "./daemon.js";
import { loadState } from "./invariants.js";
import { operateOnUnknown } from "./operator.js";
import type { FaultSoak } from "./run.js";
import { current, declared, liveEndpoints, liveTiles, render } from "./world.js";

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
  await soak.rig.layout.publish(render(soak.world));
  soak.log(`quiet phase: every fault cleared, manifests whole at ${soak.rig.layout.revision}`);
  if (!soak.daemon.running) await soak.daemon.start(soak.allowanceEnv());

  for (let round = 1; ; round++) {
    const status = await settled(soak, new Date().toISOString());
    await soak.check();
    const unknown = status.resources.filter((r) => r.status === "Unknown");
    soak.log(`quiet phase: settled, ${unknown.length} Unknown`);
    if (unknown.length === 0) break;
    if (round > OPERATOR_ROUNDS) {
      throw new Error(`still Unknown after ${OPERATOR_ROUNDS} rounds of the operator: ${describe(unknown)}`);
    }
    soak.log(await operateOnUnknown(soak, soak.randomOf(-round)));
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
  const waiting = describe(
    declared(soak.world)
      .map((id) => [id, status.resources.find((r) => `${r.kind}/${r.name}` === id)] as const)
      .filter(([id, r]) => {
        if (r?.status === "Synced") return false;
        if (r?.status === "Unknown" && r.kind === "ReversePrivateEndpoint") return false;
        const behindUnknown = status.resources.some(
          (x) => `${x.kind}/${x.name}` === first && x.status === "Unknown",
        );
        return !(id === "DataPipe/orders-from-kafka" && r?.status === "Pending" && behindUnknown);
      })
      .map(([id, r]) => r ?? { kind: id, name: "", status: "missing", lastError: null }),
  );
  return waiting || undefined;
}

const describe = (entries: Array<{ kind: string; name: string; status: string; lastError: string | null }>) =>
  entries.map((r) => `${r.kind}/${r.name} ${r.status}${r.lastError ? ` (${r.lastError})` : ""}`).join("; ");

/** Each endpoint's record holds the id of the one endpoint of its description; each tile's, its platform id. */
function checkIdsAgree(soak: FaultSoak, state: State): void {
  for (const e of liveEndpoints(soak.world)) {
    const held = soak.rig.sim.state.endpoints.filter((x) => x.description === e.description);
    const record = state.resources[`ReversePrivateEndpoint/${current(e.names)}`];
    if (held.length !== 1 || record?.serverId !== held[0]?.id) {
      throw new Error(
        `endpoint ${current(e.names)}: the platform holds ${held.map((x) => x.id).join(", ") || "none"}, the state ${record?.serverId ?? "no id"}`,
      );
    }
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
