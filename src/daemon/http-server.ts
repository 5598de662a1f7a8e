import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { performance } from "node:perf_hooks";
import type { Registry } from "prom-client";
import { z } from "zod";
import { isLoopbackHost } from "../config.js";
import { ConfigError } from "../errors.js";
import { SETTINGS } from "../settings.js";
import type { Logger } from "../telemetry/logger.js";
import type { StatusDocument } from "./status-board.js";
import { statusPage } from "./status-page.js";
import { bearerToken, isHookPath, presentedToken, tokenMatches } from "./webhook.js";

export type HttpServerDeps = {
  registry: Registry;
  /** True once the first reconcile pass has finished (or this replica is a follower). */
  ready: () => boolean;
  status: () => StatusDocument;
  /** The webhook token now (re-read each request, so a rotated file is used); undefined: hook off. */
  webhookToken: () => string | undefined;
  /** The bearer token /status requires now (re-read each request); undefined: /status is open. */
  statusToken?: () => string | undefined;
  /** `POST /suspend` or `POST /resume`, authenticated; the answer to send. */
  onSwitch?: (request: SwitchRequest) => Promise<SwitchAnswer>;
  /** `POST /reconcile`, authenticated as the switch: a pass now; the answer to send once it ended. */
  onReconcile?: (request: ReconcileRequest) => Promise<SwitchAnswer>;
  /** A valid `POST /hooks/sync` arrived; `revision` is git-sync's Gitsync-Hash header. */
  onHook: (revision: string | undefined) => void;
  logger: Logger;
  /** Overrides of HTTP_SERVER_LIMITS (tests: short time-outs, a small cap). */
  limits?: Partial<HttpServerLimits>;
};

/** What `driftless suspend` / `resume` ask of the daemon. */
export type SwitchRequest = { action: "suspend"; reason?: string } | { action: "resume" };

/**
 * The JSON body of `POST /reconcile` (`driftless reconcile`; empty: `{}`): what the operator allows the
 * pass it asks for. `allowDeletes`: that pass, and only it, may send up to N deletes that the
 * mass-deletion guard holds (`--allow-deletes N`).
 */
export const ReconcileRequest = z.strictObject({
  allowDeletes: z
    .number({ error: "must be a number" })
    .int({ error: "must be a whole number" })
    .min(0, { error: "must be 0 or more" })
    .optional(),
});
export type ReconcileRequest = z.infer<typeof ReconcileRequest>;

/** The daemon's answer to an operator's request: an HTTP code and a JSON body. */
export type SwitchAnswer = { code: number; body: Record<string, unknown> };

/** Paths of the daemon's suspend switch. */
const SWITCH_PATHS: Record<string, SwitchRequest["action"]> = { "/suspend": "suspend", "/resume": "resume" };

/** What an operator asks of the daemon over HTTP. */
type OperatorAction = SwitchRequest["action"] | "reconcile";

/** How long a `POST /reconcile` connection may stay silent: the daemon's wait for the pass, and more. */
const RECONCILE_SOCKET_TIMEOUT_MS = 11 * 60_000;

/** Longest `--reason` accepted, in bytes of the request body. */
const MAX_SWITCH_BODY = 4_096;

/**
 * What one client may hold of the server. Scrapes, probes and git-sync's webhook are short requests
 * from a handful of clients; anything else is a stalled or hostile client, cut before it holds sockets
 * or memory for long.
 */
export type HttpServerLimits = {
  /** How long an idle keep-alive connection is kept for its next request. */
  keepAliveTimeoutMs: number;
  /** A connection with no traffic either way for this long is closed (one that never reads, too). */
  idleTimeoutMs: number;
  /** Time to receive a request's headers. */
  headersTimeoutMs: number;
  /** Time to receive a whole request. */
  requestTimeoutMs: number;
  /**
   * Open connections at most. A new connection beyond it is still served: it closes the connection
   * whose client has gone longest without speaking (see `evict`), so that clients holding connections
   * open cannot keep the kubelet's probes out. Only when the server is busy answering every one is
   * the new connection closed instead.
   */
  maxConnections: number;
  /**
   * Bytes of an answer the server keeps queued for a client at most: the rest is written as the client
   * reads, so a client that never reads holds this much until the idle time-out closes it.
   */
  maxBufferedBytes: number;
  /**
   * `POST /reconcile` requests waiting for their pass at most. A waiting request holds its connection
   * (its answer is being made, so it is never the one closed for a newcomer) for as long as the pass
   * takes: without a cap, 70 of them during a slow pass held every connection and kept the probes out.
   * One more is answered 429 at once; the pass the others wait for answers them all.
   */
  maxReconcileWaiters: number;
};

