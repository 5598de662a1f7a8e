import { randomUUID } from "node:crypto";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { createServer, type IncomingMessage, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";

/**
 * A Kubernetes API server on 127.0.0.1, port 0, implementing what driftless relies on of Secrets
 * (core/v1) and Leases (coordination.k8s.io/v1): get, create and replace, with the API server's
 * optimistic concurrency (a replace carrying a stale metadata.resourceVersion is a 409 Conflict, a
 * create of an existing name is a 409 AlreadyExists), 404 NotFound with a Status body, and the 1 MiB
 * limit on a Secret's data. Faults can be injected to play a failing or partitioned API server.
 */

type KubeObject = {
  apiVersion?: string;
  kind?: string;
  metadata?: { name?: string; namespace?: string; resourceVersion?: string; [key: string]: unknown };
  data?: Record<string, string>;
  [key: string]: unknown;
};

/** A request as received; `token` is the bearer token, which tells the clients of a test apart. */
export type RecordedRequest = { method: string; path: string; token?: string; body?: KubeObject };

/**
 * What the server does instead of answering at once: an HTTP status, a request that never ends, a reset,
 * the usual answer after a delay, or `afterEffect`: the request takes effect (a write is stored) but its
 * answer never arrives ("hang") or the connection is reset before it ("reset"), i.e. a write whose
 * client timed out although it landed.
 */
export type Fault =
  | { status: number }
  | { delayMs: number }
  | { afterEffect: "hang" | "reset" }
  | "hang"
  | "reset";

export type FakeKubernetes = {
  /** http://127.0.0.1:PORT */
  url: string;
  /** A kubeconfig file (no TLS, a token user) whose current context points at this server. */
  kubeconfigPath: string;
  /** The text of a kubeconfig for this server whose user sends `token` (to tell clients apart). */
  kubeconfig(token: string): string;
  /** Every request received, in order (bodies of writes included). */
  requests: RecordedRequest[];
  /** How many connections clients have opened to this server so far. */
  connections(): number;
  /** The stored object, or undefined. `resource` is `secrets` or `leases`. */
  get(resource: Resource, namespace: string, name: string): KubeObject | undefined;
  /** Stores an object as if another client had written it (bumps its resourceVersion). */
  put(resource: Resource, namespace: string, object: KubeObject): KubeObject;
  /** Deletes an object as if another client had (`kubectl delete`). */
  remove(resource: Resource, namespace: string, name: string): void;
  /**
   * Answers every matching request with `fault` until cleared with `setFault(undefined)`. `match`
   * defaults to every request; give a predicate to fault only some (e.g. only one client's writes).
   */
  setFault(fault: Fault | undefined, match?: (request: RecordedRequest) => boolean): void;
  close(): Promise<void>;
};

export type Resource = "secrets" | "leases";

const ROUTES: Array<{
  resource: Resource;
  pattern: RegExp;
  apiVersion: string;
  kind: string;
  group: string;
}> = [
  {
    resource: "secrets",
    pattern: /^\/api\/v1\/namespaces\/([^/]+)\/secrets(?:\/([^/]+))?$/,
    apiVersion: "v1",
    kind: "Secret",
    group: "",
  },
  {
    resource: "leases",
    pattern: /^\/apis\/coordination\.k8s\.io\/v1\/namespaces\/([^/]+)\/leases(?:\/([^/]+))?$/,
    apiVersion: "coordination.k8s.io/v1",
    kind: "Lease",
    group: "coordination.k8s.io",
  },
];

/** The API server's limit on the decoded bytes of a Secret's data (MaxSecretSize). */
export const MAX_SECRET_BYTES = 1024 * 1024;

export async function startFakeKubernetes(): Promise<FakeKubernetes> {
  const objects = new Map<string, KubeObject>();
  const requests: RecordedRequest[] = [];
  let revision = 1000;
  let fault: { fault: Fault; match: (request: RecordedRequest) => boolean } | undefined;

  const key = (resource: Resource, namespace: string, name: string) => `${resource}/${namespace}/${name}`;
  const store = (resource: Resource, namespace: string, object: KubeObject, existing?: KubeObject) => {
    revision += 1;
    const stored: KubeObject = structuredClone(object);
    stored.metadata = {
      ...stored.metadata,
      namespace,
      resourceVersion: String(revision),
      uid: existing?.metadata?.uid ?? randomUUID(),
      creationTimestamp: existing?.metadata?.creationTimestamp ?? new Date().toISOString(),
    };
    objects.set(key(resource, namespace, String(stored.metadata.name)), stored);
    return stored;
  };

  /** The API server's answer to one request, as if nothing went wrong on the way. */
  const answer = (method: string, path: string, body: KubeObject | undefined): Answer => {
    const route = ROUTES.find((r) => r.pattern.test(path));
    const [, namespace = "", name] = route?.pattern.exec(path) ?? [];
    if (!route) return status(404, "NotFound", "the server could not find the requested resource");
    const what = `${route.group ? `${route.resource}.${route.group}` : route.resource} "${name ?? body?.metadata?.name}"`;
    const existing = name ? objects.get(key(route.resource, namespace, name)) : undefined;

    if (method === "GET" && name) {
      if (!existing) return status(404, "NotFound", `${what} not found`, route.kind, name);
      return { code: 200, body: existing };
    }
    if (method === "POST" && !name && body) {
      const newName = String(body.metadata?.name ?? "");
      if (objects.has(key(route.resource, namespace, newName))) {
        return status(409, "AlreadyExists", `${what} already exists`, route.kind, newName);
      }
      const invalid = validate(route.resource, body);
      if (invalid) return status(422, "Invalid", `${route.kind} "${newName}" is invalid: ${invalid}`);
      const created = { ...body, apiVersion: route.apiVersion, kind: route.kind };
      return { code: 201, body: store(route.resource, namespace, created) };
    }
    if (method === "PUT" && name && body) {
      if (!existing) return status(404, "NotFound", `${what} not found`, route.kind, name);
      const sent = body.metadata?.resourceVersion;
      // As the API server: a replace without a resourceVersion is unconditional, a stale one conflicts.
      if (sent !== undefined && sent !== existing.metadata?.resourceVersion) {
        return status(
          409,
          "Conflict",
          `Operation cannot be fulfilled on ${what}: the object has been modified; please apply your changes to the latest version and try again`,
          route.kind,
          name,
        );
      }
      const invalid = validate(route.resource, body);
      if (invalid) return status(422, "Invalid", `${route.kind} "${name}" is invalid: ${invalid}`);
      const replaced = { ...body, apiVersion: route.apiVersion, kind: route.kind };
      return { code: 200, body: store(route.resource, namespace, replaced, existing) };
    }
    return status(405, "MethodNotAllowed", `${method} is not supported here`);
  };

  const server = createServer(async (req, res) => {
    const url = new URL(req.url ?? "/", "http://localhost");
    const raw = await readBody(req);
    const body = raw ? (JSON.parse(raw) as KubeObject) : undefined;
    const token = req.headers.authorization?.replace(/^Bearer /, "");
    const recorded: RecordedRequest = { method: req.method ?? "GET", path: url.pathname, token, body };
    requests.push(recorded);

    const current = fault?.match(recorded) ? fault.fault : undefined;
    if (current === "hang") return;
    if (current === "reset") return req.socket.destroy();
    if (current && "status" in current)
      return send(res, status(current.status, "InternalError", "injected fault"));
    if (current && "delayMs" in current) await new Promise((resolve) => setTimeout(resolve, current.delayMs));

    const result = answer(recorded.method, url.pathname, body);
    // The request took effect; only its answer is lost on the way back.
    if (current && "afterEffect" in current) {
      if (current.afterEffect === "reset") req.socket.destroy();
      return;
    }
    send(res, result);
  });

  let connections = 0;
  server.on("connection", () => connections++);
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  const dir = await mkdtemp(join(tmpdir(), "driftless-kube-"));
  const kubeconfigPath = join(dir, "kubeconfig");
  await writeFile(kubeconfigPath, kubeconfig(url, "fake-kubernetes-token"));

  return {
    url,
    kubeconfigPath,
    kubeconfig: (token) => kubeconfig(url, token),
    requests,
    connections: () => connections,
    get: (resource, namespace, name) => {
      const object = objects.get(key(resource, namespace, name));
      return object ? structuredClone(object) : undefined;
    },
    put: (resource, namespace, object) =>
      store(
        resource,
        namespace,
        object,
        objects.get(key(resource, namespace, String(object.metadata?.name))),
      ),
    remove: (resource, namespace, name) => {
      objects.delete(key(resource, namespace, name));
    },
    setFault: (next, match = () => true) => {
      fault = next ? { fault: next, match } : undefined;
    },
    close: async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await rm(dir, { recursive: true, force: true });
    },
  };
}

