#!/usr/bin/env node
import { Command, Option } from "commander";
import type { Io } from "./commands/io.js";
import { Config, type Credential } from "./config.js";
import { ConfigError, isDriftlessError, messageOf } from "./errors.js";
import { VERSION } from "./version.js";

/**
 * The composition root: flags and environment become a Config, and each command's module does the
 * rest. The only file that reads process.env or calls process.exit.
 */

// A reader that stops early (`driftless validate | head`) closes the pipe: not an error of ours.
process.stdout.on("error", (error: NodeJS.ErrnoException) => {
  if (error.code !== "EPIPE") throw error;
  process.exit(process.exitCode ?? 0);
});

const env = process.env;
const io: Io = {
  out: (text) => process.stdout.write(text.endsWith("\n") ? text : `${text}\n`),
  err: (text) => process.stderr.write(text.endsWith("\n") ? text : `${text}\n`),
  env,
};

/** A credential from NAME, or from the file named by NAME_FILE. */
function credential(name: string): Credential | undefined {
  const file = env[`${name}_FILE`];
  if (file) return { file };
  const value = env[name];
  return value ? { value } : undefined;
}

const opt = (flags: string, description: string, envName?: string) => {
  const option = new Option(flags, description);
  return envName ? option.env(envName) : option;
};
const output = (formats = ["text", "json"]) =>
  opt("-o, --output <format>", formats.join(", "), "DRIFTLESS_OUTPUT").choices(formats).default("text");
const manifestsArg = "[dir]";
const manifestsHelp = "folder of manifests (default: $DRIFTLESS_MANIFESTS or ./manifests)";

type Flags = Record<string, unknown>;

const LEADER_SETTINGS: Record<string, string> = {
  leaseDurationSeconds: "DRIFTLESS_LEADER_LEASE_DURATION",
  renewDeadlineSeconds: "DRIFTLESS_LEADER_RENEW_DEADLINE",
  retryPeriodSeconds: "DRIFTLESS_LEADER_RETRY_PERIOD",
};

/** The environment variable of a Config field, as users know it: `managementUrl` → DRIFTLESS_MANAGEMENT_URL. */
function settingName(field: string): string {
  return LEADER_SETTINGS[field] ?? `DRIFTLESS_${field.replace(/[A-Z]/g, (c) => `_${c}`).toUpperCase()}`;
}

/** The Config of a command: its flags over the environment over the defaults. */
function config(flags: Flags, dir?: string): Config {
  const parsed = Config.safeParse({
    manifests: dir ?? flags.manifests,
    stateDir: flags.stateDir,
    stateStore: flags.stateStore,
    managementUrl: flags.managementUrl,
    managementKeyId: credential("DRIFTLESS_MANAGEMENT_KEY_ID"),
    managementKeySecret: credential("DRIFTLESS_MANAGEMENT_KEY_SECRET"),
    observabilityUrl: flags.observabilityUrl,
    observabilityToken: credential("DRIFTLESS_OBSERVABILITY_TOKEN"),
    secretsDir: flags.secretsDir,
    listen: flags.listen,
    reconcileSchedule: flags.reconcileSchedule,
    pollSchedule: flags.pollSchedule,
    reassertSchedule: flags.reassertSchedule,
    webhookToken: credential("DRIFTLESS_WEBHOOK_TOKEN"),
    logLevel: flags.logLevel,
    leaderElect: flags.leaderElect === undefined ? undefined : String(flags.leaderElect) === "true",
    namespace: flags.namespace,
    leaseDurationSeconds: flags.leaderLeaseDuration,
    renewDeadlineSeconds: flags.leaderRenewDeadline,
    retryPeriodSeconds: flags.leaderRetryPeriod,
    allowCreate: String(flags.allowCreate ?? "")
      .split(/[\s,]+/)
      .filter(Boolean),
  });
  if (!parsed.success) {
    const problems = parsed.error.issues
      .map((i) => `${settingName(String(i.path[0]))}: ${i.message}`)
      .join("; ");
    throw new ConfigError(`invalid settings: ${problems}`);
  }
  return parsed.data;
}

const program = new Command("driftless")
  .description("Keeps a hosted analytics database platform equal to a git repository of YAML manifests.")
  .version(VERSION)
  .showHelpAfterError()
  .addOption(
    opt("--log-level <level>", "pino log level", "DRIFTLESS_LOG_LEVEL").choices([
      "trace",
      "debug",
      "info",
      "warn",
      "error",
      "fatal",
      "silent",
    ]),
  );