export const HTTP_SERVER_LIMITS: HttpServerLimits = {
  keepAliveTimeoutMs: 5_000,
  idleTimeoutMs: 30_000,
  headersTimeoutMs: 10_000,
  requestTimeoutMs: 10_000,
  maxConnections: 64,
  maxBufferedBytes: 64 * 1024,
  maxReconcileWaiters: 8,
};

export type HttpServer = {
  /** The bound address, as `host:port` (port 0 becomes the real port). */
  address: string;
  /** Open connections, and the bytes of answers queued for them and not yet taken by the kernel. */
  connections(): { count: number; bufferedBytes: number };
  /** Stops accepting connections; open ones get `graceMs` to finish, then are cut. */
  close(graceMs: number): Promise<void>;
};

/** `host:port` (IPv6 as `[::]:9464`) into its parts; throws ConfigError. */
export function parseListen(listen: string): { host: string; port: number } {
  const match = listen.match(/^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/);
  const port = Number(match?.[3]);
  if (!match || port > 65535) {
    throw new ConfigError(`${SETTINGS.listen.env} must be host:port (e.g. 0.0.0.0:9464), not "${listen}"`);
  }
  return { host: match[1] ?? (match[2] || "0.0.0.0"), port };
}

/**
 * The HTTP server of `run`: /metrics, /healthz, /readyz, /status, the status page `/`, POST /hooks/sync
 * and POST /suspend and /resume, within
 * HTTP_SERVER_LIMITS. Resolves once listening; throws when the address cannot be bound.
 */
