#!/usr/bin/env node
import { Argument, Command } from "commander";
import type { z } from "zod";
import type { Io } from "./commands/io.js";
import { Config, checkPlatformUrls, SimulatorConfig } from "./config.js";
import { readCredential } from "./credentials.js";
import { ConfigError, isDriftlessError, messageOf } from "./errors.js";
import { VERSION } from "./package.js";
import {
  type CommandName,
  environmentHelp,
  helpOf,
  inputOf,
  optionsOf,
  parseSettings,
  SETTINGS,
  type SettingTable,
  SIMULATOR_SETTINGS,
} from "./settings.js";

/**
 * The composition root: flags and environment become a Config, and each command's module does the
 * rest. The only file that reads process.env or calls process.exit. Every setting is described in
 * src/settings.ts; this file only says which command takes which.
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
  errIsTerminal: process.stderr.isTTY === true,
  // A line rewritten in place (carriage return, erase the line), only where a person watches it.
  ...(process.stderr.isTTY
    ? { progress: (line?: string) => process.stderr.write(`\r\x1b[2K${line ?? ""}`) }
    : {}),
};

const program = new Command("driftless")
  .description("Keeps a hosted analytics database platform equal to a git repository of YAML manifests.")
  .version(VERSION)
  .showHelpAfterError();
for (const option of optionsOf(SETTINGS, "program")) program.addOption(option);

/** A command taking the settings `table` gives it: their flags, and its environment-only ones in --help. */
function command(name: CommandName, description: string, table: SettingTable = SETTINGS): Command {
  const created = program.command(name).description(description);
  for (const option of optionsOf(table, name)) created.addOption(option);
  const environment = environmentHelp(table, name);
  if (environment) created.addHelpText("after", environment);
  return created;
}

/** The [dir] argument of validate, plan and apply: wins over --manifests and DRIFTLESS_MANIFESTS. */
const manifestsArgument = () => new Argument("[dir]", helpOf(SETTINGS.manifests));

/** The settings of a command as parsed from its command line and the environment. */
function parsedSettings<S extends z.ZodType>(
  schema: S,
  table: SettingTable,
  used: Command,
  dir?: string,
): z.infer<S> {
  const input = inputOf(table, { ...program.opts(), ...used.opts() }, env);
  return parseSettings(schema, table, dir ? { ...input, manifests: dir } : input);
}
const config = (used: Command, dir?: string): Config => parsedSettings(Config, SETTINGS, used, dir);

/** The settings of a command that talks to the platform: both API URLs, or neither (the simulator). */
function platformConfig(used: Command, dir?: string): Config {
  const settings = config(used, dir);
  checkPlatformUrls(settings);
  return settings;
}

/** The output of validate and apply: markdown is a pull-request comment of plan's only. */
function textOrJson(output: Config["output"]): "text" | "json" {
  if (output === "markdown") throw new ConfigError("--output markdown (DRIFTLESS_OUTPUT) is for plan only");
  return output;
}

/** Runs a command's module and exits with its code; a thrown error is printed and exits 1. */
function action(run: (used: Command, argument?: string) => Promise<number>) {
  return async (...args: unknown[]) => {
    const used = args.at(-1) as Command;
    const argument = typeof args[0] === "string" ? args[0] : undefined;
    try {
      process.exitCode = await run(used, argument);
    } catch (error) {
      io.err(
        `driftless: ${isDriftlessError(error) ? messageOf(error) : ((error as Error)?.stack ?? String(error))}`,
      );
      process.exitCode = 1;
    }
  };
}

command("validate", "parse and validate every manifest offline (exit 0 valid, 1 invalid)")
  .addArgument(manifestsArgument())
  .action(
    action(async (used, dir) => {
      const { validateCommand } = await import("./commands/validate.js");
      const settings = config(used, dir);
      const output = textOrJson(settings.output);
      return validateCommand(
        settings,
        { output, resolveSecrets: settings.resolveSecrets, contract: settings.contract },
        io,
      );
    }),
  );

command(
  "plan",
  "show what an apply would send, sending no write (exit 0 nothing to do, 2 changes pending, 1 error)",
)
  .addArgument(manifestsArgument())
  .action(
    action(async (used, dir) => {
      const settings = config(used, dir);
      const { output, base } = settings;
      // plan --base reads no state, URL, credential or secret: only the two sets of manifests.
      if (base) {
        const { planBaseCommand } = await import("./commands/plan-base.js");
        return planBaseCommand({ manifests: settings.manifests, base, output }, io);
      }
      checkPlatformUrls(settings);
      const { planCommand } = await import("./commands/plan-apply.js");
      const secrets = settings.secretsMode;
      const { allowCreate, allowDeletes } = settings;
      return planCommand(settings, { output, secrets, allowCreate, allowDeletes }, io);
    }),
  );

command(
  "apply",
  "one reconcile pass, then exit (exit 0 all in sync (every resource Synced or Unmanaged), 1 otherwise)",
)
  .addArgument(manifestsArgument())
  .action(
    action(async (used, dir) => {
      const { applyCommand } = await import("./commands/plan-apply.js");
      const settings = platformConfig(used, dir);
      const output = textOrJson(settings.output);
      const { allowCreate, allowDeletes } = settings;
      return applyCommand(settings, { output, allowCreate, allowDeletes }, io);
    }),
  );