const common = {
  allowCreate: () =>
    opt(
      "--allow-create <resources>",
      "comma-separated Kind/name whose earlier create has an Unknown outcome: allow one new create attempt",
      "DRIFTLESS_ALLOW_CREATE",
    ),
  manifests: () => opt("--manifests <dir>", manifestsHelp, "DRIFTLESS_MANIFESTS"),
  secretsDir: () =>
    opt("--secrets-dir <dir>", "the only folder fromFile secrets may read", "DRIFTLESS_SECRETS_DIR"),
  stateDir: () => opt("--state-dir <dir>", "folder of the state store", "DRIFTLESS_STATE_DIR"),
  stateStore: () =>
    opt("--state-store <kind>", "file or kubernetes", "DRIFTLESS_STATE_STORE").choices([
      "file",
      "kubernetes",
    ]),
  namespace: () =>
    opt("--namespace <ns>", "namespace of the Lease and the state Secret", "DRIFTLESS_NAMESPACE"),
  managementUrl: () =>
    opt(
      "--management-url <url>",
      "management API base URL (unset: built-in simulator)",
      "DRIFTLESS_MANAGEMENT_URL",
    ),
  observabilityUrl: () =>
    opt(
      "--observability-url <url>",
      "observability API base URL (unset: built-in simulator)",
      "DRIFTLESS_OBSERVABILITY_URL",
    ),
};

/** Runs a command's module and exits with its code; a thrown error is printed and exits 1. */
function action(run: (flags: Flags, dir?: string) => Promise<number>) {
  return async (...args: unknown[]) => {
    const command = args.at(-1) as Command;
    const flags = { ...program.opts(), ...command.opts() };
    const dir = typeof args[0] === "string" ? args[0] : undefined;
    try {
      process.exitCode = await run(flags, dir);
    } catch (error) {
      io.err(
        `driftless: ${isDriftlessError(error) ? messageOf(error) : ((error as Error)?.stack ?? String(error))}`,
      );
      process.exitCode = 1;
    }
  };
}

program
  .command("validate")
  .description("parse and validate every manifest offline (exit 0 valid, 1 invalid)")
  .argument(manifestsArg, manifestsHelp)
  .addOption(common.manifests())
  .addOption(output())
  .addOption(common.secretsDir())
  .addOption(
    opt("--resolve-secrets", "also check that every referenced secret exists", "DRIFTLESS_RESOLVE_SECRETS"),
  )
  .action(
    action(async (flags, dir) => {
      const { validateCommand } = await import("./commands/validate.js");
      return validateCommand(
        config(flags, dir),
        { output: flags.output as "text" | "json", resolveSecrets: Boolean(flags.resolveSecrets) },
        io,
      );
    }),
  );

for (const name of ["plan", "apply"] as const) {
  program
    .command(name)
    .description(
      name === "plan"
        ? "show what an apply would send, sending no write (exit 0 nothing to do, 2 changes pending, 1 error)"
        : "one reconcile pass, then exit (exit 0 all in sync, 1 any resource failed)",
    )
    .argument(manifestsArg, manifestsHelp)
    .addOption(common.manifests())
    .addOption(output(name === "plan" ? ["text", "json", "markdown"] : undefined))
    .addOption(common.secretsDir())
    .addOption(common.stateDir())
    .addOption(common.stateStore())
    .addOption(common.namespace())
    .addOption(common.managementUrl())
    .addOption(common.observabilityUrl())
    .addOption(common.allowCreate())
    .action(
      action(async (flags, dir) => {
        const commands = await import("./commands/plan-apply.js");
        if (name === "plan" && typeof flags.base === "string") {
          // No Config: plan --base reads no state, URL, credential or secret, not even their settings.
          const manifests = dir ?? (flags.manifests as string | undefined) ?? "./manifests";
          const output = flags.output as "text" | "json" | "markdown";
          return commands.planBaseCommand({ manifests, base: flags.base, output }, io);
        }
        const settings = config(flags, dir);
        if (name === "plan") {
          const output = flags.output as "text" | "json" | "markdown";
          const secrets = flags.secrets as "read" | "skip";
          return commands.planCommand(settings, { output, secrets, allowCreate: settings.allowCreate }, io);
        }
        return commands.applyCommand(
          settings,
          { output: flags.output as "text" | "json", allowCreate: settings.allowCreate },
          io,
        );
      }),
    );
}
// plan's own flags (plan --base, -o markdown, --secrets) are added to the command made above.
program.commands
  .find((command) => command.name() === "plan")
  ?.addOption(
    opt(
      "--base <git-ref|folder>",
      "plan from manifests alone: the base (a git revision of the repository holding DIR, or a folder) stands for what the platform has",
    ),
  )
  .addOption(
    opt(
      "--secrets <mode>",
      "read: resolve secrets to compare them; skip: read no secret value",
      "DRIFTLESS_SECRETS_MODE",
    )
      .choices(["read", "skip"])
      .default("read"),
  );

