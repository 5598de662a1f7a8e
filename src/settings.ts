import { Option } from "commander";
import { z } from "zod";
import type { Credential } from "./credentials.js";
import { Duration } from "./duration.js";
import { ConfigError } from "./errors.js";
import { IMPORT_KINDS } from "./import/kinds.js";
import { CONTRACTS } from "./platform/routes.js";
import { LOG_FORMATS } from "./telemetry/logger.js";

/**
 * Every setting of driftless, described once: its flag, its environment variable (and `_FILE` twin
 * for a credential), its parser with its default, and its help text. The commander options, the zod
 * Config, `--help` and the completion scripts all come from these tables; nothing else names a
 * setting's variable or repeats its default.
 */

export type CommandName =
  | "validate"
  | "plan"
  | "apply"
  | "run"
  | "status"
  | "suspend"
  | "resume"
  | "reconcile"
  | "forget"
  | "copy-state"
  | "import"
  | "simulator";

export type Setting = {
  /** Its environment variable; a flag given on the command line wins over it. */
  env: string;
  /**
   * commander flags (`--state-dir <dir>`). None for a credential: a command line is visible to every
   * user of the machine, so credentials come only from NAME or from the file named by NAME_FILE.
   */
  flag?: string;
  /** A credential: NAME, or NAME_FILE naming a file re-read on every use. */
  credential?: true;
  /** The commands that take it; "program" for an option of driftless itself (before the command). */
  commands: readonly CommandName[] | "program";
  /** The values the flag accepts (checked by commander, offered by --help and completion). */
  choices?: readonly string[];
  /**
   * Other values, and the help that names them, for some commands (plan's output also takes
   * markdown): each command's --help says only what it takes.
   */
  byCommand?: Partial<Record<CommandName, { choices: readonly string[]; help: string }>>;
  /** Parses the flag's or variable's text; its `.default()` is the setting's one default. */
  parser: z.ZodType;
  help: string;
};

export type SettingTable = Record<string, Setting>;

const Url = z.url({ protocol: /^https?$/ });
const Schedule = z.string().min(1);
const Seconds = z.coerce.number({ error: "must be a number of seconds" }).positive();
/** A boolean flag, or a variable of true/false (also 1/0, yes/no, on/off). */
const Bool = z.union([z.boolean(), z.stringbool()], { error: "must be true or false" });
const SecretValue = z.custom<Credential>().optional();
const Port = z.coerce.number().int().min(0).max(65_535, { error: "must be a port number from 0 to 65535" });
/** A comma- or space-separated list. */
const List = z.preprocess(
  (value) => (typeof value === "string" ? value.split(/[\s,]+/).filter(Boolean) : value),
  z.array(z.string()),
);

const PLATFORM: readonly CommandName[] = ["plan", "apply", "run"];
/** The commands that call the platform: those of a pass, and import (which only reads its lists). */
const CALLERS: readonly CommandName[] = [...PLATFORM, "import"];
/** The commands that open the state store (import reads it: which objects driftless created). */
const STATE: readonly CommandName[] = [...PLATFORM, "forget", "import"];
/** The commands that find the state stores: the store they open, or both (copy-state). */
const STATE_PLACES: readonly CommandName[] = [...STATE, "copy-state"];
const MANIFESTS: readonly CommandName[] = ["validate", "plan", "apply", "run"];
const LOG_LEVELS = ["trace", "debug", "info", "warn", "error", "fatal", "silent"] as const;
const OUTPUTS = ["text", "json", "markdown"] as const;
const STATE_STORES = ["file", "kubernetes"] as const;
/** The commands that talk to a running daemon's HTTP server. */
const DAEMON_CLIENTS: readonly CommandName[] = ["status", "suspend", "resume", "reconcile"];

const logLevel = {
  env: "DRIFTLESS_LOG_LEVEL",
  flag: "--log-level <level>",
  commands: "program",
  choices: LOG_LEVELS,
  // No one default: the daemon and the simulator log from info, the commands that print a report
  // from warn, so that their output is not mixed with log lines unless asked.
  parser: z.enum(LOG_LEVELS).optional(),
  help: "pino log level (unset: info for run and simulator, warn for the other commands)",
} satisfies Setting;

