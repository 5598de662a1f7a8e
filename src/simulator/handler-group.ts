import type { Contract } from "../platform/routes.js";
import type { Handlers } from "./http.js";
import type { PlatformState } from "./model.js";

/** What the observability API's handler groups (dashboards, alerts, webhooks) are given. */
export type ObservabilityDeps = { state: PlatformState; contract: Contract };

/** The handlers of some routes of the observability API. */
export type Group<N extends keyof Handlers<"observability", string>> = Pick<
  Handlers<"observability", string>,
  N
>;
