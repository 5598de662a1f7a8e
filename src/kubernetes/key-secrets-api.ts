import { CoreV1Api, type KubeConfig, type V1Secret } from "@kubernetes/client-node";
import { StateError } from "../errors.js";
import { abortWith, pooledApiClient, reasonOf, statusOf } from "./client.js";

/**
 * The Secrets of driftless's namespace, as the key pairs need them (state/key-secrets.ts: loaded only when
 * a target names a Secret). Each throws StateError when the API fails, saying what to change when
 * driftless's Role is what refused.
 */
export type SecretsApi = {
  /** Where the Secrets are, for messages. */
  namespace: string;
  /** The Secret, its data decoded; undefined when there is no such Secret. */
  read(name: string): Promise<StoredSecret | undefined>;
  /**
   * Writes `data` to Secret `name`: replaces `current` (the Secret as read, whose labels, annotations and
   * type are kept, conditional on its resourceVersion), or creates the Secret when `current` is undefined.
   * Fails when the Secret changed, appeared or went away since it was read: the caller reads it again.
   */
  write(name: string, data: Record<string, string>, current: StoredSecret | undefined): Promise<void>;
};

/** A Secret as read: its data decoded (`{}` for a Secret created empty), and the object a replace builds on. */
export type StoredSecret = { data: Record<string, string>; secret: V1Secret };

/** Where an installation names the Secrets driftless may write, for messages. */
const COMPONENT = "the deploy's key-secrets component (deploy/components/key-secrets)";

/**
 * The Secrets of one namespace as the key pairs of created API keys need them (state/key-secrets.ts):
 * read one, fill one an installation created empty (the deploy's Role grants `get` and `update` on named
 * Secrets only, as RBAC cannot limit `create` to names), or create one where the Role allows it. A
 * Secret driftless creates is labelled as driftless's; one it replaces keeps its own labels and
 * annotations, so applying the installation again changes nothing in it.
 */
export function kubernetesSecretsApi(
  kubeConfig: KubeConfig,
  namespace: string,
  timeoutMs = 10_000,
): SecretsApi & { close(): void } {
  const { api: core, close } = pooledApiClient(kubeConfig, CoreV1Api);
  const request = () => abortWith(AbortSignal.timeout(timeoutMs));
  const where = (name: string) => `${namespace}/${name}`;

  async function read(name: string): Promise<StoredSecret | undefined> {
    try {
      const secret = await core.readNamespacedSecret({ name, namespace }, request());
      return { data: decoded(secret), secret };
    } catch (error) {
      if (statusOf(error) === 404) return undefined;
      throw new StateError(
        `cannot read the Secret ${where(name)}: ${reasonOf(error)}${forbidden(error, `driftless's Role must grant get and update on it: name it in ${COMPONENT}`)}`,
        { cause: error },
      );
    }
  }

  async function send(name: string, data: Record<string, string>, current: StoredSecret | undefined) {
    const encoded = Object.fromEntries(
      Object.entries(data).map(([key, value]) => [key, Buffer.from(value).toString("base64")]),
    );
    if (!current) {
      const metadata = { name, namespace, labels: { "app.kubernetes.io/managed-by": "driftless" } };
      const body: V1Secret = { apiVersion: "v1", kind: "Secret", type: "Opaque", metadata, data: encoded };
      await core.createNamespacedSecret({ namespace, body, fieldManager: "driftless" }, request());
      return;
    }
    // The Secret as it is, its data aside: labels, annotations (kubectl's last applied form), type and
    // the resourceVersion that makes the replace fail if anyone wrote it since it was read.
    const { metadata = {}, type } = current.secret;
    const kept = {
      name,
      namespace,
      resourceVersion: metadata.resourceVersion,
      ...(metadata.labels ? { labels: metadata.labels } : {}),
      ...(metadata.annotations ? { annotations: metadata.annotations } : {}),
    };
    const body: V1Secret = { apiVersion: "v1", kind: "Secret", type, metadata: kept, data: encoded };
    await core.replaceNamespacedSecret({ name, namespace, body, fieldManager: "driftless" }, request());
  }

  /** Whether Secret `name` holds `data`: a write whose answer was lost landed. */
  async function holds(name: string, data: Record<string, string>): Promise<boolean> {
    const now = await read(name).catch(() => undefined);
    return now !== undefined && Object.entries(data).every(([key, value]) => now.data[key] === value);
  }

  return {
    namespace,
    close,
    read,
    async write(name, data, current) {
      try {
        await send(name, data, current);
      } catch (error) {
        // No answer (a timeout, a reset) may hide a write that landed: it did if the Secret holds `data`.
        if (statusOf(error) === undefined && (await holds(name, data))) return;
        throw new StateError(`cannot write the Secret ${where(name)}: ${writeFailure(error, current)}`, {
          cause: error,
        });
      }
    },
  };
}

/** A Secret's data, decoded. */
function decoded(secret: V1Secret): Record<string, string> {
  const data: Record<string, string> = {};
  for (const [key, value] of Object.entries(secret.data ?? {}))
    data[key] = Buffer.from(value, "base64").toString("utf8");
  return data;
}

/** What to do about a refused write, after the API server's reason. */
function writeFailure(error: unknown, current: StoredSecret | undefined): string {
  const reason = reasonOf(error);
  const status = statusOf(error);
  if (!current && status === 403)
    return `${reason}: driftless's Role grants no create on Secrets (RBAC cannot limit create to names, so the deploy never grants it): create the Secret empty ahead and name it in the Role, as ${COMPONENT} does`;
  if (status === 403) return `${reason}: driftless's Role must grant update on it: name it in ${COMPONENT}`;
  if (status === 409 || status === 404)
    return `${reason}: it changed since driftless read it; nothing was written over it, and the next attempt reads it again`;
  return reason;
}

/** The hint to add to a failure that is a 403, else "". */
function forbidden(error: unknown, hint: string): string {
  return statusOf(error) === 403 ? `: ${hint}` : "";
}
