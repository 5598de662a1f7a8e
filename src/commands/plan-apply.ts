import { type Config, platformOf, SIMULATOR_PLATFORM } from "../config.js";
import { parseDuration } from "../duration.js";
import { escapeJson, escapeLine } from "../escape.js";
import { formatView } from "../plan/render.js";
import { type PlanView, relabelView } from "../plan/view.js";
import { createRead } from "../platform/client.js";
import { createReconciler, planPass } from "../reconcile/engine.js";
import type { DriftCounts } from "../reconcile/plan-drift.js";
import type { EngineDeps, ResourceOutcome } from "../reconcile/types.js";
import type { NextStep, PassResult } from "../resources.js";
import { NOT_COMPARED, withoutSecretValues } from "../review/secret-references.js";
import { SETTINGS } from "../settings.js";
import { inSync } from "./in-sync.js";
import { commandLogger, type Io, type OutputFormat } from "./io.js";
import {
  idsNotChecked,
  type PlanDocument,
  type PlanOutputFormat,
  printPlan,
  READS_ON,
} from "./plan-output.js";
import {
  createPlatform,
  createStateStore,
  keySecretsOf,
  managementKeyIdOf,
  secretKeyOf,
} from "./platform.js";

export type PlanApplyOptions = {
  output: OutputFormat;
  /** `Kind/name` of resources whose earlier create has an Unknown outcome and may be attempted again. */
  allowCreate?: readonly string[];
  /** This pass may send up to this many deletes past DRIFTLESS_MAX_DELETES (--allow-deletes). */
  allowDeletes?: number | undefined;
};

export type PlanOptions = Omit<PlanApplyOptions, "output"> & {
  output: PlanOutputFormat;
  /** `skip`: plan without reading any secret value (default `read`). */
  secrets?: "read" | "skip";
};

const FIRST_CONTACT =
  "the state holds no record: every resource is planned as a first contact. The daemon's state is not available here, so this shows what a first apply would send, not what the running daemon will send next.";
const SECRETS_SKIPPED =
  "secret values were not read (--secrets skip): a changed secret value cannot be seen, and secret fields show (not compared).";
/** With reads off, "in sync" is against what driftless last applied, never the live objects. */
const NOT_READ =
  'the live objects were not read (DRIFTLESS_READS=off): "in sync" means as driftless last applied it, and a change made in the platform\'s console is not shown.';
const IDS_NOT_CHECKED = idsNotChecked(`${SETTINGS.reads.env}=off`, READS_ON);

/** Said first by plan and apply while the built-in simulator stands in for the platform. */
const SIMULATED = `the platform is the BUILT-IN SIMULATOR, not a real platform (${SETTINGS.managementUrl.env} and ${SETTINGS.observabilityUrl.env} are unset): nothing here is on, or reaches, a real platform.`;

/**
 * `driftless plan`: what an apply would send, per resource, with secrets masked. Reads the state
 * without its lock and sends nothing. Exit 0 nothing to do, 2 changes pending, 1 error (a manifest
 * problem, a refused change, an unknown outcome, a secret that cannot be read). With `secrets: "skip"`
 * no secret is read and none can be the cause of an error.
 */
export async function planCommand(config: Config, options: PlanOptions, io: Io): Promise<number> {
  const logger = commandLogger(config, io, "warn");
  const store = createStateStore(config, { logger, readOnly: true });
  const skip = options.secrets === "skip";
  try {
    const platform = config.reads === "on" ? await createPlatform(config, { logger }) : undefined;
    try {
      const report = await planPass(
        {
          ...engineDeps(config, io, logger, store),
          ...(platform ? { read: createRead(platform.client) } : {}),
        },
        {
          ...(options.allowCreate ? { allowCreate: options.allowCreate } : {}),
          ...(options.allowDeletes === undefined ? {} : { allowDeletes: options.allowDeletes }),
          ...(skip ? { desired: withoutSecretValues } : {}),
          ...(platform ? { readDrift: true } : {}),
        },
      );
      const { reads } = report;
      const platformName = platformOf(config);
      const notices = [
        ...(platformName === SIMULATOR_PLATFORM ? [SIMULATED] : []),
        ...(report.stateEmpty ? [FIRST_CONTACT] : []),
        ...(skip ? [SECRETS_SKIPPED] : []),
        ...(reads ? [readsNotice(reads)] : [NOT_READ, IDS_NOT_CHECKED]),
      ];
      const doc: PlanDocument = {
        mode: "state",
        platform: platformName,
        ...(report.revision ? { revision: report.revision } : {}),
        firstContact: report.stateEmpty,
        secrets: skip ? "skip" : "read",
        ...(reads ? { reads } : {}),
        notices,
        problems: report.problems,
        resources: skip ? report.resources.map((view) => relabelView(view, NOT_COMPARED)) : report.resources,
      };
      return printPlan(doc, options.output, io, "driftless plan");
    } finally {
      await platform?.close();
    }
  } finally {
    await store.close();
  }
}

/**
 * What plan says of its reads: how many live objects of applied resources it read and how many of those
 * differ from git; the ids of the resources driftless never applied, checked to exist (each that does
 * was compared with its live object before it was planned, so that its first apply sends only what
 * differs from git), and those that name no object; how many could not be read; and how many name no id
 * yet (a first apply creates them: nothing to read).
 */
