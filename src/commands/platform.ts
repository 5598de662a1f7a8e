import { join } from "node:path";
import { type Config, readCredential } from "../config.js";
import { ConfigError } from "../errors.js";
import { createBudget, MANAGEMENT_BUDGET, OBSERVABILITY_BUDGET } from "../platform/budget.js";
import { createHttpClient, type HttpClient, type HttpClientOptions } from "../platform/http.js";
import { basicAuthorization, createManagementClient, type ManagementClient } from "../platform/management.js";
import {
  bearerAuthorization,
  createObservabilityClient,
  type ObservabilityClient,
} from "../platform/observability.js";
import { createSender, type Sender } from "../reconcile/send.js";
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

export type Platform = {
  management: ManagementClient;
  observability: ObservabilityClient;
  /** Sends planned requests through the two clients. */
  send: Sender;
  /** The key id driftless authenticates with (read again at each call: the file may be rotated). */
  managementKeyId: () => string | undefined;
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
 * logged and written. Throws ConfigError when a URL is set without its credentials.
 */
export async function createPlatform(config: Config, deps: PlatformDeps): Promise<Platform> {
  const { logger, metrics } = deps;
  let simulator: Simulator | undefined;
  if (!config.managementUrl || !config.observabilityUrl) {
    const { startSimulator } = await import("../simulator/index.js");
    // The simulated platform is kept beside the file state, so that one run after another meets the
    // platform the last one left, as with a real platform (state ids stay valid).
    const stateFile =
      config.stateStore === "file" ? join(config.stateDir, "simulator-platform.json") : undefined;
    simulator = await startSimulator({ logger: logger.child({ component: "simulator" }), stateFile });
    const unset = [
      config.managementUrl ? undefined : "DRIFTLESS_MANAGEMENT_URL",
      config.observabilityUrl ? undefined : "DRIFTLESS_OBSERVABILITY_URL",
    ].filter(Boolean);
    const message = `${unset.join(" and ")} unset: using the BUILT-IN SIMULATOR, not a real platform (management ${simulator.managementUrl}, observability ${simulator.observabilityUrl})`;
    logger.warn(
      { managementUrl: simulator.managementUrl, observabilityUrl: simulator.observabilityUrl },
      message,
    );
    deps.warn?.(`driftless: WARNING: ${message}`);
  }
  const sim = simulator?.credentials;

  const managementAuth = config.managementUrl
    ? () => {
        const id = readCredential(config.managementKeyId);
        const secret = readCredential(config.managementKeySecret);
        if (!id || !secret) {
          throw new ConfigError(
            "DRIFTLESS_MANAGEMENT_KEY_ID and DRIFTLESS_MANAGEMENT_KEY_SECRET (or their _FILE twins) are required with DRIFTLESS_MANAGEMENT_URL",
          );
        }
        return basicAuthorization(id, secret);
      }
    : () => basicAuthorization(sim?.managementKeyId ?? "", sim?.managementKeySecret ?? "");
  const observabilityAuth = config.observabilityUrl
    ? () => {
        const token = readCredential(config.observabilityToken);
        if (!token) {
          throw new ConfigError(
            "DRIFTLESS_OBSERVABILITY_TOKEN (or DRIFTLESS_OBSERVABILITY_TOKEN_FILE) is required with DRIFTLESS_OBSERVABILITY_URL",
          );
        }
        return bearerAuthorization(token);
      }
    : () => bearerAuthorization(sim?.observabilityToken ?? "");
  // Fail at start rather than on the first request of a pass.
  managementAuth();
  observabilityAuth();

  const client = (
    api: "management" | "observability",
    baseUrl: string,
    authorization: () => string,
  ): HttpClient =>
    createHttpClient({
      api,
      baseUrl,
      authorization,
      budget: createBudget(
        (api === "management" ? deps.budgets?.management : deps.budgets?.observability) ??
          (api === "management" ? MANAGEMENT_BUDGET : OBSERVABILITY_BUDGET),
      ),
      logger: logger.child({ component: "http" }),
      ...(metrics ? { metrics } : {}),
      ...deps.http,
    });
  const managementHttp = client(
    "management",
    config.managementUrl ?? simulator?.managementUrl ?? "",
    managementAuth,
  );
  const observabilityHttp = client(
    "observability",
    config.observabilityUrl ?? simulator?.observabilityUrl ?? "",
    observabilityAuth,
  );
  const management = createManagementClient(managementHttp);
  const observability = createObservabilityClient(observabilityHttp);
  return {
    management,
    observability,
    send: createSender({ management, observability }),
    managementKeyId: config.managementUrl
      ? () => readCredential(config.managementKeyId)
      : () => sim?.managementKeyId,
    ...(simulator ? { simulator } : {}),
    async close() {
      await Promise.all([managementHttp.close(), observabilityHttp.close()]);
      await simulator?.close();
    },
  };
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
