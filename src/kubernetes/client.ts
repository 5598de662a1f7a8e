import { Agent as HttpAgent } from "node:http";
import { Agent as HttpsAgent } from "node:https";
import {
  ApiException,
  type Configuration,
  type ConfigurationOptions,
  createConfiguration,
  KubeConfig,
  Observable,
  type ObservableMiddleware,
  ServerConfiguration,
} from "@kubernetes/client-node";
import { ConfigError } from "../errors.js";

/**
 * How driftless reaches the Kubernetes API (the state Secret and the leader Lease): the client's own
 * rules for finding a cluster, the namespace to use, a deadline per request, and the status of a failed
 * call. A room of its own, so that state/ (the Secret store) and leader/ (the Lease) both use it
 * without either depending on the other.
 */

/**
 * The client's usual rules (`KubeConfig.loadFromDefault`): the files in `KUBECONFIG`, else
 * `~/.kube/config`, else the pod's service account. Throws ConfigError when none exists, rather than
 * the client's silent fallback to http://localhost:8080.
 */
export function loadKubeConfig(): KubeConfig {
  const kubeConfig = new KubeConfig();
  try {
    kubeConfig.loadFromDefault();
  } catch (error) {
    throw new ConfigError("cannot load the Kubernetes client configuration (KUBECONFIG or in-cluster)", {
      cause: error,
    });
  }
  // loadFromDefault's last resort names its context "loaded-context" and points at localhost:8080.
  if (kubeConfig.getCurrentContext() === "loaded-context") {
    throw new ConfigError(
      "no Kubernetes API found: not in a pod with a service account, and neither KUBECONFIG nor ~/.kube/config exists; DRIFTLESS_STATE_STORE=kubernetes and DRIFTLESS_LEADER_ELECT=true need one",
    );
  }
  return kubeConfig;
}

/**
 * The namespace of the Lease and the state Secret: the configured one (DRIFTLESS_NAMESPACE), else the
 * current context's (in a pod, the service account's own namespace), else `default`.
 */
/** The Kubernetes API as this process reaches it, and the namespace driftless works in. */
export function kubernetesTarget(configured?: string): { kubeConfig: KubeConfig; namespace: string } {
  const kubeConfig = loadKubeConfig();
  return { kubeConfig, namespace: namespaceOf(kubeConfig, configured) };
}

export function namespaceOf(kubeConfig: KubeConfig, configured?: string): string {
  if (configured) return configured;
  return kubeConfig.getContextObject(kubeConfig.getCurrentContext())?.namespace || "default";
}

/** How long a connection to the API server is kept open with no request on it. */
const IDLE_CONNECTION_MS = 4_000;

/** The agent options that make a connection what it is: the server's name and trust, the client's identity. */
const TLS_OPTIONS = ["ca", "cert", "key", "pfx", "passphrase", "rejectUnauthorized", "servername"] as const;

/**
 * An API client of `kubeConfig` (as `kubeConfig.makeApiClient(Api)`) whose requests share kept-alive
 * connections, and `close` to end them. The client library gives every request an Agent of its own,
 * so each request opened a TCP and TLS connection of its own: a state load's 514 reads were 514
 * handshakes with the API server. Requests here go through one keep-alive agent with the options the
 * library chose, made again when those change (a client certificate renewed); a proxy's agent is
 * left as the library made it.
 */
export function pooledApiClient<Api>(
  kubeConfig: KubeConfig,
  api: new (configuration: Configuration) => Api,
): { api: Api; close(): void } {
  const cluster = kubeConfig.getCurrentCluster();
  if (!cluster) throw new ConfigError("the Kubernetes client configuration has no current cluster");
  let pooled: HttpAgent | undefined;
  const pool = (fresh: HttpAgent): HttpAgent => {
    const Plain = [HttpsAgent, HttpAgent].find((Agent) => fresh.constructor === Agent);
    if (!Plain) return fresh;
    const options = optionsOf(fresh);
    if (pooled?.constructor !== Plain || !sameTls(optionsOf(pooled), options)) {
      pooled?.destroy();
      pooled = new Plain({ ...options, keepAlive: true, timeout: IDLE_CONNECTION_MS });
    }
    return pooled;
  };
  const configuration = createConfiguration({
    baseServer: new ServerConfiguration(cluster.server, {}),
    authMethods: {
      default: {
        getName: () => "kubeconfig, pooled connections",
        applySecurityAuthentication: async (context) => {
          await kubeConfig.applySecurityAuthentication(context);
          const fresh = context.getAgent();
          if (fresh) context.setAgent(pool(fresh));
        },
      },
    },
  });
  return { api: new api(configuration), close: () => pooled?.destroy() };
}

/** The options an agent was made with: Node keeps them as `agent.options`. */
const optionsOf = (agent: HttpAgent): Record<string, unknown> => Object(Reflect.get(agent, "options"));

/** Whether two agents' options make the same connections. */
function sameTls(a: Record<string, unknown>, b: Record<string, unknown>): boolean {
  return TLS_OPTIONS.every((key) => {
    const [one, other] = [a[key], b[key]];
    return Buffer.isBuffer(one) && Buffer.isBuffer(other) ? one.equals(other) : one === other;
  });
}

/**
 * Per-request options that abort the request when `signal` fires. The client has no timeout of its own,
 * and a request that hangs must not outlive a renew deadline.
 */
export function abortWith(signal: AbortSignal): ConfigurationOptions<ObservableMiddleware> {
  return {
    middleware: [
      {
        pre: (context) => {
          context.setSignal(signal);
          return new Observable(Promise.resolve(context));
        },
        post: (context) => new Observable(Promise.resolve(context)),
      },
    ],
    middlewareMergeStrategy: "append",
  };
}

/** The HTTP status of a failed client call (the client's ApiException), or undefined (network, abort). */
export function statusOf(error: unknown): number | undefined {
  return error instanceof ApiException ? error.code : undefined;
}

/** The API server's message of a failed call (its Status body), else the error's own message. */
export function reasonOf(error: unknown): string {
  const body: unknown = error instanceof ApiException ? error.body : undefined;
  if (typeof body === "string") {
    try {
      const message = (JSON.parse(body) as { message?: unknown }).message;
      if (typeof message === "string") return message;
    } catch {
      // Not a Status document: fall through to the error's message.
    }
  }
  const message = error instanceof Error ? error.message : String(error);
  return message.split("\n")[0] ?? message;
}
