import type { Config } from "../config.js";
import { formatView, renderPlan, summarize } from "../plan/render.js";
import type { PlanView } from "../plan/view.js";
import { createReconciler, planPass } from "../reconcile/engine.js";
import type { EngineDeps, ResourceOutcome } from "../reconcile/types.js";
import { createLogger } from "../telemetry/logger.js";
import type { Io, OutputFormat } from "./io.js";
import { createPlatform, createStateStore, managementKeyIdOf } from "./platform.js";

export type PlanApplyOptions = {
  output: OutputFormat;
  /** `Kind/name` of resources whose earlier create has an Unknown outcome and may be attempted again. */
  allowCreate?: readonly string[];
};

/**
 * `driftless plan`: what an apply would send, per resource, with secrets masked. Reads the state
 * without its lock and sends nothing. Exit 0 nothing to do, 2 changes pending, 1 error (a manifest
 * problem, a refused change, an unknown outcome, a secret that cannot be read).
 */
export async function planCommand(config: Config, options: PlanApplyOptions, io: Io): Promise<number> {
  const logger = createLogger(config.logLevel);
  const store = createStateStore(config, { logger, readOnly: true });
  try {
    const report = await planPass(engineDeps(config, io, logger, store), {
      ...(options.allowCreate ? { allowCreate: options.allowCreate } : {}),
    });
    const summary = summarize(report.resources, report.problems);
    const code =
      summary.invalid + summary.errors + summary.unknown > 0
        ? 1
        : summary.toSend + summary.toAdopt + summary.waiting > 0
          ? 2
          : 0;
    if (options.output === "json") {
      io.out(JSON.stringify({ ...report, summary, exitCode: code }, null, 2));
    } else {
      io.out(renderPlan(report.resources, report.problems, report.revision));
    }
    return code;
  } finally {
    await store.close();
  }
}

/**
 * `driftless apply`: one reconcile pass, printing each resource as it finishes and a summary. Exit 0
 * when every resource is Synced and the manifests have no problem, 1 otherwise.
 */
export async function applyCommand(config: Config, options: PlanApplyOptions, io: Io): Promise<number> {
  const logger = createLogger(config.logLevel);
  const store = createStateStore(config, { logger });
  try {
    const platform = await createPlatform(config, { logger, warn: io.err });
    try {
      const sent: PlanView[] = [];
      const onResource = (outcome: ResourceOutcome) => {
        sent.push(...outcome.sent);
        // In-sync resources are only counted: a pass over 10,000 of them must not print 10,000 lines.
        const quiet =
          outcome.status.status === "Synced" && outcome.sent.length === 0 && !outcome.status.message;
        if (options.output === "text" && !quiet) io.out(progressLine(outcome));
      };
      const reconciler = createReconciler({
        ...engineDeps(config, io, logger, store),
        send: platform.send,
        managementKeyId: platform.managementKeyId,
        onResource,
      });
      const result = await reconciler.pass({
        trigger: "cli",
        ...(options.allowCreate ? { allowCreate: options.allowCreate } : {}),
      });
      const count = (status: string) => result.statuses.filter((s) => s.status === status).length;
      if (options.output === "json") {
        io.out(JSON.stringify({ ...result, sent, exitCode: result.ok ? 0 : 1 }, null, 2));
      } else {
        const problems = result.manifestErrors;
        io.out(
          `Apply: ${sent.length} request(s) sent; ${count("Synced")} Synced, ${count("Pending")} Pending, ${count("Failed")} Failed, ${count("Unknown")} Unknown, ${count("Invalid")} Invalid; ${problems} manifest problem(s).`,
        );
      }
      return result.ok ? 0 : 1;
    } finally {
      await platform.close();
    }
  } finally {
    await store.close();
  }
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
  };
}

/** `Synced   DataPipe/x  PATCH /v1/...` plus the diff of what was sent, or the reason it is not Synced. */
function progressLine({ status, sent }: ResourceOutcome): string {
  const head = `${status.status.padEnd(8)} ${status.kind}/${status.name}`;
  const lines = [head + (status.message ? `  ${status.message}` : "")];
  for (const view of sent) lines.push(...formatView(view).map((line) => `    ${line}`));
  return lines.join("\n");
}