const logFormat = {
  env: "DRIFTLESS_LOG_FORMAT",
  flag: "--log-format <format>",
  commands: "program",
  choices: LOG_FORMATS,
  parser: z.enum(LOG_FORMATS).optional(),
  help: "json: a JSON object a line; pretty: a line a person reads (unset: pretty when stderr is a terminal, json otherwise)",
} satisfies Setting;

/** The settings of validate, plan, apply and run: the fields of Config. */
export const SETTINGS = {
  logLevel,
  logFormat,
  manifests: {
    env: "DRIFTLESS_MANIFESTS",
    flag: "--manifests <dir>",
    commands: [...MANIFESTS, "import"],
    parser: z.string().default("./manifests"),
    help: "folder of manifests",
  },
  output: {
    env: "DRIFTLESS_OUTPUT",
    flag: "-o, --output <format>",
    commands: ["validate", "plan", "apply", "status", "reconcile"],
    choices: ["text", "json"],
    byCommand: {
      plan: {
        choices: OUTPUTS,
        help: "text, json or markdown: a readable report, one JSON document, or a pull-request comment",
      },
    },
    parser: z.enum(OUTPUTS).default("text"),
    help: "text or json: a readable report, or one JSON document",
  },
  base: {
    env: "DRIFTLESS_PLAN_BASE",
    flag: "--base <git-ref|folder>",
    commands: ["plan"],
    parser: z.string().min(1).optional(),
    help: "plan from the manifests alone: the base (a git revision of the repository holding the manifests, or a folder written as a path: ./NAME, /path) stands for what the platform has; reads no state, credential, secret or network",
  },
  secretsMode: {
    env: "DRIFTLESS_SECRETS_MODE",
    flag: "--secrets <mode>",
    commands: ["plan"],
    choices: ["read", "skip"],
    parser: z.enum(["read", "skip"]).default("read"),
    help: "read: resolve secrets to compare them; skip: read no secret value (plan in CI)",
  },
  contract: {
    env: "DRIFTLESS_CONTRACT",
    flag: "--contract <contract>",
    commands: ["validate"],
    choices: CONTRACTS,
    parser: z.enum(CONTRACTS).default("minimal"),
    help: "full: also check each manifest against the platform's published contract (contracts/full/): required sourceIds, the grid's bounds, setting bounds, tag and name limits",
  },
  resolveSecrets: {
    env: "DRIFTLESS_RESOLVE_SECRETS",
    flag: "--resolve-secrets",
    commands: ["validate"],
    parser: Bool.default(false),
    help: "also check that every referenced secret exists",
  },
  secretsDir: {
    env: "DRIFTLESS_SECRETS_DIR",
    flag: "--secrets-dir <dir>",
    commands: MANIFESTS,
    parser: z.string().default("/var/run/secrets/driftless"),
    help: "the only folder fromFile secrets may read",
  },
  stateDir: {
    env: "DRIFTLESS_STATE_DIR",
    flag: "--state-dir <dir>",
    commands: STATE_PLACES,
    parser: z.string().default("./.driftless"),
    help: "folder of the state store",
  },
  stateStore: {
    env: "DRIFTLESS_STATE_STORE",
    flag: "--state-store <kind>",
    commands: STATE,
    choices: STATE_STORES,
    parser: z.enum(STATE_STORES).default("file"),
    help: "file or kubernetes",
  },
  copyTo: {
    env: "DRIFTLESS_COPY_STATE_TO",
    flag: "--to <store>",
    commands: ["copy-state"],
    choices: STATE_STORES,
    parser: z
      .enum(STATE_STORES, { error: "must be the store to copy the state into: file or kubernetes" })
      .optional(),
    help: "the store copy-state writes: kubernetes (the Secrets in the namespace) or file (the folder); it reads the other",
  },
  overwrite: {
    env: "DRIFTLESS_COPY_STATE_OVERWRITE",
    flag: "--overwrite",
    commands: ["copy-state"],
    parser: Bool.default(false),
    help: "let copy-state replace a state that holds records (unset: it refuses)",
  },
  stateKeyFile: {
    env: "DRIFTLESS_STATE_KEY_FILE",
    flag: "--state-key-file <file>",
    commands: PLATFORM,
    parser: z.string().min(1).optional(),
    help: "file holding the key of the state's secret hashes, kept outside the state (unset: kept in the state)",
  },
  namespace: {
    env: "DRIFTLESS_NAMESPACE",
    flag: "--namespace <ns>",
    commands: STATE_PLACES,
    parser: z.string().optional(),
    help: "namespace of the Lease and the state Secret (unset: the pod's own)",
  },
  managementUrl: {
    env: "DRIFTLESS_MANAGEMENT_URL",
    flag: "--management-url <url>",
    commands: CALLERS,
    parser: Url.optional(),
    help: "management API base URL, set with the observability one (both unset: built-in simulator)",
  },
  managementKeyId: {
    env: "DRIFTLESS_MANAGEMENT_KEY_ID",
    credential: true,
    commands: CALLERS,
    parser: SecretValue,
    help: "key id of the management API (required with DRIFTLESS_MANAGEMENT_URL)",
  },
  managementKeySecret: {
    env: "DRIFTLESS_MANAGEMENT_KEY_SECRET",
    credential: true,
    commands: CALLERS,
    parser: SecretValue,
    help: "key secret of the management API (required with DRIFTLESS_MANAGEMENT_URL)",
  },
  managementCredentialsDir: {
    env: "DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR",
    flag: "--management-credentials-dir <dir>",
    commands: CALLERS,
    parser: z.string().min(1).optional(),
    help: "several organizations: a folder with <organizationId>.key-id and <organizationId>.key-secret per organization (unset: the single key for every organization)",
  },
  simulator: {
    env: "DRIFTLESS_SIMULATOR",
    flag: "--simulator <builtin>",
    commands: CALLERS,
    choices: ["builtin"],
    parser: z.enum(["builtin"]).optional(),
    help: "builtin: use the built-in simulator on purpose, with neither platform URL set (unset: the simulator only where both URLs are unset and run is not in a cluster, on the Kubernetes state store or electing a leader)",
  },
  observabilityUrl: {
    env: "DRIFTLESS_OBSERVABILITY_URL",
    flag: "--observability-url <url>",
    commands: CALLERS,
    parser: Url.optional(),
    help: "observability API base URL, set with the management one (both unset: built-in simulator)",
  },
  observabilityToken: {
    env: "DRIFTLESS_OBSERVABILITY_TOKEN",
    credential: true,
    commands: CALLERS,
    parser: SecretValue,
    help: "bearer token of the observability API (required with DRIFTLESS_OBSERVABILITY_URL)",
  },
  allowInsecure: {
    env: "DRIFTLESS_ALLOW_INSECURE",
    flag: "--allow-insecure",
    commands: CALLERS,
    parser: Bool.default(false),
    help: "accept an http:// platform URL that is not loopback (credentials travel in clear)",
  },
  maxServerWaitSeconds: {
    env: "DRIFTLESS_MAX_SERVER_WAIT",
    flag: "--max-server-wait <s>",
    commands: CALLERS,
    parser: Seconds.default(300),
    help: "longest Retry-After / X-RateLimit-Reset wait honoured, in seconds",
  },
  unmanagedRetention: {
    env: "DRIFTLESS_UNMANAGED_RETENTION",
    flag: "--unmanaged-retention <duration>",
    commands: PLATFORM,
    parser: Duration.default("30d"),
    help: "how long the record of a deleted manifest is kept (status Unmanaged, nothing sent) before it is dropped, like 30d or 12h",
  },
  allowCreate: {
    env: "DRIFTLESS_ALLOW_CREATE",
    flag: "--allow-create <resources>",
    commands: PLATFORM,
    parser: List.default([]),
    help: "comma-separated Kind/name whose earlier create has an Unknown outcome: allow one new create attempt",
  },
  prune: {
    env: "DRIFTLESS_PRUNE",
    flag: "--prune <on|off>",
    commands: PLATFORM,
    choices: ["on", "off"],
    parser: z.enum(["on", "off"]).default("on"),
    help: "off: every object whose manifest left git is orphaned (left as it is, no longer managed), whatever its deletion policy; none is deleted",
  },
  maxDeletes: {
    env: "DRIFTLESS_MAX_DELETES",
    flag: "--max-deletes <n>",
    commands: PLATFORM,
    parser: z.coerce
      .number({ error: "must be a number" })
      .int({ error: "must be a whole number" })
      .min(0, { error: "must be 0 or more" })
      .default(5),
    help: "the most deletes one pass sends: a pass that would send more sends none of them, and they wait for an operator (--allow-deletes)",
  },
  allowDeletes: {
    env: "DRIFTLESS_ALLOW_DELETES",
    flag: "--allow-deletes <n>",
    commands: ["plan", "apply", "reconcile"],
    parser: z.coerce
      .number({ error: "must be a number" })
      .int({ error: "must be a whole number" })
      .min(0, { error: "must be 0 or more" })
      .optional(),
    help: "let this pass send up to N deletes that the mass-deletion guard holds (more than DRIFTLESS_MAX_DELETES)",
  },
  importKinds: {
    env: "DRIFTLESS_IMPORT_KINDS",
    flag: "--kind <kind...>",
    commands: ["import"],
    choices: IMPORT_KINDS,
    parser: z
      .preprocess(
        (value) => (typeof value === "string" ? value.split(/[\s,]+/).filter(Boolean) : value),
        z.array(z.enum(IMPORT_KINDS, { error: `must be kinds among ${IMPORT_KINDS.join(", ")}` })),
      )
      .default([]),
    help: "the kinds to import, the flag repeated or the variable comma-separated (unset: every kind whose list can be read)",
  },
  importOrganizations: {
    env: "DRIFTLESS_IMPORT_ORGANIZATIONS",
    flag: "--organization <id...>",
    commands: ["import"],
    parser: List.default([]),
    help: "organizations whose API keys, data pipes and reverse private endpoints are listed (unset: those the folder's manifests name, and those of DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR)",
  },
  importServices: {
    env: "DRIFTLESS_IMPORT_SERVICES",
    flag: "--service <id...>",
    commands: ["import"],
    parser: List.default([]),
    help: "services whose data pipes and reverse private endpoints are listed, in each organization (unset: those the folder's manifests name)",
  },
  importOut: {
    env: "DRIFTLESS_IMPORT_DIR",
    flag: "-o, --out <dir>",
    commands: ["import"],
    parser: z.string().min(1).optional(),
    help: "the folder import reads (what is already addressed) and writes to, a folder per kind (unset: the manifests folder)",
  },
  importDryRun: {
    env: "DRIFTLESS_IMPORT_DRY_RUN",
    flag: "--dry-run",
    commands: ["import"],
    parser: Bool.default(false),
    help: "list the files import would write, and write none",
  },
  keySecretsDir: {
    env: "DRIFTLESS_KEY_SECRETS_DIR",
    flag: "--key-secrets-dir <dir>",
    commands: ["apply", "run"],
    parser: z.string().min(1).optional(),
    help: "where the id and secret of an API key driftless creates are written for a secretTarget {file: NAME} (unset: key-secrets in the state folder)",
  },
  listen: {
    env: "DRIFTLESS_LISTEN",
    flag: "--listen <host:port>",
    commands: ["run", ...DAEMON_CLIENTS],
    parser: z.string().default("0.0.0.0:9464"),
    help: "address of the HTTP server (status, suspend, resume, reconcile: of the daemon to ask, unless --url)",
  },
  url: {
    env: "DRIFTLESS_URL",
    flag: "--url <url>",
    commands: DAEMON_CLIENTS,
    parser: Url.optional(),
    help: "base URL of the running daemon (unset: http:// and the listen address, 0.0.0.0 as 127.0.0.1)",
  },
  all: {
    env: "DRIFTLESS_STATUS_ALL",
    flag: "--all",
    commands: ["status"],
    parser: Bool.default(false),
    help: "list every resource, not only those that are not Synced",
  },
  watch: {
    env: "DRIFTLESS_STATUS_WATCH",
    flag: "--watch",
    commands: ["status"],
    parser: Bool.default(false),
    help: "print the table again whenever it changes, until interrupted",
  },
  reason: {
    env: "DRIFTLESS_SUSPEND_REASON",
    flag: "--reason <text>",
    commands: ["suspend"],
    parser: z.string().min(1).optional(),
    help: "why every write is suspended, shown by status, the status page and the logs",
  },
  reconcileSchedule: {
    env: "DRIFTLESS_RECONCILE_SCHEDULE",
    flag: "--reconcile-schedule <cron>",
    commands: ["run"],
    parser: Schedule.default("* * * * *"),
    help: 'cron expression of full reconcile passes, or "off"',
  },
  pollSchedule: {
    env: "DRIFTLESS_POLL_SCHEDULE",
    flag: "--poll-schedule <cron>",
    commands: ["run"],
    parser: Schedule.default("* * * * *"),
    help: 'cron expression of alert and backup polls, or "off"',
  },
  reassertSchedule: {
    env: "DRIFTLESS_REASSERT_SCHEDULE",
    flag: "--reassert-schedule <cron>",
    commands: ["run"],
    parser: Schedule.default("0 * * * *"),
    help: 'cron expression of passes that also re-send unchanged resources (healing edits made behind git\'s back), or "off"',
  },
  reads: {
    env: "DRIFTLESS_READS",
    flag: "--reads <on|off>",
    commands: ["run", "plan", "apply"],
    choices: ["on", "off"],
    parser: z.enum(["on", "off"]).default("off"),
    help: "on: the platform serves the published contract's reads; run reads each managed object on the poll schedule to find drift, plan and apply read them to show and send back what changed outside git (off: nothing is read, and Synced means the platform accepted what git says)",
  },
  alertFiringStates: {
    env: "DRIFTLESS_ALERT_FIRING_STATES",
    flag: "--alert-firing-states <states>",
    commands: ["run"],
    parser: List.default(["ALERT"]),
    help: "comma-separated alert states (any case) in which driftless_alert_firing is 1",
  },
  webhookToken: {
    env: "DRIFTLESS_WEBHOOK_TOKEN",
    credential: true,
    commands: ["run", "suspend", "resume", "reconcile"],
    parser: SecretValue,
    help: "token of POST /hooks/sync (unset: the webhook is off); suspend, resume and reconcile use it when DRIFTLESS_STATUS_TOKEN is unset",
  },
  statusToken: {
    env: "DRIFTLESS_STATUS_TOKEN",
    credential: true,
    commands: ["run", ...DAEMON_CLIENTS],
    parser: SecretValue,
    help: "bearer token that GET /status, the page / and POST /suspend, /resume and /reconcile require (unset: /status and / are open; a daemon on a loopback address without any token takes suspend, resume and reconcile from this machine)",
  },
  buildRevision: {
    env: "DRIFTLESS_BUILD_REVISION",
    flag: "--build-revision <commit>",
    commands: ["run"],
    parser: z.string().min(1).default("unknown"),
    help: "git commit driftless was built from, shown by driftless_build_info (the image sets it from its REVISION build argument)",
  },
  notifyUrl: {
    env: "DRIFTLESS_NOTIFY_URL",
    flag: "--notify-url <url>",
    commands: ["run"],
    parser: Url.optional(),
    help: "URL a signed JSON webhook is POSTed to when a pass's result changes and on an unknown create (unset: off)",
  },
  notifySecret: {
    env: "DRIFTLESS_NOTIFY_SECRET",
    credential: true,
    commands: ["run"],
    parser: SecretValue,
    help: "key of the webhook body's HMAC-SHA256, sent as X-Driftless-Signature: sha256=<hex> (required with DRIFTLESS_NOTIFY_URL)",
  },
  githubRepository: {
    env: "DRIFTLESS_GITHUB_REPOSITORY",
    flag: "--github-repository <owner/repo>",
    commands: ["run"],
    parser: z
      .string()
      .regex(/^[A-Za-z0-9_.-]+\/[A-Za-z0-9_.-]+$/, { error: "must be owner/repo" })
      .optional(),
    help: "repository whose synced commit gets a commit status (context driftless) after each pass (unset: off)",
  },
  githubToken: {
    env: "DRIFTLESS_GITHUB_TOKEN",
    credential: true,
    commands: ["run"],
    parser: SecretValue,
    help: "token of the commit statuses (statuses: write) (required with DRIFTLESS_GITHUB_REPOSITORY)",
  },
  githubApiUrl: {
    env: "DRIFTLESS_GITHUB_API_URL",
    flag: "--github-api-url <url>",
    commands: ["run"],
    parser: Url.default("https://api.github.com"),
    help: "GitHub API base URL (GitHub Enterprise: https://HOST/api/v3)",
  },
  githubTargetUrl: {
    env: "DRIFTLESS_GITHUB_TARGET_URL",
    flag: "--github-target-url <url>",
    commands: ["run"],
    parser: Url.optional(),
    help: "link of the commit status (e.g. the daemon's status page)",
  },
  leaderElect: {
    env: "DRIFTLESS_LEADER_ELECT",
    flag: "--leader-elect [bool]",
    commands: ["run"],
    parser: Bool.default(false),
    help: "only the holder of a Lease writes",
  },
  leaseDurationSeconds: {
    env: "DRIFTLESS_LEADER_LEASE_DURATION",
    flag: "--leader-lease-duration <s>",
    commands: ["run"],
    parser: Seconds.default(15),
    help: "seconds others wait after the last renewal",
  },
  renewDeadlineSeconds: {
    env: "DRIFTLESS_LEADER_RENEW_DEADLINE",
    flag: "--leader-renew-deadline <s>",
    commands: ["run"],
    parser: Seconds.default(10),
    help: "seconds a leader may fail to renew before it stops",
  },
  retryPeriodSeconds: {
    env: "DRIFTLESS_LEADER_RETRY_PERIOD",
    flag: "--leader-retry-period <s>",
    commands: ["run"],
    parser: Seconds.default(2),
    help: "seconds between attempts to acquire or renew",
  },
} satisfies SettingTable;

