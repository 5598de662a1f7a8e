import { createHash } from "node:crypto";
import { join } from "node:path";
import { type Config, checkPlatformUrls, cleartextUrls, platformOf } from "../config.js";
import { readCredential } from "../credentials.js";
import { type Api, ConfigError } from "../errors.js";
import type { SecretsApi } from "../kubernetes/key-secrets-api.js";
import {
  type Budget,
  type BudgetUsage,
  createBudget,
  MANAGEMENT_BUDGET,
  OBSERVABILITY_BUDGET,
} from "../platform/budget.js";
import { createPlatformClient, type ManagementClients, type PlatformClient } from "../platform/client.js";
import { createHttpClient, type HttpClient, type HttpClientOptions } from "../platform/http.js";
import { bearerAuthorization } from "../platform/observability.js";
import { createSender, type Sender } from "../reconcile/send.js";
import { SETTINGS } from "../settings.js";
import { defaultIds } from "../simulator/default-fixture.js";
import type { Simulator } from "../simulator/index.js";
import { createFileStore } from "../state/file-store.js";
import { createKeySecrets, type KeySecrets } from "../state/key-secrets.js";
import type { StateStore } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";
import { type ManagementKeys, managementKeys } from "./management-keys.js";

/**
 * Builds what talks to the outside from a Config: the API clients (one rate budget per credential,
 * shared by every caller in the process) and the state store. Shared by plan, apply and run.
 */

/** One API's rate budget now, as /status shows it. */
export type ApiBudget = BudgetUsage & { api: "management" | "observability" };

export type Platform = {
  /** Calls any route of the platform's two APIs. */
  client: PlatformClient;
  /** A fingerprint of the credentials an organization's requests use, which changes when one is rotated. */
  credentialVersion: (organizationId?: string) => string;
  /** Sends planned requests through the client. */
  send: Sender;
  /**
   * The key id driftless authenticates with on `organizationId`'s behalf (read again at each call: the
   * file may be rotated). Throws ConfigError when that organization has no key.
   */
  managementKeyId: (organizationId: string) => string;
  /**
   * Which management key (its source, never a secret) an organization's requests go with: organizations
   * that share one share its rate budget. An organization without a key is its own.
   */
  keyOf: (organizationId: string) => string;
  /** Each rate budget now (one per management key, one for observability), for /status. */
  budgets(): ApiBudget[];
  /** "simulator" while the built-in simulator stands in for the platform, else the management API's origin. */
  name: string;
  /** Set when the built-in simulator stands in for the platform. */
  simulator?: Simulator;
  /** Closes the clients' pools and the built-in simulator. */
  close(): Promise<void>;
};

export type PlatformDeps = {
  logger: Logger;
  metrics?: Metrics;
  /** Overrides of the HTTP clients' options (tests: shorter time-outs, smaller budgets). */
  http?: Partial<Pick<HttpClientOptions, "timeoutMs" | "retry">>;
  /** Overrides of the budgets (tests: a smaller window). Default MANAGEMENT_BUDGET, OBSERVABILITY_BUDGET. */
  budgets?: { management?: typeof MANAGEMENT_BUDGET; observability?: typeof OBSERVABILITY_BUDGET };
  /**
   * "later": the caller logs the built-in simulator's warning itself (warnOfSimulator), so that `run`
   * prints its status page's address first. Default: at once.
   */
  simulatorWarning?: "later";
  /**
   * The grants of each budget's window a read never takes (the daemon's DAEMON_READ_HEADROOM, kept for
   * changes from git); unset: reads may take the whole window (plan, apply).
   */
  readHeadroom?: Readonly<Record<Api, number>>;
};

/**
 * The key of the secrets' hashes when DRIFTLESS_STATE_KEY_FILE names one (read at each pass, so a
 * rotated key applies at once: every secret then counts as changed and is sent again once).
 */
export function secretKeyOf(config: Config): { secretKey?: () => string } {
  const file = config.stateKeyFile;
  if (!file) return {};
  return {
    secretKey: () => {
      const env = SETTINGS.stateKeyFile.env;
      let key: string | undefined;
      try {
        key = readCredential({ file });
      } catch {
        throw new ConfigError(`${env}: cannot read ${file}: create the key file, or unset ${env}`);
      }
      if (!key) throw new ConfigError(`${env}: ${file} is empty`);
      return key;
    },
  };
}

/**
 * The key id of `config` per organization, for the lock-out guard of `plan`, which starts no client:
 * the built-in simulator's when no management URL is configured; the single key's (undefined when
 * unset, as plan needs no credential) without DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR; else the key of
 * the organization, throwing ConfigError when it has none (plan shows the resource refused).
 */
export function managementKeyIdOf(config: Config): (organizationId: string) => string | undefined {
  if (!config.managementUrl) return () => defaultIds.managementKeyId;
  if (!config.managementCredentialsDir) return () => readCredential(config.managementKeyId);
  const keys = managementKeys(config);
  return (organizationId) => keys.of(organizationId).id();
}

