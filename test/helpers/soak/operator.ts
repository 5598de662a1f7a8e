import { setTimeout as sleep } from "node:timers/promises";
import { between, type Random } from "./edits.js";
import { ENDPOINT_ROUTE } from "./faults.js";
import type { FaultSoak } from "./run.js";
import { current, render } from "./world.js";

/**
 * The operator of docs/operations.md ("Reading an Unknown status"): for each endpoint /status shows
 * Unknown, look in the platform's console for an endpoint with its description; adopt it with spec.id
 * when it exists, else allow one new create (DRIFTLESS_ALLOW_CREATE, which restarts the pod), after
 * one pass without the allowance when the message says it was already used. The allowance is taken
 * away again after 0 to 2 more restarts. Returns what was done, for the step list.
 */
export async function operateOnUnknown(soak: FaultSoak, random: Random): Promise<string> {
  if (!soak.daemon.running) return "operator: no daemon to read";
  const unknown = (await soak.daemon.status()).resources.filter(
    (r) => r.kind === "ReversePrivateEndpoint" && r.status === "Unknown",
  );
  if (unknown.length === 0) return "operator: nothing Unknown";
  for (const entry of unknown) checkAdvice(entry);

  // Setting the allowance restarts the pod; and a request the platform still holds (latency) may yet
  // take effect after its client is gone: the console is read once that time has passed.
  await soak.daemon.stop("SIGTERM");
  await sleep(soak.latency.maxMs + 300);
  const done: string[] = [];
  const allowed: string[] = [];
  for (const entry of unknown) {
    const e = soak.world.endpoints.find((x) => !x.removed && current(x.names) === entry.name);
    if (!e) continue;
    const held = soak.rig.sim.state.endpoints.filter((x) => x.description === e.description);
    if (!createReached(soak, e.description, entry.lastError ?? "")) soak.unknownWithoutCreate += 1;
    if (held.length === 1) {
      e.adoptedId = held[0]?.id;
      done.push(`adopted ${entry.name} as ${e.adoptedId}`);
    } else if (held.length === 0) {
      allowed.push(`ReversePrivateEndpoint/${entry.name}`);
      soak.allowances.set(e.description, (soak.allowances.get(e.description) ?? 0) + 1);
      done.push(`allowed ${entry.name} again`);
    }
  }
  if (done.some((d) => d.startsWith("adopted"))) await soak.rig.layout.publish(render(soak.world));
  if (allowed.length > 0 && unknown.some((u) => u.lastError?.includes("already used"))) {
    await soak.daemon.start();
    await waitForPass(soak, "the pass without the allowance");
    await soak.daemon.stop("SIGTERM");
    done.push("one pass without the allowance first");
  }
  soak.allowance =
    allowed.length > 0 ? { value: allowed.join(","), restartsLeft: 1 + between(random, 0, 2) } : undefined;
  await soak.daemon.start(soak.allowanceEnv());
  const actions = done.join("; ") || "nothing to do (renamed or removed meanwhile)";
  soak.operatorLog.push(actions);
  return `operator: ${actions}`;
}

/**
 * Whether a create of `description` reached the platform since the time the Unknown message names
 * ("sent at ..."): an Unknown with none is safe (a process that died between saving the intent and
 * sending, or whose intent save landed unanswered, cannot know), but costs an operator a look.
 */
function createReached(soak: FaultSoak, description: string, message: string): boolean {
  const sentAt = Date.parse(/sent at (\S+) may or may not/.exec(message)?.[1] ?? "");
  return soak.rig.sim.requests.some(
    (r) =>
      r.route === ENDPOINT_ROUTE &&
      r.method === "POST" &&
      (r.body as { description?: string } | undefined)?.description === description &&
      !(r.at < sentAt - 1000),
  );
}

/** An Unknown endpoint's message says both ways out (or that the allowance was spent, and what then). */
function checkAdvice(entry: { name: string; lastError: string | null }): void {
  const message = entry.lastError ?? "";
  const advises =
    (message.includes("spec.id") &&
      message.includes(`--allow-create ReversePrivateEndpoint/${entry.name}`)) ||
    message.includes("let one pass run without it");
  if (!advises) {
    throw new Error(
      `ReversePrivateEndpoint/${entry.name} is Unknown without saying what to do: "${message}"`,
    );
  }
}

/** Resolves once the running daemon finished a pass (after it started); fails after 120 s. */
export async function waitForPass(soak: FaultSoak, what: string): Promise<void> {
  const d = soak.daemon.running;
  if (!d) throw new Error(`no daemon running for ${what}`);
  await d
    .waitForLog((l) => l.msg === "pass finished" || l.msg === "pass failed", 120_000)
    .catch((error: Error) => {
      throw new Error(`${what}: no pass finished in 120 s: ${error.message}`);
    });
}