const SIMULATOR: readonly CommandName[] = ["simulator"];

/** The settings of `driftless simulator`: the fields of SimulatorConfig. */
export const SIMULATOR_SETTINGS = {
  logLevel,
  logFormat,
  contract: {
    env: "DRIFTLESS_SIMULATOR_CONTRACT",
    flag: "--contract <contract>",
    commands: SIMULATOR,
    choices: CONTRACTS,
    parser: z.enum(CONTRACTS).default("full"),
    help: "minimal: the seven endpoints driftless must always work with; full: the platform's published contract (its validation, reads and answer shapes)",
  },
  host: {
    env: "DRIFTLESS_SIMULATOR_HOST",
    flag: "--host <host>",
    commands: SIMULATOR,
    parser: z.string().min(1).default("127.0.0.1"),
    help: "address to bind",
  },
  managementPort: {
    env: "DRIFTLESS_SIMULATOR_MANAGEMENT_PORT",
    flag: "--management-port <port>",
    commands: SIMULATOR,
    parser: Port.default(8124),
    help: "port of the management API (0: any free)",
  },
  observabilityPort: {
    env: "DRIFTLESS_SIMULATOR_OBSERVABILITY_PORT",
    flag: "--observability-port <port>",
    commands: SIMULATOR,
    parser: Port.default(8125),
    help: "port of the observability API (0: any free)",
  },
  fixture: {
    env: "DRIFTLESS_SIMULATOR_FIXTURE",
    flag: "--fixture <file>",
    commands: SIMULATOR,
    parser: z.string().min(1).optional(),
    help: "YAML fixture of the initial platform state (docs/simulator-fixtures.md)",
  },
  printFixture: {
    env: "DRIFTLESS_SIMULATOR_PRINT_FIXTURE",
    flag: "--print-fixture",
    commands: SIMULATOR,
    parser: Bool.default(false),
    help: "print the fixture the simulator would start with as YAML (the built-in one, or --fixture's with its defaults filled in), and exit",
  },
  seed: {
    env: "DRIFTLESS_SIMULATOR_SEED",
    flag: "--seed <n>",
    commands: SIMULATOR,
    parser: z.coerce.number().int({ error: "must be an integer" }).optional(),
    help: "seed of the fault injection's randomness",
  },
  rateLimit: {
    env: "DRIFTLESS_SIMULATOR_RATE_LIMIT",
    flag: "--rate-limit <on|off>",
    commands: SIMULATOR,
    choices: ["on", "off"],
    parser: z.enum(["on", "off"]).default("on"),
    help: "the platform's rate limits (10/10 s, 100/min)",
  },
  stateFile: {
    env: "DRIFTLESS_SIMULATOR_STATE_FILE",
    flag: "--state-file <file>",
    commands: SIMULATOR,
    parser: z.string().min(1).optional(),
    help: "keep the simulated platform in this JSON file between runs (no credential is written)",
  },
  endpointReadyAfter: {
    env: "DRIFTLESS_SIMULATOR_ENDPOINT_READY_AFTER",
    flag: "--endpoint-ready-after <ms>",
    commands: SIMULATOR,
    parser: z.coerce.number().int().min(0, { error: "must be a whole number of milliseconds" }).optional(),
    help: "how long a new reverse private endpoint stays Provisioning, in milliseconds (unset: the simulator's 5000)",
  },
} satisfies SettingTable;