/**
 * The API clients of `config`. With DRIFTLESS_MANAGEMENT_URL and DRIFTLESS_OBSERVABILITY_URL both unset,
 * the built-in simulator is started in-process on a free port, with its own credentials, and a warning
 * is logged (see warnOfSimulator); so is a loud warning for an `http://` URL to another machine that
 * DRIFTLESS_ALLOW_INSECURE accepted. Throws ConfigError when one URL is set without the other, or a URL
 * without its credentials.
 */
export async function createPlatform(config: Config, deps: PlatformDeps): Promise<Platform> {
  checkPlatformUrls(config);
  const simulator = config.managementUrl ? undefined : await startBuiltInSimulator(config, deps);
  if (simulator && deps.simulatorWarning !== "later") warnOfSimulator(config, simulator, deps.logger);
  warnOfCleartext(config, deps);
  const sim = simulator?.credentials;
  const keys = config.managementUrl
    ? managementKeys(config)
    : managementKeys(config, { id: sim?.managementKeyId ?? "", secret: sim?.managementKeySecret ?? "" });
  const observabilityAuth = observabilityAuthorization(config, simulator);
  // Fail at start rather than on the first request of a pass.
  keys.check();
  observabilityAuth();

  const maxServerWaitMs = config.maxServerWaitSeconds * 1000;
  const limits = { ...deps, maxServerWaitMs };
  const management = managementClients(config.managementUrl ?? simulator?.managementUrl ?? "", keys, limits);
  const observabilityBudget = budgetOf("observability", limits);
  const observabilityHttp = httpClient(
    "observability",
    config.observabilityUrl ?? simulator?.observabilityUrl ?? "",
    observabilityAuth,
    observabilityBudget,
    limits,
  );
  const platformClient = createPlatformClient({
    // One key for every organization: one client, whose requests and metrics are a single key's.
    management: keys.perOrganization ? management.of : management.of(""),
    observability: observabilityHttp,
  });
  return {
    name: platformOf(config),
    client: platformClient,
    send: createSender(platformClient),
    // A hash, never the credentials: it only tells that they changed (a rotated key file).
    credentialVersion: (organizationId) =>
      createHash("sha256")
        .update(`${keys.of(organizationId ?? "").authorization()}\n${observabilityAuth()}`)
        .digest("hex"),
    managementKeyId: (organizationId) => keys.of(organizationId).id(),
    keyOf: (organizationId) => {
      try {
        return keys.of(organizationId).source;
      } catch {
        return `organization ${organizationId}`;
      }
    },
    budgets: () => [
      ...management.budgets(),
      { api: "observability" as const, ...observabilityBudget.usage() },
    ],
    ...(simulator ? { simulator } : {}),
    async close() {
      await Promise.all([management.close(), observabilityHttp.close()]);
      await simulator?.close();
    },
  };
}

/** Starts the built-in simulator for both APIs (neither URL is set). */
async function startBuiltInSimulator(config: Config, deps: PlatformDeps): Promise<Simulator> {
  const { startSimulator } = await import("../simulator/index.js");
  // The simulated platform is kept beside the file state, so that one run after another meets the
  // platform the last one left, as with a real platform (state ids stay valid).
  const stateFile =
    config.stateStore === "file" ? join(config.stateDir, "simulator-platform.json") : undefined;
  // The published contract: it refuses what the platform refuses, and shows a newcomer its answers.
  const simulator = await startSimulator({
    contract: "full",
    logger: deps.logger.child({ component: "simulator" }),
    stateFile,
  });
  return simulator;
}

/**
 * Says loudly that the built-in simulator stands in for the platform, and why: asked for by name
 * (DRIFTLESS_SIMULATOR=builtin), or both URLs unset. One line, through the logger: readable on a
 * terminal, parsed by a log collector.
 */
export function warnOfSimulator(
  config: Pick<Config, "simulator">,
  simulator: Pick<Simulator, "managementUrl" | "observabilityUrl">,
  logger: Logger,
): void {
  const why =
    config.simulator === "builtin"
      ? `${SETTINGS.simulator.env}=builtin`
      : `${SETTINGS.managementUrl.env} and ${SETTINGS.observabilityUrl.env} unset`;
  const { managementUrl, observabilityUrl } = simulator;
  logger.warn(
    { managementUrl, observabilityUrl },
    `${why}: using the BUILT-IN SIMULATOR, not a real platform (management ${managementUrl}, observability ${observabilityUrl})`,
  );
}

/** Config refuses these URLs unless DRIFTLESS_ALLOW_INSECURE is true; then every start says so. */
function warnOfCleartext(config: Config, deps: PlatformDeps): void {
  for (const { env, url } of cleartextUrls(config)) {
    const message = `${env} is ${url}: the platform credentials travel IN CLEAR over the network (accepted by ${SETTINGS.allowInsecure.env}=true); use https://`;
    deps.logger.warn({ setting: env, url }, message);
  }
}

