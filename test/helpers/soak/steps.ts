import { setTimeout as sleep } from "node:timers/promises";
import { driftlessAsync } from "../cli.js";
import { addToCreate, between, editWorld, pick, type Random } from "./edits.js";
import {
  createTarget,
  injectHostileAnswer,
  injectKubernetesFault,
  injectPlatformFault,
  injectRenameFault,
} from "./faults.js";
import { checkNoSecret } from "./invariants.js";
import { operateOnUnknown } from "./operator.js";
import type { FaultSoak } from "./run.js";
import { COLLECTIONS, type Collection, declared, render } from "./world.js";

/**
 * One step of the soak, drawn at random: what it does, and the line it adds to the step list. The
 * weights: waits let the daemon work between the other steps; `kubernetes` is a wait on the file store.
 */

const STEP_KINDS: Array<[string, number]> = [
  ["wait", 24],
  ["edit", 18],
  ["swap", 5],
  ["webhook", 3],
  ["empty", 3],
  ["kill", 9],
  ["killAtCreate", 5],
  ["platform", 20],
  ["hostile", 12],
  ["kubernetes", 12],
  ["operator", 4],
  ["rotate", 3],
  ["plan", 3],
];

function drawKind(random: Random): string {
  const total = STEP_KINDS.reduce((sum, [, weight]) => sum + weight, 0);
  let roll = random() * total;
  for (const [kind, weight] of STEP_KINDS) {
    roll -= weight;
    if (roll < 0) return kind;
  }
  return "wait";
}

/** Draws a step with `random`, performs it, and says what it did. */
export async function performStep(soak: FaultSoak, random: Random): Promise<string> {
  const { rig } = soak;
  switch (drawKind(random)) {
    case "edit":
      return edit(soak, random);
    case "swap":
      await rig.layout.publish(render(soak.world));
      return `link swapped to ${rig.layout.revision} (same manifests)`;
    case "webhook": {
      await rig.layout.publish(render(soak.world));
      const answer = await soak.daemon.hook(rig.secret("webhook token"), rig.layout.revision);
      return `link swapped to ${rig.layout.revision}, webhook answered ${answer || "(no daemon)"}`;
    }
    case "empty":
      return emptyCheckout(soak, random);
    case "kill":
      return kill(soak, random);
    case "killAtCreate":
      return killAtCreate(soak, random);
    case "platform":
      return injectPlatformFault(rig.sim, random, soak.counts, soak.latency);
    case "hostile":
      return injectHostileAnswer(rig.sim, random, soak.counts);
    case "kubernetes":
      return rig.fake ? injectKubernetesFault(rig.fake, random, soak.counts) : wait(random);
    case "operator":
      return operateOnUnknown(soak, random);
    case "rotate":
      await rig.rotatePostgresPassword();
      return "postgres password rotated (its file replaced)";
    case "plan":
      return planBeside(soak);
    default:
      return wait(random);
  }
}

async function wait(random: Random): Promise<string> {
  const ms = between(random, 2, 20) * 100;
  await sleep(ms);
  return `waited ${ms} ms`;
}

/**
 * Edits the manifests and publishes them; on the Kubernetes store, half the renames also get a fault
 * on the writes of the renamed record's new shard (the save that moves it lands in part).
 */
async function edit(soak: FaultSoak, random: Random): Promise<string> {
  const before = new Set(declared(soak.world));
  const done = editWorld(soak.world, random, soak.facts);
  const renamed = declared(soak.world).filter(
    (id) => !before.has(id) && !done.includes(`endpoint ${id.split("/")[1]} added`),
  );
  soak.edits += 1;
  soak.renames += renamed.length;
  await soak.rig.layout.publish(render(soak.world));
  const fake = soak.rig.fake;
  const aimed = fake && renamed.length > 0 && random() < 0.5;
  const fault = aimed ? `; ${injectRenameFault(fake, random, soak.counts, renamed)}` : "";
  return `edit → ${soak.rig.layout.revision}: ${done.join("; ")}${fault}`;
}

async function kill(soak: FaultSoak, random: Random): Promise<string> {
  const afterMs = between(random, 0, 12) * 50;
  const graceful = random() < 0.15;
  await sleep(afterMs);
  await soak.daemon.stop(graceful ? "SIGTERM" : "SIGKILL");
  return `${graceful ? "SIGTERM" : "SIGKILL"} after ${afterMs} ms, ${await restart(soak, random)}`;
}