type Parsers<T extends SettingTable> = { [K in keyof T]: T[K]["parser"] };

/** The zod object of a table: one field per setting, parsed by its parser. */
export function schemaOf<T extends SettingTable>(table: T): z.ZodObject<Parsers<T>> {
  const shape = Object.fromEntries(Object.entries(table).map(([key, setting]) => [key, setting.parser]));
  return z.object(shape) as unknown as z.ZodObject<Parsers<T>>;
}

/** The settings of `table` that `command` takes ("program": driftless's own options). */
export function settingsOf(table: SettingTable, command: CommandName | "program"): Array<[string, Setting]> {
  return Object.entries(table).filter(([, setting]) =>
    setting.commands === "program"
      ? command === "program"
      : setting.commands.includes(command as CommandName),
  );
}

/** The default a setting's parser gives when it is unset, or undefined. */
export function defaultOf(setting: Setting): unknown {
  return setting.parser instanceof z.ZodDefault ? setting.parser.def.defaultValue : undefined;
}

/** `help (default: x; env: NAME)`, as `--help` of `command` shows it. */
export function helpOf(setting: Setting, command?: CommandName): string {
  const value = defaultOf(setting);
  const shown = Array.isArray(value) ? (value.length > 0 ? value.join(",") : undefined) : value;
  const extras = [
    ...(shown !== undefined && shown !== false ? [`default: ${String(shown)}`] : []),
    `env: ${setting.env}${setting.credential ? ` or ${setting.env}_FILE` : ""}`,
  ];
  const help = (command && setting.byCommand?.[command]?.help) ?? setting.help;
  return `${help} (${extras.join("; ")})`;
}

