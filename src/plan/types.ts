import type { KeyPair } from "../credentials.js";
import type { Kind, ManifestOf } from "../manifests/manifest.js";
import type { SecretRef } from "../manifests/secrets.js";
import type { SecretTarget } from "../manifests/specs/api-key.js";
import type { Answers, PlannedRequest, RouteName } from "../platform/routes.js";
import type { ResourceRecord } from "../state/store.js";
import type { Secret } from "./secret.js";

/**
 * Plans are data: what a pass would send for one resource, and why. `plan` prints them, `apply` sends
 * exactly them, so the two can never disagree.
 */

export type { PlannedRequest };

/**
 * A request to send and what its answer makes of the resource's record: the answer comes typed by the
 * route's schema (platform/routes.ts), so the kind that planned the request reads it without a check.
 * Kinds write one as `{...} satisfies Write<"route">`, which types the answer.
 */
export type Write<R extends RouteName = RouteName> = {
  request: PlannedRequest<R>;
  /** The record once the platform answered `answer` at `at` (ISO-8601). */
  record(answer: Answers[R], at: string): ResourceRecord;
};

/** A manifest's spec with every `{fromEnv}` / `{fromFile}` reference resolved into a Secret. */
export type Resolved<T> = T extends SecretRef
  ? Secret
  : T extends readonly (infer E)[]
    ? Resolved<E>[]
    : T extends object
      ? { [P in keyof T]: Resolved<T[P]> }
      : T;

/** Per kind, the desired spec as its module receives it. */
export type Specs = { [K in Kind]: Resolved<ManifestOf<K>["spec"]> };
export type SpecOf<K extends Kind> = Specs[K];

/** One line of the readable diff: a field path with its last applied and desired values. */
export type Change = {
  path: string;
  /** Last applied (stored form), absent when driftless never sent it. */
  from?: unknown;
  /** Desired; a secret is shown as `(changed)` / `(unchanged)`. */
  to?: unknown;
  /** `add` / `remove` of a three-way list entry; `set` otherwise. */
  op: "set" | "add" | "remove";
  /** With reads on: the live value was changed outside git, and this change sends git's back. */
  outsideGit?: true;
};

/**
 * What a pass does for a resource:
 * - `none`: in sync, nothing to send (Synced);
 * - `send`: send `write` (Synced once it succeeds; `followUp` says a second request follows);
 * - `adopt`: record a server id without a request (Synced);
 * - `wait`: nothing can be sent yet, `reason` says what it waits for (Pending);
 * - `refuse`: the change must not be sent, `reason` says why and what to do (Failed);
 * - `unknown`: an earlier create's outcome cannot be known, an operator decides (Unknown).
 */
export type Outcome = "none" | "send" | "adopt" | "wait" | "refuse" | "unknown";

export type ResourcePlan = {
  kind: Kind;
  name: string;
  outcome: Outcome;
  reason: string;
  /** For `send`: the request, and what its answer makes of the record. */
  write?: Write;
  changes: Change[];
  /** Set when the request only prepares another (e.g. learns a live list before computing add/remove). */
  followUp?: string;
  /** For `adopt`: the server id, and the record that adopts it. */
  adopt?: { id: string; record(at: string): ResourceRecord };
  /**
   * For `none`: what a Synced status says of the resource (an endpoint's id and the status it was
   * created with); absent when there is nothing to say.
   */
  note?: string;
  /**
   * For a create that needs a credential driftless makes (an API key's id and secret): where the
   * credential is written before the create is sent, and the write that carries its hashes. `write`
   * above shows the request with the hashes still to be made; this is what is sent.
   */
  credential?: { target: SecretTarget; write(pair: KeyPair): Write };
};