export async function startHttpServer(listen: string, deps: HttpServerDeps): Promise<HttpServer> {
  const { host, port } = parseListen(listen);
  const limits = { ...HTTP_SERVER_LIMITS, ...deps.limits };
  const served: ServedDeps = {
    ...deps,
    loopback: isLoopbackHost(host.includes(":") ? `[${host}]` : host),
    reconcileWaiters: { count: 0, max: limits.maxReconcileWaiters },
  };
  const server = createLimitedServer(limits, (request, response) => {
    handle(request, response, served, limits).catch((error) => {
      deps.logger.error({ err: error }, "http handler failed");
      if (!response.headersSent) void send(response, limits, 500, "text/plain", "internal error\n");
      else response.destroy();
    });
  });
  const connections = trackConnections(server, limits.maxConnections);
  await listenOn(server, port, host);
  const bound = server.address() as AddressInfo;
  const address =
    bound.family === "IPv6" ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`;
  return {
    address,
    connections: () => {
      const sockets = [...connections.keys()];
      return {
        count: sockets.length,
        bufferedBytes: sockets.reduce((sum, socket) => sum + socket.writableLength, 0),
      };
    },
    close: (graceMs) => closeServer(server, graceMs),
  };
}

function createLimitedServer(
  limits: HttpServerLimits,
  handler: (request: IncomingMessage, response: ServerResponse) => void,
): Server {
  const server = createServer(
    {
      keepAliveTimeout: limits.keepAliveTimeoutMs,
      headersTimeout: limits.headersTimeoutMs,
      requestTimeout: limits.requestTimeoutMs,
      // How often the two above are checked: at their own scale, not Node's default 30 s.
      connectionsCheckingInterval: Math.min(1_000, limits.headersTimeoutMs),
    },
    handler,
  );
  // Without a 'timeout' listener, Node destroys a socket idle for this long.
  server.timeout = limits.idleTimeoutMs;
  // Node's own cap refuses a newcomer before anyone can choose whom to close: it only backs up the
  // eviction of trackConnections, against a flood of connections faster than closes complete.
  server.maxConnections = 2 * limits.maxConnections;
  return server;
}

/** What the server knows of an open connection: when its client last spoke, and its current answer. */
type Connection = { heardAt: number; answering?: ServerResponse };

/**
 * The server's open connections, kept current, at most `cap` of them: a new connection beyond the cap
 * closes the one `evict` chooses, or is itself closed when there is none to choose.
 */
function trackConnections(server: Server, cap: number): Map<Socket, Connection> {
  const connections = new Map<Socket, Connection>();
  const heard = (connection: Connection) => {
    connection.heardAt = performance.now();
  };
  server.on("connection", (socket: Socket) => {
    if (connections.size >= cap) {
      const victim = evict(connections);
      if (!victim) return void socket.destroy();
      connections.delete(victim);
      victim.destroy();
    }
    const connection: Connection = { heardAt: performance.now() };
    connections.set(socket, connection);
    socket.on("data", () => heard(connection));
    socket.once("close", () => connections.delete(socket));
  });
  server.on("request", (request: IncomingMessage, response: ServerResponse) => {
    const connection = connections.get(request.socket);
    if (!connection) return;
    heard(connection);
    connection.answering = response;
    response.once("close", () => {
      if (connection.answering === response) connection.answering = undefined;
      heard(connection);
    });
  });
  return connections;
}

/**
 * The connection to close for a newcomer: of those whose client the server is waiting for (between
 * requests, in the middle of a request's headers or body, or not reading its answer), the one whose
 * client has been silent longest. A connection whose whole request is in, and whose answer the server
 * is still making, is never chosen: that client has said all it had to say. Probes open a connection
 * per probe and say everything at once, so a client holding connections open can delay them by no
 * more than the time it takes to close one.
 */
function evict(connections: ReadonlyMap<Socket, Connection>): Socket | undefined {
  let oldest: { socket: Socket; heardAt: number } | undefined;
  for (const [socket, { heardAt, answering }] of connections) {
    const busy = answering?.req.complete === true && !answering.writableNeedDrain;
    if (busy || (oldest && oldest.heardAt <= heardAt)) continue;
    oldest = { socket, heardAt };
  }
  return oldest?.socket;
}

function listenOn(server: Server, port: number, host: string): Promise<void> {
  return new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
}

/**
 * The deps, whether the server listens on a loopback address only (this machine's clients), and the
 * `POST /reconcile` requests waiting for their pass.
 */
type ServedDeps = HttpServerDeps & { loopback: boolean; reconcileWaiters: { count: number; max: number } };

async function handle(
  request: IncomingMessage,
  response: ServerResponse,
  deps: ServedDeps,
  limits: HttpServerLimits,
) {
  const reply = (code: number, contentType: string, body: string, headers?: Record<string, string>) =>
    send(response, limits, code, contentType, body, headers);
  const path = pathOf(request.url);
  // A scanner's odd request target (`//[`) is the client's error, not a server failure to log.
  if (path === undefined) return reply(400, "text/plain", "bad request target\n");
  if (isHookPath(path)) return hook(request, path, deps, reply);
  const action = SWITCH_PATHS[path];
  if (action) return operatorSwitch(request, action, deps, reply);
  if (path === "/reconcile") return operatorPass(request, deps, reply);
  if (request.method !== "GET" && request.method !== "HEAD") {
    return reply(405, "text/plain", "method not allowed\n", { allow: "GET, HEAD" });
  }
  // With no token, a loopback daemon's pages are for this machine's clients only: not for a web page
  // that rebinds its own host name to 127.0.0.1, nor for a proxy that would open them to others.
  if (deps.loopback && deps.statusToken?.() === undefined && !fromThisMachine(request)) {
    return reply(403, "text/plain", `${NOT_FROM_THIS_MACHINE}\n`);
  }
  switch (path) {
    case "/metrics":
      return reply(200, deps.registry.contentType, await deps.registry.metrics());
    case "/healthz":
      return reply(200, "text/plain", "ok\n");
    case "/readyz":
      return deps.ready()
        ? reply(200, "text/plain", "ready\n")
        : reply(503, "text/plain", "waiting for the first reconcile pass\n");
    case "/status":
      // /status shows platform error texts and the lock holder: behind a token when one is set.
      if (!statusAllowed(request, deps)) {
        return reply(
          401,
          "text/plain",
          `/status needs Authorization: Bearer <${SETTINGS.statusToken.env}>\n`,
          {
            "www-authenticate": "Bearer",
          },
        );
      }
      return reply(200, "application/json", `${JSON.stringify(deps.status(), null, 2)}\n`);
    case "/": {
      // Without the token the page holds no data: it asks for the token and fetches /status with it.
      const page = statusPage(statusAllowed(request, deps) ? deps.status() : undefined);
      return reply(200, "text/html; charset=utf-8", page.html, page.headers);
    }
    default:
      return reply(404, "text/plain", "not found\n");
  }
}