/** The commander options of the flagged settings of `command`, in table order. */
export function optionsOf(table: SettingTable, command: CommandName | "program"): Option[] {
  return settingsOf(table, command).flatMap(([, setting]) => {
    if (!setting.flag) return [];
    const named = command === "program" ? undefined : command;
    const own = named && setting.byCommand?.[named];
    const option = new Option(setting.flag, helpOf(setting, named));
    const choices = own?.choices ?? setting.choices;
    return [choices ? option.choices(choices) : option];
  });
}

/** The environment-only settings (credentials) of `command`, for the end of its `--help`. */
export function environmentHelp(table: SettingTable, command: CommandName): string | undefined {
  const lines = settingsOf(table, command)
    .filter(([, setting]) => !setting.flag)
    .map(([, setting]) => `  ${`${setting.env}[_FILE]`.padEnd(40)} ${setting.help}`);
  return lines.length > 0
    ? `\nEnvironment only (NAME_FILE names a file re-read on every use):\n${lines.join("\n")}`
    : undefined;
}

/**
 * The raw value of each setting of `table`: its flag when given on the command line, else its
 * environment variable (a credential: {file} from NAME_FILE over {value} from NAME), else undefined
 * for its parser's default. `flags` holds only what commander parsed from the command line.
 */
export function inputOf(
  table: SettingTable,
  flags: Record<string, unknown>,
  env: Readonly<Record<string, string | undefined>>,
): Record<string, unknown> {
  return Object.fromEntries(
    Object.entries(table).map(([key, setting]) => {
      if (setting.credential) return [key, credentialFrom(setting.env, env)];
      const flag = setting.flag ? flags[new Option(setting.flag).attributeName()] : undefined;
      return [key, flag ?? env[setting.env]];
    }),
  );
}

function credentialFrom(
  name: string,
  env: Readonly<Record<string, string | undefined>>,
): Credential | undefined {
  const file = env[`${name}_FILE`];
  if (file) return { file };
  const value = env[name];
  return value ? { value } : undefined;
}

/**
 * `input` parsed by `schema`; throws ConfigError naming the environment variable of every bad
 * setting, as users know them (`DRIFTLESS_MANAGEMENT_URL: Invalid URL`).
 */
export function parseSettings<S extends z.ZodType>(
  schema: S,
  table: SettingTable,
  input: Record<string, unknown>,
): z.infer<S> {
  const parsed = schema.safeParse(input);
  if (parsed.success) return parsed.data;
  const problems = parsed.error.issues.map((issue) => {
    const key = String(issue.path[0] ?? "");
    return `${table[key]?.env ?? key}: ${issue.message}`;
  });
  throw new ConfigError(`invalid settings: ${problems.join("; ")}`);
}
