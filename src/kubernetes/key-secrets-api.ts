import { CoreV1Api, type KubeConfig } from "@kubernetes/client-node";
import { StateError } from "../errors.js";
import { abortWith, pooledApiClient, reasonOf, statusOf } from "./client.js";

/**
 * The Secrets of driftless's namespace, as the key pairs need them (state/key-secrets.ts: loaded only when
 * a target names a Secret). Each throws StateError when the API fails.
 */
export type SecretsApi = {
  /** Where the Secrets are, for messages. */
  namespace: string;
  /** The Secret's data, decoded; undefined when there is no such Secret. */
  read(name: string): Promise<Record<string, string> | undefined>;
  /** Makes the Secret with `data`, or replaces the one there. */
  write(name: string, data: Record<string, string>): Promise<void>;
};

/**
 * The Secrets of one namespace as the key pairs of created API keys need them (state/key-secrets.ts):
 * read one, make or replace one. Each Secret is labelled as driftless's.
 */
export function kubernetesSecretsApi(
  kubeConfig: KubeConfig,
  namespace: string,
  timeoutMs = 10_000,
): SecretsApi & { close(): void } {
  const { api: core, close } = pooledApiClient(kubeConfig, CoreV1Api);
  const request = () => abortWith(AbortSignal.timeout(timeoutMs));
  return {
    namespace,
    close,
    async read(name) {
      try {
        const secret = await core.readNamespacedSecret({ name, namespace }, request());
        const data: Record<string, string> = {};
        for (const [key, value] of Object.entries(secret.data ?? {}))
          data[key] = Buffer.from(value, "base64").toString("utf8");
        return data;
      } catch (error) {
        if (statusOf(error) === 404) return undefined;
        throw new StateError(`cannot read the Secret ${namespace}/${name}: ${reasonOf(error)}`, {
          cause: error,
        });
      }
    },
    async write(name, data) {
      const body = {
        apiVersion: "v1",
        kind: "Secret",
        type: "Opaque",
        metadata: { name, namespace, labels: { "app.kubernetes.io/managed-by": "driftless" } },
        data: Object.fromEntries(
          Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString("base64")]),
        ),
      };
      try {
        await core.createNamespacedSecret({ namespace, body }, request());
        return;
      } catch (error) {
        if (statusOf(error) !== 409)
          throw new StateError(`cannot write the Secret ${namespace}/${name}: ${reasonOf(error)}`, {
            cause: error,
          });
      }
      try {
        await core.replaceNamespacedSecret({ name, namespace, body }, request());
      } catch (error) {
        throw new StateError(`cannot write the Secret ${namespace}/${name}: ${reasonOf(error)}`, {
          cause: error,
        });
      }
    },
  };
}