/** Starts the daemon again after 0 to 800 ms, with the operator's allowance while it is left set. */
async function restart(soak: FaultSoak, random: Random): Promise<string> {
  const restartMs = between(random, 0, 8) * 100;
  await sleep(restartMs);
  const extra = soak.allowanceEnv();
  await soak.daemon.start(extra);
  const allowed = extra.DRIFTLESS_ALLOW_CREATE ? ` (still allowed: ${extra.DRIFTLESS_ALLOW_CREATE})` : "";
  const { maxDeletes, prune } = soak.daemon.lives.at(-1) ?? {};
  return `restarted ${restartMs} ms later${allowed}, guard ${maxDeletes}${prune ? "" : ", DRIFTLESS_PRUNE=off"}`;
}

/** How long a kill at a create waits for the daemon to send it. */
const CREATE_WAIT_MS = 6_000;

/**
 * Kills the daemon between a create's POST and its save: a manifest without an id is added, the
 * platform makes the object of the next create of its kind and holds the answer, and the daemon is
 * killed once that POST is in (or after 6 s without one: the fault is then left for a later create).
 */
async function killAtCreate(soak: FaultSoak, random: Random): Promise<string> {
  const { rig, world } = soak;
  const collection = pick(random, world.creates ? COLLECTIONS : ["endpoints" as const]) as Collection;
  const target = createTarget(collection);
  const since = Date.now();
  rig.sim.inject({ ...target, kind: "hang", applied: true, count: 1 });
  soak.counts["kill at a create"] = (soak.counts["kill at a create"] ?? 0) + 1;
  const added = addToCreate(world, random, collection);
  soak.edits += 1;
  await rig.layout.publish(render(world));
  await soak.daemon.hook(rig.secret("webhook token"), rig.layout.revision);
  const posted = () =>
    rig.sim.requests.some((r) => r.method === "POST" && r.route === target.route && r.at >= since);
  const deadline = performance.now() + CREATE_WAIT_MS;
  while (!posted() && performance.now() < deadline && soak.daemon.running) await sleep(25);
  const when = posted() ? "its POST made, the answer held" : `no POST in ${CREATE_WAIT_MS / 1000} s`;
  await soak.daemon.stop("SIGKILL");
  return `kill at a create: ${added} → ${rig.layout.revision}; ${when}: SIGKILL, ${await restart(soak, random)}`;
}

/**
 * A git-sync checkout that comes up empty: every manifest gone at once, for a moment (the daemon may
 * run passes on it, or hear of it by the webhook), then the manifests back.
 */
async function emptyCheckout(soak: FaultSoak, random: Random): Promise<string> {
  const { rig } = soak;
  await rig.layout.publish({});
  const empty = rig.layout.revision;
  const hooked =
    random() < 0.5 ? `, webhook answered ${await soak.daemon.hook(rig.secret("webhook token"), empty)}` : "";
  const ms = between(random, 3, 40) * 100;
  await sleep(ms);
  await rig.layout.publish(render(soak.world));
  soak.counts["empty checkout"] = (soak.counts["empty checkout"] ?? 0) + 1;
  return `checkout came up empty (${empty}${hooked}) for ${ms} ms, then ${rig.layout.revision}`;
}

/**
 * `driftless plan` beside the running daemon, on the same state (read-only, no lock), as a person
 * checking a change would: it must answer a plan (0 nothing to do, 2 changes, 1 a resource it cannot
 * plan) and print no secret.
 */
async function planBeside(soak: FaultSoak): Promise<string> {
  const { DRIFTLESS_LOG_LEVEL: _level, ...env } = soak.rig.env();
  const plan = await driftlessAsync(["plan", "--output", "json"], env);
  checkNoSecret("driftless plan's output", `${plan.stdout}\n${plan.stderr}`, soak.rig.secrets);
  if (plan.code === null || ![0, 1, 2].includes(plan.code) || !plan.stdout.startsWith("{")) {
    throw new Error(`driftless plan beside the daemon exited ${plan.code}: ${plan.stderr.slice(-2000)}`);
  }
  const { summary } = JSON.parse(plan.stdout) as { summary: Record<string, number> };
  const counts = Object.entries(summary).filter(([, n]) => n > 0);
  return `driftless plan beside the daemon: exit ${plan.code}, ${counts.map(([k, n]) => `${k} ${n}`).join(", ")}`;
}