type Reply = (
  code: number,
  contentType: string,
  body: string,
  headers?: Record<string, string>,
) => Promise<void>;

function statusAllowed(request: IncomingMessage, deps: HttpServerDeps): boolean {
  const expected = deps.statusToken?.();
  if (expected === undefined) return true;
  return tokenMatches(bearerToken(request), expected);
}

/**
 * Why an operator's request (`POST /suspend`, `/resume`, `/reconcile`) is refused, as the answer to
 * send, or undefined when it is allowed. It needs the status token when one is set, else the webhook
 * token. With neither, a daemon listening on a loopback address takes it from this machine (a demo, a
 * laptop); any other daemon refuses it, since anyone who reaches the port could stop every write.
 */
function operatorRefusal(
  request: IncomingMessage,
  action: OperatorAction,
  deps: ServedDeps,
  reply: Reply,
): (() => Promise<void>) | undefined {
  const json = (code: number, body: Record<string, unknown>) =>
    reply(code, "application/json", `${JSON.stringify(body)}\n`);
  if (request.method !== "POST") return () => reply(405, "text/plain", "use POST\n", { allow: "POST" });
  const expected = deps.statusToken?.() ?? deps.webhookToken();
  if (expected === undefined) {
    if (isLocalRequest(request, deps)) {
      deps.logger.info(
        { action },
        `${action} from this machine, without a token (the daemon listens on loopback)`,
      );
      return undefined;
    }
    return () =>
      json(403, {
        error: deps.loopback
          ? `/${action} without a token is taken only from this machine's CLI, straight to a loopback host with a JSON body, never through a proxy (Forwarded, X-Forwarded-For, X-Real-IP): set ${SETTINGS.statusToken.env} (or ${SETTINGS.webhookToken.env}) on the daemon and the same in the client's environment to take it from elsewhere`
          : `/${action} is off: set ${SETTINGS.statusToken.env} (or ${SETTINGS.webhookToken.env}) on the daemon and the same in the client's environment, or let the daemon listen on a loopback address (${SETTINGS.listen.env}=127.0.0.1:9464) to take it from this machine without a token`,
      });
  }
  if (tokenMatches(bearerToken(request), expected)) return undefined;
  deps.logger.warn({ remote: request.socket.remoteAddress, action }, `${action} rejected: wrong token`);
  return () => reply(401, "text/plain", "wrong or missing token\n", { "www-authenticate": "Bearer" });
}

/**
 * True for a request of this machine's to a daemon listening on loopback: from this machine's own
 * client (fromThisMachine), with a JSON body (a web page cannot send one to another origin without a
 * CORS preflight, which this server never allows).
 */
function isLocalRequest(request: IncomingMessage, deps: ServedDeps): boolean {
  const json = (request.headers["content-type"] ?? "").split(";")[0]?.trim() === "application/json";
  return deps.loopback && json && fromThisMachine(request);
}

/** Headers a proxy adds: a request that carries one was sent on behalf of a client we cannot see. */
const FORWARDED = ["forwarded", "x-forwarded-for", "x-real-ip"];

/**
 * True for a request that a client on this machine sent straight to the daemon: from a loopback
 * address, to a loopback Host (a web page's DNS rebinding names its own host), and not through a
 * proxy (a same-host reverse proxy connects from loopback, and may rewrite Host, for anyone it serves).
 */
function fromThisMachine(request: IncomingMessage): boolean {
  const remote = (request.socket.remoteAddress ?? "").replace(/^::ffff:/, "");
  const host = (request.headers.host ?? "").replace(/:\d+$/, "");
  const proxied = FORWARDED.some((name) => request.headers[name] !== undefined);
  return !proxied && isLoopbackHost(remote.includes(":") ? `[${remote}]` : remote) && isLoopbackHost(host);
}

