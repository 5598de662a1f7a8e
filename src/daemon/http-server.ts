import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import type { Registry } from "prom-client";
import { ConfigError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import type { StatusDocument } from "./status-board.js";
import { isHookPath, presentedToken, tokenMatches } from "./webhook.js";

export type HttpServerDeps = {
  registry: Registry;
  /** True once the first reconcile pass has finished (or this replica is a follower). */
  ready: () => boolean;
  status: () => StatusDocument;
  /** The webhook token now (re-read each request, so a rotated file is used); undefined: hook off. */
  webhookToken: () => string | undefined;
  /** A valid `POST /hooks/sync` arrived; `revision` is git-sync's Gitsync-Hash header. */
  onHook: (revision: string | undefined) => void;
  logger: Logger;
};

export type HttpServer = {
  /** The bound address, as `host:port` (port 0 becomes the real port). */
  address: string;
  /** Stops accepting connections; open ones get `graceMs` to finish, then are cut. */
  close(graceMs: number): Promise<void>;
};

/** `host:port` (IPv6 as `[::]:9464`) into its parts; throws ConfigError. */
export function parseListen(listen: string): { host: string; port: number } {
  const match = listen.match(/^(?:\[([^\]]+)\]|([^:]*)):(\d{1,5})$/);
  const port = Number(match?.[3]);
  if (!match || port > 65535) {
    throw new ConfigError(`DRIFTLESS_LISTEN must be host:port (e.g. 0.0.0.0:9464), not "${listen}"`);
  }
  return { host: match[1] ?? (match[2] || "0.0.0.0"), port };
}

/**
 * The HTTP server of `run`: /metrics, /healthz, /readyz, /status and POST /hooks/sync. Resolves once
 * listening; throws when the address cannot be bound.
 */
export async function startHttpServer(listen: string, deps: HttpServerDeps): Promise<HttpServer> {
  const { host, port } = parseListen(listen);
  const server = createServer((request, response) => {
    handle(request, response, deps).catch((error) => {
      deps.logger.error({ err: error }, "http handler failed");
      if (!response.headersSent) send(response, 500, "text/plain", "internal error\n");
      else response.destroy();
    });
  });
  // Scrapes and probes are short; a stalled client must not hold a socket for ever.
  server.requestTimeout = 10_000;
  server.headersTimeout = 10_000;
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, host, () => {
      server.off("error", reject);
      resolve();
    });
  });
  const bound = server.address() as AddressInfo;
  const address =
    bound.family === "IPv6" ? `[${bound.address}]:${bound.port}` : `${bound.address}:${bound.port}`;
  return { address, close: (graceMs) => closeServer(server, graceMs) };
}

async function handle(request: IncomingMessage, response: ServerResponse, deps: HttpServerDeps) {
  const path = pathOf(request.url);
  // A scanner's odd request target (`//[`) is the client's error, not a server failure to log.
  if (path === undefined) return send(response, 400, "text/plain", "bad request target\n");
  if (isHookPath(path)) return hook(request, response, path, deps);
  if (request.method !== "GET" && request.method !== "HEAD") {
    return send(response, 405, "text/plain", "method not allowed\n", { allow: "GET, HEAD" });
  }
  switch (path) {
    case "/metrics":
      return send(response, 200, deps.registry.contentType, await deps.registry.metrics());
    case "/healthz":
      return send(response, 200, "text/plain", "ok\n");
    case "/readyz":
      return deps.ready()
        ? send(response, 200, "text/plain", "ready\n")
        : send(response, 503, "text/plain", "waiting for the first reconcile pass\n");
    case "/status":
      return send(response, 200, "application/json", `${JSON.stringify(deps.status(), null, 2)}\n`);
    default:
      return send(response, 404, "text/plain", "not found\n");
  }
}

async function hook(request: IncomingMessage, response: ServerResponse, path: string, deps: HttpServerDeps) {
  // The body is unused (git-sync sends none); drained so the connection can be reused.
  request.resume();
  const expected = deps.webhookToken();
  if (expected === undefined) return send(response, 404, "text/plain", "webhook is off\n");
  if (request.method !== "POST") return send(response, 405, "text/plain", "use POST\n", { allow: "POST" });
  const revision = header(request, "gitsync-hash");
  // Never log the path: it may carry the token.
  if (!tokenMatches(presentedToken(request, path), expected)) {
    deps.logger.warn({ remote: request.socket.remoteAddress, revision }, "webhook rejected: wrong token");
    return send(response, 401, "text/plain", "wrong or missing token\n", { "www-authenticate": "Bearer" });
  }
  deps.logger.info({ revision }, "webhook accepted");
  deps.onHook(revision);
  return send(response, 202, "application/json", `${JSON.stringify({ accepted: true, revision })}\n`);
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

function send(
  response: ServerResponse,
  code: number,
  contentType: string,
  body: string,
  headers: Record<string, string> = {},
) {
  response.writeHead(code, { "content-type": contentType, "cache-control": "no-store", ...headers });
  response.end(response.req.method === "HEAD" ? undefined : body);
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