program
  .command("run")
  .description("the daemon: watch, schedule, reconcile, poll and serve HTTP until SIGTERM/SIGINT")
  .addOption(common.manifests())
  .addOption(common.secretsDir())
  .addOption(common.stateDir())
  .addOption(common.stateStore())
  .addOption(common.namespace())
  .addOption(common.managementUrl())
  .addOption(common.observabilityUrl())
  .addOption(opt("--listen <host:port>", "address of the HTTP server", "DRIFTLESS_LISTEN"))
  .addOption(
    opt(
      "--reconcile-schedule <cron>",
      "cron expression of full reconcile passes",
      "DRIFTLESS_RECONCILE_SCHEDULE",
    ),
  )
  .addOption(
    opt("--poll-schedule <cron>", "cron expression of alert and backup polls", "DRIFTLESS_POLL_SCHEDULE"),
  )
  .addOption(
    opt(
      "--reassert-schedule <cron>",
      'cron expression of passes that also re-send unchanged resources, or "off" (default hourly)',
      "DRIFTLESS_REASSERT_SCHEDULE",
    ),
  )
  .addOption(common.allowCreate())
  .addOption(opt("--leader-elect [bool]", "only the holder of a Lease writes", "DRIFTLESS_LEADER_ELECT"))
  .addOption(
    opt(
      "--leader-lease-duration <s>",
      "seconds others wait after the last renewal (15)",
      "DRIFTLESS_LEADER_LEASE_DURATION",
    ),
  )
  .addOption(
    opt(
      "--leader-renew-deadline <s>",
      "seconds a leader may fail to renew before it stops (10)",
      "DRIFTLESS_LEADER_RENEW_DEADLINE",
    ),
  )
  .addOption(
    opt(
      "--leader-retry-period <s>",
      "seconds between attempts to acquire or renew (2)",
      "DRIFTLESS_LEADER_RETRY_PERIOD",
    ),
  )
  .action(
    action(async (flags) => {
      const { runCommand } = await import("./commands/run.js");
      return runCommand(config(flags), io);
    }),
  );

program
  .command("simulator")
  .description("serve a simulator of both platform APIs on local ports, for demos and tests")
  .addOption(opt("--host <host>", "address to bind", "DRIFTLESS_SIMULATOR_HOST").default("127.0.0.1"))
  .addOption(
    opt(
      "--management-port <port>",
      "port of the management API (0: any free)",
      "DRIFTLESS_SIMULATOR_MANAGEMENT_PORT",
    ).default("8124"),
  )
  .addOption(
    opt(
      "--observability-port <port>",
      "port of the observability API (0: any free)",
      "DRIFTLESS_SIMULATOR_OBSERVABILITY_PORT",
    ).default("8125"),
  )
  .addOption(
    opt("--fixture <file>", "YAML fixture of the initial platform state", "DRIFTLESS_SIMULATOR_FIXTURE"),
  )
  .addOption(opt("--seed <n>", "seed of the fault injection's randomness", "DRIFTLESS_SIMULATOR_SEED"))
  .addOption(
    opt(
      "--rate-limit <on|off>",
      "the platform's rate limits (10/10 s, 100/min)",
      "DRIFTLESS_SIMULATOR_RATE_LIMIT",
    )
      .choices(["on", "off"])
      .default("on"),
  )
  .addOption(
    opt(
      "--state-file <file>",
      "keep the simulated platform in this JSON file between runs (no credential is written)",
      "DRIFTLESS_SIMULATOR_STATE_FILE",
    ),
  )
  .addOption(
    opt(
      "--endpoint-ready-after <ms>",
      "how long a new reverse private endpoint stays Provisioning (default 5000)",
      "DRIFTLESS_SIMULATOR_ENDPOINT_READY_AFTER",
    ),
  )
  .action(
    action(async (flags) => {
      const { simulatorCommand } = await import("./commands/simulator.js");
      return simulatorCommand(flags, io);
    }),
  );

program
  .command("schema")
  .description("print the JSON Schema of the manifests, for editors (yaml-language-server)")
  .action(
    action(async () => {
      const { schemaCommand } = await import("./commands/schema.js");
      return schemaCommand(io);
    }),
  );

await program.parseAsync(process.argv);