const NOT_FROM_THIS_MACHINE = `this daemon listens on a loopback address without ${SETTINGS.statusToken.env}: it answers only this machine's clients, straight to a loopback host (127.0.0.1, localhost, [::1]), never through a proxy (Forwarded, X-Forwarded-For, X-Real-IP); set ${SETTINGS.statusToken.env} to serve others`;

/** `POST /suspend` (JSON body `{"reason": "..."}`, optional) and `POST /resume`. */
async function operatorSwitch(
  request: IncomingMessage,
  action: SwitchRequest["action"],
  deps: ServedDeps,
  reply: Reply,
) {
  const json = (code: number, body: Record<string, unknown>) =>
    reply(code, "application/json", `${JSON.stringify(body)}\n`);
  const refusal = deps.onSwitch ? operatorRefusal(request, action, deps, reply) : notServed(reply);
  if (refusal || !deps.onSwitch) {
    // The body of a refused request is drained, not read: an unknown client gets no buffer of ours.
    request.resume();
    return refusal?.();
  }
  const body = await readBody(request, MAX_SWITCH_BODY);
  if (body === undefined) return json(413, { error: `the body is over ${MAX_SWITCH_BODY} bytes` });
  const reason = action === "suspend" ? reasonOf(body) : undefined;
  if (reason instanceof Error) return json(400, { error: reason.message });
  const answer = await deps.onSwitch(
    action === "suspend" ? { action, ...(reason ? { reason } : {}) } : { action },
  );
  return json(answer.code, answer.body);
}

/**
 * `POST /reconcile`: a pass now, answered once it ended. The connection is kept for as long as the
 * daemon waits for the pass, past the idle time-out that closes silent connections.
 */
async function operatorPass(request: IncomingMessage, deps: ServedDeps, reply: Reply) {
  const json = (code: number, body: Record<string, unknown>) =>
    reply(code, "application/json", `${JSON.stringify(body)}\n`);
  const refusal = deps.onReconcile ? operatorRefusal(request, "reconcile", deps, reply) : notServed(reply);
  if (refusal || !deps.onReconcile) {
    // The body of a refused request is drained, not read: an unknown client gets no buffer of ours.
    request.resume();
    return refusal?.();
  }
  const body = await readBody(request, MAX_SWITCH_BODY);
  if (body === undefined) return json(413, { error: `the body is over ${MAX_SWITCH_BODY} bytes` });
  const asked = reconcileRequestOf(body);
  if (asked instanceof Error) return json(400, { error: asked.message });
  const waiters = deps.reconcileWaiters;
  if (waiters.count >= waiters.max) {
    const error = `${waiters.count} requests already wait for a pass, the most this daemon keeps waiting: the pass they wait for runs anyway; follow it with driftless status --watch, or ask again once they are answered`;
    return reply(429, "application/json", `${JSON.stringify({ error })}\n`, { "retry-after": "10" });
  }
  // A waiter leaves when its pass has ended, or when its client went away before.
  waiters.count++;
  let waiting = true;
  const leave = () => {
    if (waiting) waiters.count--;
    waiting = false;
  };
  request.socket.once("close", leave);
  request.socket.setTimeout(RECONCILE_SOCKET_TIMEOUT_MS);
  const answer = await deps.onReconcile(asked).finally(leave);
  request.socket.off("close", leave);
  return reply(answer.code, "application/json", `${JSON.stringify(answer.body)}\n`);
}

/** A path this server has no handler for. */
const notServed = (reply: Reply) => () => reply(404, "text/plain", "not found\n");

/** The `reason` of a suspend's JSON body (none for an empty body), or the Error to answer 400 with. */
function reasonOf(body: string): string | undefined | Error {
  if (body.trim() === "") return undefined;
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return new Error('the body must be JSON: {"reason": "..."}');
  }
  const reason = (parsed as { reason?: unknown } | null)?.reason;
  if (reason === undefined) return undefined;
  return typeof reason === "string" ? reason : new Error("reason must be a string");
}

