import { readdir, stat } from "node:fs/promises";
import { dirname, resolve } from "node:path";
import { Cron } from "croner";
import type { Config } from "../config.js";
import { type Credential, readCredential } from "../credentials.js";
import { parseListen } from "../daemon/http-server.js";
import { isOff } from "../daemon/schedules.js";
import { ConfigError, causeOf, errnoOf, isConfigError, messageOf } from "../errors.js";
import { SETTINGS } from "../settings.js";
import { secretKeyOf } from "./platform.js";

/**
 * The settings of `driftless run` that can be checked before anything starts: a bad one stops the
 * start with one ConfigError naming its variable, before the built-in simulator, the HTTP server, the
 * watch or a pass; first, whether the built-in simulator may stand in for a platform whose URLs are
 * unset. (That both URLs are set, or neither, is checked by the command line before this, with plan's
 * and apply's; credentials next, when the platform's clients are made, still before any of these.)
 */
export async function checkRunSettings(
  config: Config,
  env: Readonly<Record<string, string | undefined>>,
): Promise<void> {
  checkSimulatorWanted(config, env);
  parseListen(config.listen);
  for (const key of ["reconcileSchedule", "pollSchedule", "reassertSchedule"] as const) {
    checkSchedule(SETTINGS[key].env, config[key]);
  }
  await checkManifests(config.manifests);
  if (config.stateStore === "file") await checkStateDir(config.stateDir);
  // The key and the tokens are read again at each use (a rotated file is taken up); here they must be
  // there at all.
  secretKeyOf(config).secretKey?.();
  for (const key of ["statusToken", "webhookToken"] as const) checkTokenFile(SETTINGS[key].env, config[key]);
  if (config.stateStore === "kubernetes" || config.leaderElect) await checkKubernetes(config.namespace);
}

/**
 * Where driftless runs in production (a pod, the Kubernetes state store, leader election), a daemon
 * without its platform URLs is a mistake, not a demo: it would report Synced about a platform that
 * does not exist. There the built-in simulator runs only when DRIFTLESS_SIMULATOR=builtin asks for it.
 */
function checkSimulatorWanted(config: Config, env: Readonly<Record<string, string | undefined>>): void {
  if (config.managementUrl || config.simulator === "builtin") return;
  const production = [
    ...(env.KUBERNETES_SERVICE_HOST ? ["it runs in a Kubernetes pod (KUBERNETES_SERVICE_HOST is set)"] : []),
    ...(config.stateStore === "kubernetes" ? [`${SETTINGS.stateStore.env}=kubernetes`] : []),
    ...(config.leaderElect ? [`${SETTINGS.leaderElect.env}=true`] : []),
  ];
  if (production.length === 0) return;
  const { managementUrl, observabilityUrl, simulator } = SETTINGS;
  throw new ConfigError(
    `${managementUrl.env} and ${observabilityUrl.env} are unset, and ${production.join(", ")}: not starting against the built-in simulator. Set both URLs (with their credentials) to reconcile the real platform, or ${simulator.env}=builtin to run the simulator on purpose`,
  );
}

/**
 * A token given as a file can be read and is not empty: a Secret mounted without its key leaves no file,
 * and an empty one matches no request, so the endpoints it guards would fail on every request instead
 * of the start failing once, saying why.
 */
function checkTokenFile(env: string, token: Credential | undefined): void {
  if (!token || !("file" in token)) return;
  let value: string | undefined;
  try {
    value = readCredential(token);
  } catch (error) {
    throw new ConfigError(
      `${env}_FILE: cannot read ${token.file} (${messageOf(causeOf(error))}): create it, or unset ${env}_FILE`,
    );
  }
  if (!value)
    throw new ConfigError(
      `${env}_FILE: ${token.file} is empty: write the token into it, or unset ${env}_FILE`,
    );
}

/** A cron expression croner accepts (5 fields, or 6 with seconds first), or "off". */
function checkSchedule(env: string, pattern: string): void {
  if (isOff(pattern)) return;
  try {
    new Cron(pattern, { paused: true }).stop();
  } catch (error) {
    throw new ConfigError(
      `${env}: "${pattern}" is not a cron expression (${messageOf(error)
        .replace(/^CronPattern: /, "")
        .replace(/\.$/, "")}): write 5 fields like "* * * * *" (every minute), or "off"`,
    );
  }
}

/**
 * The manifests folder exists and is a folder. One that does not exist yet is waited for only where
 * git-sync will create it: its link in git-sync's root, still empty before the first clone (or holding
 * git-sync's `.worktrees`); anywhere else a missing folder is a mistyped path.
 */
async function checkManifests(manifests: string): Promise<void> {
  const env = SETTINGS.manifests.env;
  const found = await stat(manifests).catch((error) => errnoOf(error) ?? "error");
  if (typeof found !== "string") {
    if (!found.isDirectory()) throw new ConfigError(`${env}: ${manifests} is not a folder`);
    return;
  }
  const parent = await readdir(dirname(resolve(manifests))).catch(() => undefined);
  const gitSyncRoot = parent?.every((name) => name === ".worktrees" || name === ".git") === true;
  if (found === "ENOENT" && gitSyncRoot) return;
  throw new ConfigError(
    `${env}: ${manifests} does not exist: create it, or point ${env} (--manifests) at your manifests folder`,
  );
}

/** The file store's folder is a folder, or does not exist yet (it is created). */
async function checkStateDir(stateDir: string): Promise<void> {
  const found = await stat(stateDir).catch(() => undefined);
  if (found && !found.isDirectory()) {
    throw new ConfigError(`${SETTINGS.stateDir.env}: ${stateDir} is not a folder`);
  }
}

/** The Kubernetes API the state Secret or the Lease needs is configured (nothing is requested yet). */
async function checkKubernetes(namespace: string | undefined): Promise<void> {
  // Imported only here: the Kubernetes client takes seconds to load.
  const { kubernetesTarget } = await import("../kubernetes/client.js");
  try {
    kubernetesTarget(namespace);
  } catch (error) {
    if (!isConfigError(error)) throw error;
    const uses = `${SETTINGS.stateStore.env}=kubernetes or ${SETTINGS.leaderElect.env}=true`;
    const named = error.message.includes(SETTINGS.stateStore.env);
    throw new ConfigError(named ? error.message : `${uses}: ${error.message}`);
  }
}
