import { isApiError, isUnknownOutcomeError, messageOf } from "../errors.js";
import type { Manifest } from "../manifests/manifest.js";
import { resourceId } from "../manifests/manifest.js";
import { PLANNERS, planResource } from "../plan/planners.js";
import { unknownCreateMessage } from "../plan/reverse-private-endpoint.js";
import type { PlanContext, PlanInput, ResourcePlan } from "../plan/types.js";
import { type PlanView, viewOf } from "../plan/view.js";
import type { ResourceRecord } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import { resolveDesired } from "./desired.js";
import type { ApplyOptions, EngineDeps, Pass, ResourceOutcome } from "./engine.js";
import type { ResourceStatusName } from "./types.js";

/**
 * The reconcile pass, inner part: one resource as a straight pipeline. Resolve its secrets, plan, send,
 * record the answer, save, and plan again until nothing is left (a first contact may take two requests).
 */

/** A first contact with a three-way list takes two requests; more means the plan does not converge. */
const MAX_ROUNDS = 3;

export type ResourceRun = {
  deps: EngineDeps;
  pass: Pass;
  base: Omit<PlanContext, "reassert" | "allowCreate">;
  allow: Set<string>;
  options: ApplyOptions;
  save: () => Promise<void>;
  log: Logger;
};

const STATUS_OF: Record<ResourcePlan["outcome"], ResourceStatusName> = {
  none: "Synced",
  adopt: "Synced",
  send: "Pending",
  wait: "Pending",
  refuse: "Failed",
  unknown: "Unknown",
};

/** Plan, send, record, save; again while the plan still has something to send. Never throws. */
export async function applyResource(m: Manifest, run: ResourceRun): Promise<ResourceOutcome> {
  const { deps, pass, options, save } = run;
  const id = resourceId(m);
  const log = run.log.child({ resource: id });
  const sent: PlanView[] = [];
  let requestId: string | undefined;
  const finish = (status: ResourceStatusName, message?: string): ResourceOutcome => {
    const appliedAt = pass.state.resources[id]?.appliedAt;
    if (status !== "Synced") log.warn({ status, reason: message, requestId }, "resource not in sync");
    return {
      status: {
        kind: m.kind,
        name: m.name,
        status,
        ...(message ? { message } : {}),
        ...(requestId ? { requestId } : {}),
        ...(appliedAt ? { lastAppliedAt: appliedAt } : {}),
      },
      sent,
    };
  };

  let spec: Record<string, unknown>;
  try {
    // Step 1: resolve the secrets (a rotated one is sent again because its hash changed).
    spec = await resolveDesired(m.spec as Record<string, unknown>, deps.secrets, pass.state.salt);
  } catch (error) {
    return finish("Failed", messageOf(error));
  }

  for (let round = 1; round <= MAX_ROUNDS; round++) {
    // Step 2: plan against the record as it is now (a follow-up sees the first answer).
    const record = pass.state.resources[id];
    const context: PlanContext = {
      ...run.base,
      reassert: (options.reassert ?? false) && round === 1,
      allowCreate: run.allow.has(id) && round === 1,
    };
    const input: PlanInput = { kind: m.kind, name: m.name, spec, record, context };
    const plan = planResource(input);
    const planner = PLANNERS[m.kind];
    if (plan.outcome === "adopt" && planner) {
      pass.state.resources[id] = planner.record(input, plan, undefined, new Date().toISOString());
      try {
        await save();
      } catch (error) {
        return finish("Failed", `adopted, but the state could not be saved: ${messageOf(error)}`);
      }
      log.info({ serverId: plan.adoptId }, "resource adopted");
      return finish("Synced", plan.reason);
    }
    if (plan.outcome !== "send" || !plan.request || !planner) {
      const quiet = plan.outcome === "none" && (plan.reason.startsWith("in sync") || round > 1);
      return finish(STATUS_OF[plan.outcome], quiet ? undefined : plan.reason);
    }
    if (options.signal?.aborted) return finish("Pending", "not sent: the pass was stopped (shutdown)");
    if (!deps.send) return finish("Pending", "not sent: no API client");

    // Step 3: a create is not idempotent: its intent is saved first, so a crash after the POST is seen.
    const { request } = plan;
    if (request.method === "POST") {
      pass.state.resources[id] = {
        ...(record ?? { kind: m.kind, name: m.name }),
        intent: { action: "create", startedAt: new Date().toISOString() },
      };
      try {
        await save();
      } catch (error) {
        // Nothing was sent: the intent must not reach the state with a later save of another resource.
        if (record) pass.state.resources[id] = record;
        else delete pass.state.resources[id];
        return finish("Failed", `not sent: the create intent could not be saved: ${messageOf(error)}`);
      }
    }

    // Step 4: send exactly the plan; changes from git go first, re-assertions last.
    const view = viewOf(plan, record?.applied);
    const change = options.trigger === "retry" ? "retry" : "change";
    const priority = plan.changes.length > 0 || round > 1 ? change : "poll";
    const started = performance.now();
    let answer: Awaited<ReturnType<NonNullable<EngineDeps["send"]>>>;
    try {
      answer = await deps.send(request, { priority, ...(options.signal ? { signal: options.signal } : {}) });
    } catch (error) {
      if (isUnknownOutcomeError(error)) {
        sent.push(view);
        return finish(
          "Unknown",
          `${error.message}. ${unknownCreateMessage(m.kind, m.name, pass.state.resources[id]?.intent?.startedAt ?? "now")}`,
        );
      }
      if (request.method === "POST") {
        // Not an unknown outcome: the platform answered, or the request never left (a shutdown while it
        // waited for the rate budget). The create did not happen, so the intent is void.
        const { intent: _void, ...rest } = pass.state.resources[id] ?? { kind: m.kind, name: m.name };
        pass.state.resources[id] = rest as ResourceRecord;
        await save().catch(() => {});
      }
      if (options.signal?.aborted && !isApiError(error)) {
        return finish(
          "Pending",
          "not completed: the pass was stopped (shutdown or lost leadership); the next pass sends it again",
        );
      }
      if (isApiError(error)) {
        requestId = error.context.requestId ?? requestId;
        return finish("Failed", error.message);
      }
      return finish("Failed", messageOf(error));
    }
    requestId = answer.requestId;
    sent.push(view);

    // Step 5: record the answer and save at once, so a crash loses nothing that was sent. A save that
    // fails leaves the record in memory for the pass's next save; on disk a create keeps its intent, so
    // a crash now shows Unknown rather than creating the endpoint twice.
    pass.state.resources[id] = planner.record(input, plan, answer.result, new Date().toISOString());
    try {
      await save();
    } catch (error) {
      return finish("Failed", `sent, but the state could not be saved: ${messageOf(error)}`);
    }
    log.info(
      {
        method: request.method,
        route: request.route,
        fields: plan.changes.map((c) => c.path),
        requestId,
        durationMs: Math.round(performance.now() - started),
      },
      "resource applied",
    );
  }
  return finish(
    "Failed",
    `still had changes to send after ${MAX_ROUNDS} requests; the platform's answers do not match the manifest`,
  );
}
