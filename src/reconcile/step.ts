import type { PlanInput } from "../kinds/kind.js";
import type { Manifest } from "../manifests/manifest.js";
import type { ResourcePlan, Write } from "../plan/types.js";
import type { Cause } from "../resources.js";

/**
 * What the decision (decide.ts) says of a resource in one round, and what it reads: the vocabulary of
 * the engine's inner part, apart from the functions that use it.
 */

/**
 * A create whose answer was lost, looked up in the list it would have added to (reads on): `found`,
 * exactly one listed object matches (the create did happen); `absent`, none does (it did not);
 * `unclear`, the list cannot tell (several match, or the list failed).
 */
export type Settlement =
  | { state: "found"; id: string; live: Record<string, unknown> }
  | { state: "absent" }
  | { state: "unclear"; reason: string };

/** A resource ready to be planned: its desired spec and the key id of its organization, when known. */
export type Admitted = {
  action: "plan";
  manifest: Manifest;
  id: string;
  spec: PlanInput["spec"];
  managementKeyId: string | undefined;
  /** With reads on: how a list settles an earlier create's unknown outcome. */
  settled?: Settlement;
};

/**
 * What to do next for a resource, decided in one place (decide.ts) from its record, what a read found
 * and the pass's facts: create or update (send `write`), adopt a server id without a request, or stop
 * with a cause. Every step carries the plan `plan` shows for it.
 */
export type Step =
  | {
      action: "create" | "update";
      input: PlanInput;
      plan: ResourcePlan;
      write: Write;
      fingerprint: string;
      /** A create the operator allowed although an earlier one's outcome is unknown: the allowance is spent. */
      allowed: boolean;
    }
  | { action: "adopt"; input: PlanInput; plan: ResourcePlan; adopt: NonNullable<ResourcePlan["adopt"]> }
  | Stop;

/** The resource stops here: the cause decides its status and next step (resources.ts CAUSES). */
export type Stop = {
  action: "stop";
  cause: Cause;
  plan: ResourcePlan;
  /** What the status says; none for a resource quietly in sync. */
  message?: string;
  /** The plan's input, when it got as far as a plan. */
  input?: PlanInput;
  requestId?: string;
};
