import { createServer, type IncomingHttpHeaders } from "node:http";
import type { AddressInfo, Socket } from "node:net";
import { Registry } from "prom-client";
import { createBudget } from "../../src/platform/budget.js";
import { createHttpClient, type HttpClientOptions } from "../../src/platform/http.js";
import { createLogger } from "../../src/telemetry/logger.js";
import { createMetrics } from "../../src/telemetry/metrics.js";

/**
 * A real HTTP server on 127.0.0.1, port 0, whose answers a test scripts: each request takes the next
 * scripted reply, then the fallback. Every request is recorded (method, url, headers, body, arrival
 * time) so tests assert what went over the wire. Each test closes its own server.
 */

export type RecordedRequest = {
  method: string;
  url: string;
  headers: IncomingHttpHeaders;
  body: string;
  /** The body parsed as JSON, when it is JSON. */
  json?: unknown;
  /** performance.now() when the request's body had arrived. */
  at: number;
};

export type Reply =
  /** `body`: a string is sent as it is, anything else as JSON. */
  | { status?: number; headers?: Record<string, string>; body?: unknown }
  /** Read the request, then destroy the connection without an answer. */
  | { drop: true }
  /** Read the request and never answer. */
  | { hang: true }
  | ((request: RecordedRequest) => Reply | Promise<Reply>);

export type HttpTestServer = {
  url: string;
  port: number;
  requests: RecordedRequest[];
  /** Scripts the answers of the next requests, in order. */
  reply(...replies: Reply[]): void;
  /** The answer once the script is used up; default 200 `{}`. */
  fallback: Reply;
  close(): Promise<void>;
};

export async function createHttpTestServer(
  fallback: Reply = { status: 200, body: {} },
): Promise<HttpTestServer> {
  const script: Reply[] = [];
  const requests: RecordedRequest[] = [];
  const sockets = new Set<Socket>();

  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const chunk of req) chunks.push(chunk as Buffer);
    const body = Buffer.concat(chunks).toString("utf8");
    const recorded: RecordedRequest = {
      method: req.method ?? "",
      url: req.url ?? "",
      headers: req.headers,
      body,
      json: parseJson(body),
      at: performance.now(),
    };
    requests.push(recorded);

    let reply = script.shift() ?? handle.fallback;
    while (typeof reply === "function") reply = await reply(recorded);
    if ("drop" in reply) {
      req.socket.destroy();
      return;
    }
    if ("hang" in reply) return;
    const text =
      typeof reply.body === "string"
        ? reply.body
        : reply.body === undefined
          ? ""
          : JSON.stringify(reply.body);
    const type = typeof reply.body === "string" ? "text/plain" : "application/json";
    res.writeHead(reply.status ?? 200, { "content-type": type, ...reply.headers });
    res.end(text);
  });
  server.on("connection", (socket) => {
    sockets.add(socket);
    socket.on("close", () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;

  const handle: HttpTestServer = {
    url: `http://127.0.0.1:${port}`,
    port,
    requests,
    fallback,
    reply: (...replies) => void script.push(...replies),
    close: async () => {
      // Hanging requests would otherwise keep the server open forever.
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => server.close(() => resolve()));
    },
  };
  return handle;
}

function parseJson(text: string): unknown {
  try {
    return text ? JSON.parse(text) : undefined;
  } catch {
    return undefined;
  }
}

/**
 * An HTTP client of driftless pointed at `server`, with a roomy budget, silent logs and short retry
 * delays; `overrides` set anything else.
 */
export function clientOf(server: HttpTestServer, overrides: Partial<HttpClientOptions> = {}) {
  return createHttpClient({
    api: "management",
    baseUrl: server.url,
    authorization: () => "Basic a2V5OnNlY3JldA==",
    budget: createBudget({ requests: 1000, windowMs: 1000 }),
    metrics: createMetrics(new Registry(), { defaultMetrics: false }),
    logger: createLogger("silent"),
    timeoutMs: 2000,
    retry: { maxAttempts: 3, baseDelayMs: 5, maxDelayMs: 20, deadlineMs: 5000 },
    ...overrides,
  });
}
