import type { WatchKind } from "../manifests/manifest.js";
import type { ResourcePlan } from "../plan/types.js";
import { type Complete, none, type PlanInput } from "./kind.js";
import { specPathOf } from "./shared.js";

/**
 * The watches: read-only kinds that send nothing in a pass; the daemon polls them (daemon/polls.ts)
 * with the request their module names.
 */

const watched = ({ kind, name }: PlanInput<WatchKind>): ResourcePlan => ({
  kind,
  name,
  outcome: "none",
  reason: "in sync: read-only, polled by the daemon",
  changes: [],
});

const written = none("a watch is polled, never written");

/** A watch addresses no object of its own to delete. */
const nothing = () => undefined;

export const alertWatch: Complete<"AlertWatch"> = {
  kind: "AlertWatch",
  phase: "dependents",
  references: (spec) =>
    spec.dashboard === undefined ? [] : [{ kind: "Dashboard" as const, name: spec.dashboard }],
  address: nothing,
  create: written,
  update: { plan: watched, learn: written },
  delete: written,
  observe: written,
  poll: { request: ({ alertId }) => ({ route: "getAlert", params: { id: alertId }, body: undefined }) },
  specPath: specPathOf("alertId"),
};

export const backupWatch: Complete<"BackupWatch"> = {
  kind: "BackupWatch",
  phase: "dependents",
  references: () => [],
  address: nothing,
  create: written,
  update: { plan: watched, learn: written },
  delete: written,
  observe: written,
  poll: {
    request: ({ organizationId, serviceId }) => ({
      route: "listBackups",
      params: { organizationId, serviceId },
      body: undefined,
    }),
  },
  specPath: specPathOf(),
};
