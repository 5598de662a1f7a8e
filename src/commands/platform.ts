import { join } from "node:path";
import { type Config, cleartextUrls, readCredential } from "../config.js";
import { ConfigError } from "../errors.js";
import {
  type Budget,
  type BudgetUsage,
  createBudget,
  MANAGEMENT_BUDGET,
  OBSERVABILITY_BUDGET,
} from "../platform/budget.js";
import { createPlatformClient, type PlatformClient } from "../platform/client.js";
import { createHttpClient, type HttpClient, type HttpClientOptions } from "../platform/http.js";
import { basicAuthorization } from "../platform/management.js";
import { bearerAuthorization } from "../platform/observability.js";
import { createSender, type Sender } from "../reconcile/send.js";
import { SETTINGS } from "../settings.js";
import { defaultIds } from "../simulator/default-fixture.js";
import type { Simulator } from "../simulator/index.js";
import { createFileStore } from "../state/file-store.js";
import type { StateStore } from "../state/store.js";
import type { Logger } from "../telemetry/logger.js";
import type { Metrics } from "../telemetry/metrics.js";

/**
 * Builds what talks to the outside from a Config: the API clients (one rate budget per credential,
 * shared by every caller in the process) and the state store. Shared by plan, apply and run.
 */

/** One API's rate budget now, as /status shows it. */
export type ApiBudget = BudgetUsage & { api: "management" | "observability" };

export type Platform = {
  /** Calls any route of the platform's two APIs. */
  client: PlatformClient;
  /** Sends planned requests through the client. */
  send: Sender;
  /** The key id driftless authenticates with (read again at each call: the file may be rotated). */
  managementKeyId: () => string | undefined;
  /** Each API's rate budget now, for /status. */
  budgets(): ApiBudget[];
  /** Set when the built-in simulator stands in for the platform. */
  simulator?: Simulator;
  /** Closes the clients' pools and the built-in simulator. */
  close(): Promise<void>;
};

export type PlatformDeps = {
  logger: Logger;
  metrics?: Metrics;
  /** Receives the loud line about the built-in simulator (the CLI's stderr). */
  warn?: (text: string) => void;
  /** Overrides of the HTTP clients' options (tests: shorter time-outs, smaller budgets). */
  http?: Partial<Pick<HttpClientOptions, "timeoutMs" | "retry">>;
  /** Overrides of the budgets (tests: a smaller window). Default MANAGEMENT_BUDGET, OBSERVABILITY_BUDGET. */
  budgets?: { management?: typeof MANAGEMENT_BUDGET; observability?: typeof OBSERVABILITY_BUDGET };
};

/** The key id of `config`, or of the built-in simulator when no management URL is configured. */
export function managementKeyIdOf(config: Config): () => string | undefined {
  if (!config.managementUrl) return () => defaultIds.managementKeyId;
  return () => readCredential(config.managementKeyId);
}

/**
 * The API clients of `config`. With DRIFTLESS_MANAGEMENT_URL or DRIFTLESS_OBSERVABILITY_URL unset, the
 * built-in simulator is started in-process on a free port, with its own credentials, and a warning is
 * logged and written; so is a loud warning for an `http://` URL to another machine that
 * DRIFTLESS_ALLOW_INSECURE accepted. Throws ConfigError when a URL is set without its credentials.
 */
export async function createPlatform(config: Config, deps: PlatformDeps): Promise<Platform> {
  const simulator =
    config.managementUrl && config.observabilityUrl ? undefined : await startBuiltInSimulator(config, deps);
  warnOfCleartext(config, deps);
  const auth = authorizations(config, simulator);
  // Fail at start rather than on the first request of a pass.
  auth.management();
  auth.observability();

  const budgets = {
    management: createBudget(deps.budgets?.management ?? MANAGEMENT_BUDGET),
    observability: createBudget(deps.budgets?.observability ?? OBSERVABILITY_BUDGET),
  };
  const managementHttp = httpClient(
    "management",
    config.managementUrl ?? simulator?.managementUrl ?? "",
    auth.management,
    budgets.management,
    deps,
  );
  const observabilityHttp = httpClient(
    "observability",
    config.observabilityUrl ?? simulator?.observabilityUrl ?? "",
    auth.observability,
    budgets.observability,
    deps,
  );
  const platformClient = createPlatformClient({
    management: managementHttp,
    observability: observabilityHttp,
  });
  return {
    client: platformClient,
    send: createSender(platformClient),
    managementKeyId: config.managementUrl
      ? () => readCredential(config.managementKeyId)
      : () => simulator?.credentials.managementKeyId,
    budgets: () =>
      (["management", "observability"] as const).map((api) => ({ api, ...budgets[api].usage() })),
    ...(simulator ? { simulator } : {}),
    async close() {
      await Promise.all([managementHttp.close(), observabilityHttp.close()]);
      await simulator?.close();
    },
  };
}