function readsNotice({ read, drifted, unread, unapplied, checked, missing }: DriftCounts): string {
  const parts = [
    read + unread === 0
      ? "no live object of a resource driftless applied was read: it has applied none of these resources yet"
      : drifted === 0
        ? `the live objects of ${read} resource(s) were read: none was changed outside git`
        : `the live objects of ${read} resource(s) were read: ${drifted} changed outside git, shown as the changes that put git's values back (an apply, or the daemon's next write, sends them)`,
  ];
  if (checked > 0)
    parts.push(
      `the ids of ${checked} resource(s) driftless has not applied yet were checked: ${missing === 0 ? "each names an object of the platform" : `${missing} name no object (shown as errors)`}; those found were compared with git (their first apply sends only what differs)`,
    );
  if (unread > 0) parts.push(`${unread} could not be read (see their notes)`);
  if (unapplied > 0)
    parts.push(`${unapplied} resource(s) that name no id yet are not read (a first apply creates them)`);
  return parts.join("; ");
}

/**
 * `driftless apply`: one reconcile pass, printing each resource as it finishes and a summary. Exit 0
 * when the pass is ok and every resource in sync (in-sync.ts: Synced, or Unmanaged), 1 otherwise (a
 * Suspended one too).
 */
export async function applyCommand(config: Config, options: PlanApplyOptions, io: Io): Promise<number> {
  const logger = commandLogger(config, io, "warn");
  const store = createStateStore(config, { logger });
  try {
    const platform = await createPlatform(config, { logger });
    try {
      const sent: PlanView[] = [];
      let failedRequests = 0;
      const onResource = (outcome: ResourceOutcome) => {
        sent.push(...outcome.sent);
        failedRequests += outcome.failedRequests ?? 0;
        // In-sync resources are only counted: a pass over 10,000 of them must not print 10,000 lines.
        const quiet =
          outcome.status.status === "Synced" && outcome.sent.length === 0 && !outcome.status.message;
        if (options.output === "text" && !quiet) io.out(progressLine(outcome));
      };
      if (options.output === "text" && platform.simulator) io.out(escapeLine(`NOTE: ${SIMULATED}`));
      const reconciler = createReconciler({
        ...engineDeps(config, io, logger, store),
        send: platform.send,
        ...(config.reads === "on" ? { read: createRead(platform.client), readDrift: true } : {}),
        managementKeyId: platform.managementKeyId,
        credentialVersion: platform.credentialVersion,
        keySecrets: keySecretsOf(config),
        onResource,
      });
      const result = await reconciler.pass({
        trigger: "cli",
        ...(options.allowCreate ? { allowCreate: options.allowCreate } : {}),
        ...(options.allowDeletes === undefined ? {} : { allowDeletes: options.allowDeletes }),
      });
      const exitCode = result.ok && inSync(result.statuses) ? 0 : 1;
      if (options.output === "json") {
        const document = { platform: platform.name, ...result, sent, exitCode };
        io.out(escapeJson(JSON.stringify(document, null, 2)));
      } else io.out(applySummary(result, { answered: sent.length, failed: failedRequests }));
      return exitCode;
    } finally {
      await platform.close();
    }
  } finally {
    await store.close();
  }
}

/** What each next step other than done is called in the summary, in this order. */
const WHAT_NEXT: readonly (readonly [NextStep, string])[] = [
  ["retry", "to retry"],
  ["change", "waiting for a changed manifest, secret or key"],
  ["operator", "needing an operator"],
];

/**
 * The last line of apply: requests sent (those answered with an error among them), resources per
 * status, and what comes next when not done.
 */
function applySummary(result: PassResult, requests: { answered: number; failed: number }): string {
  const sent = requests.answered + requests.failed;
  const failed = requests.failed > 0 ? ` (${requests.failed} answered with an error)` : "";
  const count = (status: string) => result.statuses.filter((s) => s.status === status).length;
  const optional = (status: string) => (count(status) > 0 ? `, ${count(status)} ${status}` : "");
  const statuses = `${count("Synced")} Synced, ${count("Pending")} Pending, ${count("Failed")} Failed, ${count("Unknown")} Unknown, ${count("Invalid")} Invalid${optional("Unmanaged")}${optional("Deleted")}${optional("Suspended")}`;
  const next = WHAT_NEXT.flatMap(([step, label]) => {
    const n = result.statuses.filter((s) => s.next === step).length;
    return n > 0 ? [`${n} ${label}`] : [];
  });
  const then = next.length > 0 ? `; next: ${next.join(", ")}` : "";
  const suspended = count("Suspended");
  const held =
    suspended === 1
      ? "; not in sync: 1 suspended (nothing is sent for it until driftless resume, or until its driftless/suspend annotation is removed)"
      : suspended > 1
        ? `; not in sync: ${suspended} suspended (nothing is sent for them until driftless resume, or until their driftless/suspend annotations are removed)`
        : "";
  return `Apply: ${sent} request(s) sent${failed}; ${statuses}; ${result.manifestErrors} manifest problem(s)${then}${held}.`;
}

function engineDeps(
  config: Config,
  io: Io,
  logger: EngineDeps["logger"],
  store: EngineDeps["store"],
): EngineDeps {
  return {
    manifests: config.manifests,
    store,
    secrets: { env: io.env, secretsDir: config.secretsDir },
    logger,
    managementKeyId: managementKeyIdOf(config),
    ...secretKeyOf(config),
    unmanagedRetentionMs: parseDuration(config.unmanagedRetention),
    prune: config.prune === "on",
    maxDeletes: config.maxDeletes,
  };
}

/** `Synced   DataPipe/x  PATCH /v1/...` plus the diff of what was sent, or the reason it is not Synced. */
function progressLine({ status, sent }: ResourceOutcome): string {
  const head = `${status.status.padEnd(8)} ${status.kind}/${status.name}`;
  const lines = [escapeLine(head + (status.message ? `  ${status.message}` : ""))];
  for (const view of sent) lines.push(...formatView(view).map((line) => `    ${line}`));
  return lines.join("\n");
}