/** The JSON body of a `POST /reconcile` (none for an empty body), or the Error to answer 400 with. */
function reconcileRequestOf(body: string): ReconcileRequest | Error {
  if (body.trim() === "") return {};
  const usage = 'the body must be a JSON object: {"allowDeletes": N} or {}';
  let parsed: unknown;
  try {
    parsed = JSON.parse(body);
  } catch {
    return new Error(usage);
  }
  const result = ReconcileRequest.safeParse(parsed);
  if (result.success) return result.data;
  const issue = result.error.issues[0];
  if (issue?.code === "unrecognized_keys")
    return new Error(`unknown field ${issue.keys.map((key) => `"${key}"`).join(", ")}: ${usage}`);
  const field = issue?.path.join(".");
  return new Error(
    field ? `${field} ${issue?.message}, not ${JSON.stringify(Reflect.get(Object(parsed), field))}` : usage,
  );
}

/** The request's body as text, or undefined when it is longer than `max` bytes (the rest is drained). */
async function readBody(request: IncomingMessage, max: number): Promise<string | undefined> {
  const chunks: Buffer[] = [];
  let size = 0;
  for await (const chunk of request as AsyncIterable<Buffer>) {
    size += chunk.length;
    if (size <= max) chunks.push(chunk);
  }
  return size > max ? undefined : Buffer.concat(chunks).toString("utf8");
}

async function hook(request: IncomingMessage, path: string, deps: HttpServerDeps, reply: Reply) {
  // The body is unused (git-sync sends none); drained so the connection can be reused.
  request.resume();
  const expected = deps.webhookToken();
  if (expected === undefined) return reply(404, "text/plain", "webhook is off\n");
  if (request.method !== "POST") return reply(405, "text/plain", "use POST\n", { allow: "POST" });
  const revision = header(request, "gitsync-hash");
  // Never log the path: it may carry the token.
  if (!tokenMatches(presentedToken(request, path), expected)) {
    deps.logger.warn({ remote: request.socket.remoteAddress, revision }, "webhook rejected: wrong token");
    return reply(401, "text/plain", "wrong or missing token\n", { "www-authenticate": "Bearer" });
  }
  deps.logger.info({ revision }, "webhook accepted");
  deps.onHook(revision);
  return reply(202, "application/json", `${JSON.stringify({ accepted: true, revision })}\n`);
}

function pathOf(target = "/"): string | undefined {
  try {
    return new URL(target, "http://localhost").pathname;
  } catch {
    return undefined;
  }
}

function header(request: IncomingMessage, name: string): string | undefined {
  const value = request.headers[name];
  return Array.isArray(value) ? value[0] : value;
}

async function send(
  response: ServerResponse,
  limits: HttpServerLimits,
  code: number,
  contentType: string,
  body: string,
  headers: Record<string, string> = {},
): Promise<void> {
  const bytes = Buffer.from(body);
  response.writeHead(code, {
    "content-type": contentType,
    "cache-control": "no-store",
    "content-length": String(bytes.length),
    ...headers,
  });
  if (response.req.method === "HEAD") return void response.end();
  await writeAsRead(response, bytes, limits.maxBufferedBytes);
}

/**
 * Writes `body` no faster than the client takes it: a write is made only while less than the
 * socket's high-water mark is queued, and is no larger than what keeps the queue under `maxBuffered`.
 * A client that stops reading is left to the idle time-out, which closes the socket.
 */
async function writeAsRead(response: ServerResponse, body: Buffer, maxBuffered: number): Promise<void> {
  const chunk = Math.max(1_024, maxBuffered - response.writableHighWaterMark);
  for (let at = 0; at < body.length; at += chunk) {
    if (response.destroyed) return;
    if (!response.write(body.subarray(at, at + chunk))) await drainedOrClosed(response);
  }
  if (!response.destroyed) response.end();
}

function drainedOrClosed(response: ServerResponse): Promise<void> {
  return new Promise((resolve) => {
    const done = () => {
      response.off("drain", done);
      response.off("close", done);
      resolve();
    };
    response.on("drain", done);
    response.on("close", done);
  });
}

async function closeServer(server: Server, graceMs: number): Promise<void> {
  const closed = new Promise<void>((resolve) => server.close(() => resolve()));
  server.closeIdleConnections();
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<void>((resolve) => {
    timer = setTimeout(() => {
      server.closeAllConnections();
      resolve();
    }, graceMs);
  });
  await Promise.race([closed, late]);
  clearTimeout(timer);
  await closed;
}