/** The observability API's Authorization header, read from the credential at every call (files rotate). */
function observabilityAuthorization(config: Config, simulator: Simulator | undefined): () => string {
  if (!config.observabilityUrl) {
    return () => bearerAuthorization(simulator?.credentials.observabilityToken ?? "");
  }
  return () => {
    const token = readCredential(config.observabilityToken);
    if (!token) {
      throw new ConfigError(
        `${SETTINGS.observabilityToken.env} (or ${SETTINGS.observabilityToken.env}_FILE) is required with ${SETTINGS.observabilityUrl.env}`,
      );
    }
    return bearerAuthorization(token);
  };
}

/**
 * One management HTTP client per key, made on first use: each key has its own rate budget, since the
 * platform limits each key. Organizations without a key file of their own share the single key's.
 */
function managementClients(
  baseUrl: string,
  keys: ManagementKeys,
  deps: PlatformDeps & { maxServerWaitMs: number },
): { of: ManagementClients; budgets(): ApiBudget[]; close(): Promise<void> } {
  const clients = new Map<string, { client: HttpClient; budget: Budget }>();
  return {
    of(organizationId) {
      const key = keys.of(organizationId);
      let made = clients.get(key.source);
      if (!made) {
        const budget = budgetOf("management", deps);
        made = { client: httpClient("management", baseUrl, key.authorization, budget, deps), budget };
        clients.set(key.source, made);
      }
      return made.client;
    },
    budgets: () =>
      [...clients.values()].map(({ budget }) => ({ api: "management" as const, ...budget.usage() })),
    close: async () => {
      await Promise.all([...clients.values()].map(({ client }) => client.close()));
    },
  };
}

/** A new rate budget of one API (one per credential: the platform limits each key and token). */
function budgetOf(api: Api, deps: PlatformDeps & { maxServerWaitMs: number }): Budget {
  const limits =
    api === "management"
      ? (deps.budgets?.management ?? MANAGEMENT_BUDGET)
      : (deps.budgets?.observability ?? OBSERVABILITY_BUDGET);
  const readHeadroom = deps.readHeadroom?.[api];
  return createBudget({
    ...limits,
    ...(readHeadroom ? { readHeadroom } : {}),
    maxServerWaitMs: deps.maxServerWaitMs,
  });
}

/** One API's HTTP client, with its own rate budget (one per credential, shared by every caller). */
function httpClient(
  api: "management" | "observability",
  baseUrl: string,
  authorization: () => string,
  budget: Budget,
  deps: PlatformDeps & { maxServerWaitMs: number },
): HttpClient {
  const { maxServerWaitMs } = deps;
  return createHttpClient({
    api,
    baseUrl,
    authorization,
    budget,
    maxServerWaitMs,
    logger: deps.logger.child({ component: "http" }),
    ...(deps.metrics ? { metrics: deps.metrics } : {}),
    ...deps.http,
  });
}

/**
 * The state store of `config`: the file store in DRIFTLESS_STATE_DIR, or the Kubernetes Secret.
 * `readOnly` (plan) takes no lock and never writes. The Kubernetes store throws ConfigError on first
 * use when no Kubernetes API is found.
 */
export function createStateStore(config: Config, deps: { logger: Logger; readOnly?: boolean }): StateStore {
  const readOnly = deps.readOnly ?? false;
  if (config.stateStore === "file")
    return createFileStore(config.stateDir, { logger: deps.logger, readOnly });
  // Imported on first use: the Kubernetes client takes seconds to load, which no file-store run should pay.
  let store: Promise<StateStore> | undefined;
  const open = () => {
    store ??= (async () => {
      const { kubernetesTarget } = await import("../kubernetes/client.js");
      const { createKubernetesStateStore } = await import("../state/kubernetes-store.js");
      return createKubernetesStateStore({
        ...kubernetesTarget(config.namespace),
        logger: deps.logger,
        readOnly,
      });
    })();
    return store;
  };
  return {
    load: async () => (await open()).load(),
    save: async (state) => (await open()).save(state),
    ensureWritable: async () => (await open()).ensureWritable(),
    close: async () => {
      if (store) await (await store).close();
    },
  };
}

/**
 * Where the engine writes the id and secret of an API key it creates: DRIFTLESS_KEY_SECRETS_DIR
 * (default key-secrets in the state folder) for `{file}` targets, and the Secrets of driftless's
 * namespace for `{kubernetesSecret}` ones (the Kubernetes client loaded on first use only).
 */
export function keySecretsOf(config: Config): KeySecrets {
  let api: Promise<SecretsApi> | undefined;
  return createKeySecrets({
    dir: config.keySecretsDir ?? join(config.stateDir, "key-secrets"),
    kubernetes: () => {
      api ??= (async () => {
        const { kubernetesTarget } = await import("../kubernetes/client.js");
        const { kubernetesSecretsApi } = await import("../kubernetes/key-secrets-api.js");
        const { kubeConfig, namespace } = kubernetesTarget(config.namespace);
        return kubernetesSecretsApi(kubeConfig, namespace);
      })();
      // A failed load (no kubeconfig yet, a bad one) is tried again at the next write, not kept.
      api.catch(() => {
        api = undefined;
      });
      return api;
    },
  });
}