command(
  "run",
  "the daemon: watch, schedule, reconcile, poll and serve HTTP until SIGTERM/SIGINT (exit 0 on SIGTERM/SIGINT)",
).action(
  action(async (used) => {
    const { runCommand } = await import("./commands/run.js");
    return runCommand(platformConfig(used), io);
  }),
);

command(
  "import",
  "write a manifest adopting each live object that no manifest in the folder addresses yet (exit 0 done, 1 error)",
).action(
  action(async (used) => {
    const { importCommand } = await import("./commands/import.js");
    const settings = platformConfig(used);
    const { importKinds: kinds, importOrganizations: organizations, importServices: services } = settings;
    const out = settings.importOut ?? settings.manifests;
    return importCommand(
      settings,
      { kinds, organizations, services, out, dryRun: settings.importDryRun },
      io,
    );
  }),
);

command(
  "forget",
  "drop the record of one resource (its manifest deleted from git) from the state now (exit 0 dropped, 1 no such record or the state is locked)",
)
  .addArgument(new Argument("<resource>", "Kind/name, like Dashboard/overview"))
  .action(
    action(async (used, id) => {
      const { forgetCommand } = await import("./commands/forget.js");
      return forgetCommand(config(used), id ?? "", io);
    }),
  );

command(
  "copy-state",
  "copy the state between the file store (--state-dir) and the Kubernetes store (--namespace), to move to or from the HA overlay (exit 0 copied and read back, 1 refused or failed)",
).action(
  action(async (used) => {
    const { copyStateCommand } = await import("./commands/copy-state.js");
    const settings = config(used);
    const { copyTo, overwrite } = settings;
    if (!copyTo) throw new ConfigError(`--to (${SETTINGS.copyTo.env}) is required: kubernetes or file`);
    return copyStateCommand(settings, { to: copyTo, overwrite }, io);
  }),
);

command(
  "status",
  "a running daemon's resources as a table, only those not Synced unless --all (exit 0 all Synced (or Unmanaged), 1 otherwise (Suspended too), 3 daemon unreachable)",
).action(
  action(async (used) => {
    const { statusCommand } = await import("./commands/status.js");
    const settings = config(used);
    const { all, watch, listen, url } = settings;
    return statusCommand(
      {
        all,
        watch,
        listen,
        url,
        output: textOrJson(settings.output),
        token: readCredential(settings.statusToken),
        ...(watch ? { signal: interrupted() } : {}),
      },
      io,
    );
  }),
);

for (const [name, description] of [
  [
    "suspend",
    "stop every write of a running daemon until resume, kept across restarts (exit 0 done, 1 refused, 3 daemon unreachable)",
  ],
  ["resume", "let a suspended daemon write again (exit 0 done, 1 refused, 3 daemon unreachable)"],
] as const) {
  command(name, description).action(
    action(async (used) => {
      const { switchCommand } = await import("./commands/suspend.js");
      const settings = config(used);
      const token = readCredential(settings.statusToken) ?? readCredential(settings.webhookToken);
      const { listen, url, reason } = settings;
      return switchCommand({ action: name, listen, url, token, reason }, io);
    }),
  );
}

command(
  "reconcile",
  "ask a running daemon for a pass now and print its result (exit 0 all in sync (every resource Synced or Unmanaged), 1 otherwise (or refused), 3 daemon unreachable)",
).action(
  action(async (used) => {
    const { reconcileCommand } = await import("./commands/reconcile.js");
    const settings = config(used);
    const token = readCredential(settings.statusToken) ?? readCredential(settings.webhookToken);
    const { listen, url, allowDeletes } = settings;
    return reconcileCommand({ listen, url, token, output: textOrJson(settings.output), allowDeletes }, io);
  }),
);

/** Aborted at the first SIGINT or SIGTERM (Ctrl-C ends `status --watch` with its last exit code). */
function interrupted(): AbortSignal {
  const controller = new AbortController();
  const stop = () => controller.abort();
  process.once("SIGINT", stop);
  process.once("SIGTERM", stop);
  return controller.signal;
}

command(
  "simulator",
  "serve a simulator of both platform APIs on local ports, for demos and tests (exit 0 on SIGTERM/SIGINT)",
  SIMULATOR_SETTINGS,
).action(
  action(async (used) => {
    const { simulatorCommand } = await import("./commands/simulator.js");
    return simulatorCommand(parsedSettings(SimulatorConfig, SIMULATOR_SETTINGS, used), io);
  }),
);

program
  .command("schema")
  .description("print the JSON Schema of the manifests, for editors (yaml-language-server) (exit 0)")
  .action(
    action(async () => {
      const { schemaCommand } = await import("./commands/schema.js");
      return schemaCommand(io);
    }),
  );

program
  .command("completion")
  .description("print a shell completion script, as in source <(driftless completion bash) (exit 0)")
  .addArgument(new Argument("<shell>", "bash, zsh or fish").choices(["bash", "zsh", "fish"]))
  .action(
    action(async (_used, shell) => {
      const { completionCommand } = await import("./commands/completion.js");
      return completionCommand(program, shell as "bash" | "zsh" | "fish", io);
    }),
  );

await program.parseAsync(process.argv);