/** The API server's validation that matters here: a Secret's decoded data is at most 1 MiB. */
function validate(resource: Resource, body: KubeObject): string | undefined {
  if (resource !== "secrets") return undefined;
  const size = Object.values(body.data ?? {}).reduce((sum, v) => sum + Buffer.from(v, "base64").length, 0);
  return size > MAX_SECRET_BYTES ? `data: Too long: must have at most ${MAX_SECRET_BYTES} bytes` : undefined;
}

function kubeconfig(server: string, token: string): string {
  return `apiVersion: v1
kind: Config
clusters:
  - name: fake
    cluster:
      server: ${server}
      # The client refuses plain http unless told not to verify TLS.
      insecure-skip-tls-verify: true
users:
  - name: tester
    user:
      token: ${token}
contexts:
  - name: fake
    context: {cluster: fake, user: tester, namespace: driftless-test}
current-context: fake
`;
}

async function readBody(req: IncomingMessage): Promise<string> {
  const chunks: Buffer[] = [];
  for await (const chunk of req) chunks.push(chunk as Buffer);
  return Buffer.concat(chunks).toString("utf8");
}

type Answer = { code: number; body: unknown };

function send(res: ServerResponse, { code, body }: Answer) {
  res.writeHead(code, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
}

function status(code: number, reason: string, message: string, kind?: string, name?: string): Answer {
  return {
    code,
    body: {
      kind: "Status",
      apiVersion: "v1",
      metadata: {},
      status: "Failure",
      message,
      reason,
      details: kind ? { name, kind: kind.toLowerCase() } : undefined,
      code,
    },
  };
}