/** Starts the built-in simulator for the API whose URL is unset, and says so loudly. */
async function startBuiltInSimulator(config: Config, deps: PlatformDeps): Promise<Simulator> {
  const { startSimulator } = await import("../simulator/index.js");
  // The simulated platform is kept beside the file state, so that one run after another meets the
  // platform the last one left, as with a real platform (state ids stay valid).
  const stateFile =
    config.stateStore === "file" ? join(config.stateDir, "simulator-platform.json") : undefined;
  const simulator = await startSimulator({
    logger: deps.logger.child({ component: "simulator" }),
    stateFile,
  });
  const unset = [
    config.managementUrl ? undefined : SETTINGS.managementUrl.env,
    config.observabilityUrl ? undefined : SETTINGS.observabilityUrl.env,
  ].filter(Boolean);
  const message = `${unset.join(" and ")} unset: using the BUILT-IN SIMULATOR, not a real platform (management ${simulator.managementUrl}, observability ${simulator.observabilityUrl})`;
  deps.logger.warn(
    { managementUrl: simulator.managementUrl, observabilityUrl: simulator.observabilityUrl },
    message,
  );
  deps.warn?.(`driftless: WARNING: ${message}`);
  return simulator;
}

/** Config refuses these URLs unless DRIFTLESS_ALLOW_INSECURE is true; then every start says so. */
function warnOfCleartext(config: Config, deps: PlatformDeps): void {
  for (const { env, url } of cleartextUrls(config)) {
    const message = `${env} is ${url}: the platform credentials travel IN CLEAR over the network (accepted by ${SETTINGS.allowInsecure.env}=true); use https://`;
    deps.logger.warn({ setting: env, url }, message);
    deps.warn?.(`driftless: WARNING: ${message}`);
  }
}

/** The Authorization header of each API, read from the credentials at every call (files rotate). */
function authorizations(
  config: Config,
  simulator: Simulator | undefined,
): { management: () => string; observability: () => string } {
  const sim = simulator?.credentials;
  return {
    management: config.managementUrl
      ? () => {
          const id = readCredential(config.managementKeyId);
          const secret = readCredential(config.managementKeySecret);
          if (!id || !secret) {
            throw new ConfigError(
              `${SETTINGS.managementKeyId.env} and ${SETTINGS.managementKeySecret.env} (or their _FILE twins) are required with ${SETTINGS.managementUrl.env}`,
            );
          }
          return basicAuthorization(id, secret);
        }
      : () => basicAuthorization(sim?.managementKeyId ?? "", sim?.managementKeySecret ?? ""),
    observability: config.observabilityUrl
      ? () => {
          const token = readCredential(config.observabilityToken);
          if (!token) {
            throw new ConfigError(
              `${SETTINGS.observabilityToken.env} (or ${SETTINGS.observabilityToken.env}_FILE) is required with ${SETTINGS.observabilityUrl.env}`,
            );
          }
          return bearerAuthorization(token);
        }
      : () => bearerAuthorization(sim?.observabilityToken ?? ""),
  };
}

/** One API's HTTP client, with its own rate budget (one per credential, shared by every caller). */
function httpClient(
  api: "management" | "observability",
  baseUrl: string,
  authorization: () => string,
  budget: Budget,
  deps: PlatformDeps,
): HttpClient {
  return createHttpClient({
    api,
    baseUrl,
    authorization,
    budget,
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
      const { loadKubeConfig, namespaceOf } = await import("../kubernetes/client.js");
      const { createKubernetesStateStore } = await import("../state/kubernetes-store.js");
      const kubeConfig = loadKubeConfig();
      return createKubernetesStateStore({
        kubeConfig,
        namespace: namespaceOf(kubeConfig, config.namespace),
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
