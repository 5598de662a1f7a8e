import { request } from "node:http";
import { connect, type Socket } from "node:net";
import { Writable } from "node:stream";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type HttpServer, type HttpServerDeps, startHttpServer } from "../src/daemon/http-server.js";
import type { StatusDocument } from "../src/daemon/status-board.js";
import { createLogger } from "../src/telemetry/logger.js";
import { until } from "./helpers/wait.js";

/** The daemon's HTTP server on odd requests, over loopback. */

const servers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close(100)));
});

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

const STATUS: StatusDocument = {
  revision: null,
  suspended: null,
  budget: [],
  ready: true,
  leader: true,
  lastPass: null,
  passError: null,
  deletesHeld: 0,
  reads: "off",
  resources: [],
};

/** A server on 127.0.0.1:0 with `overrides`, closed after the test. */
async function serve(overrides: Partial<HttpServerDeps> = {}): Promise<HttpServer> {
  const server = await startHttpServer("127.0.0.1:0", {
    registry: new Registry(),
    ready: () => true,
    status: () => STATUS,
    webhookToken: () => undefined,
    onHook: () => {},
    logger: createLogger("silent"),
    ...overrides,
  });
  servers.push(server);
  return server;
}

/** A raw TCP connection to `address`, recording whether the server closed it and what it sent. */
async function open(
  address: string,
): Promise<{ socket: Socket; closed: () => boolean; received: () => string }> {
  const port = Number(address.slice(address.lastIndexOf(":") + 1));
  const socket = connect(port, "127.0.0.1");
  sockets.push(socket);
  let closed = false;
  let received = "";
  socket.on("data", (chunk) => {
    received += chunk;
  });
  socket.on("close", () => {
    closed = true;
  });
  socket.on("error", () => {});
  await new Promise((resolve) => socket.once("connect", resolve));
  return { socket, closed: () => closed, received: () => received };
}

// A loopback Host: a daemon on loopback without a token answers nothing else (its loopback rule).
const GET = (path: string, headers = "") => `GET ${path} HTTP/1.1\r\nHost: localhost\r\n${headers}\r\n`;

/** Sends `target` exactly as given (fetch would normalise it); resolves with the status code. */
function rawGet(address: string, target: string): Promise<number> {
  const [host = "", port = ""] = [
    address.slice(0, address.lastIndexOf(":")),
    address.slice(address.lastIndexOf(":") + 1),
  ];
  return new Promise((resolve, reject) => {
    const req = request({ host, port: Number(port), path: target, method: "GET" }, (res) => {
      res.resume();
      resolve(res.statusCode ?? 0);
    });
    req.on("error", reject);
    req.end();
  });
}

describe("the daemon's HTTP server", () => {
  it("answers a request target that is no URL with 400, and logs no server error", async () => {
    const lines: string[] = [];
    const server = await startHttpServer("127.0.0.1:0", {
      registry: new Registry(),
      ready: () => true,
      status: () => STATUS,
      webhookToken: () => "token",
      onHook: () => {},
      logger: createLogger(
        "info",
        new Writable({
          write: (chunk, _encoding, done) => {
            lines.push(String(chunk));
            done();
          },
        }),
      ),
    });
    servers.push(server);

    const code = await rawGet(server.address, "//[");

    expect(code).toBe(400);
    expect(lines.join("")).not.toContain("http handler failed");
  });
});

describe("the daemon's HTTP server under stalled and greedy clients", () => {
  it("closes a connection that sends nothing once the idle time-out has passed", async () => {
    const server = await serve({ limits: { idleTimeoutMs: 300 } });
    const client = await open(server.address);

    await until(client.closed);

    expect(client.received()).toBe("");
  });

  it("at the cap, serves a new connection by closing the one whose client has been silent longest", async () => {
    const server = await serve({ limits: { maxConnections: 2 } });
    const first = await open(server.address);
    const second = await open(server.address);
    first.socket.write(GET("/healthz"));
    await until(() => first.received().includes("ok"));
    second.socket.write(GET("/healthz"));
    await until(() => second.received().includes("ok"));

    const third = await open(server.address);
    third.socket.write(GET("/healthz"));
    await until(() => third.received().includes("ok"));

    expect(third.received()).toMatch(/^HTTP\/1\.1 200/);
    await until(first.closed);
    expect(second.closed()).toBe(false);
    expect(server.connections().count).toBe(2);
  });

  it("never closes a connection whose request it is still answering; closes a silent one instead", async () => {
    let release = () => {};
    const answered = new Promise<void>((resolve) => {
      release = resolve;
    });
    const server = await serve({
      limits: { maxConnections: 2 },
      statusToken: () => "operator",
      onSwitch: async () => {
        await answered;
        return { code: 200, body: { suspended: null, saved: true } };
      },
    });
    const operator = await open(server.address);
    operator.socket.write(
      "POST /resume HTTP/1.1\r\nHost: driftless\r\nAuthorization: Bearer operator\r\nContent-Length: 0\r\n\r\n",
    );
    const silent = await open(server.address);
    await until(() => server.connections().count === 2);

    const probe = await open(server.address);
    probe.socket.write(GET("/healthz"));
    await until(() => probe.received().includes("ok"));
    release();
    await until(() => operator.received().includes("saved"));

    expect(probe.received()).toMatch(/^HTTP\/1\.1 200/);
    await until(silent.closed);
    expect(operator.received()).toMatch(/^HTTP\/1\.1 200/);
  });

  it("keeps at most the bound queued for a client that never reads /metrics, and drops it when idle", async () => {
    // Larger than what the kernel's socket buffers take on loopback, so the rest waits in the server.
    const body = "x".repeat(48 * 1024 * 1024);
    const registry = { contentType: "text/plain", metrics: async () => body } as unknown as Registry;
    const bound = 64 * 1024;
    const server = await serve({ registry, limits: { maxBufferedBytes: bound, idleTimeoutMs: 1_500 } });
    const client = await open(server.address);
    client.socket.pause();

    client.socket.write(GET("/metrics").repeat(4));
    await until(() => server.connections().bufferedBytes > 0);
    // What stays queued, sampled from the first byte queued until the idle client is dropped.
    const samples: number[] = [];
    await until(() => {
      samples.push(server.connections().bufferedBytes);
      return server.connections().count === 0;
    });

    expect(Math.max(...samples)).toBeLessThanOrEqual(bound);
    expect(server.connections().bufferedBytes).toBe(0);
  });
});

describe("the /status token", () => {
  const ask = async (server: HttpServer, path: string, token?: string) => {
    const answer = await fetch(`http://${server.address}${path}`, {
      ...(token ? { headers: { authorization: `Bearer ${token}` } } : {}),
    });
    return {
      status: answer.status,
      body: await answer.text(),
      challenge: answer.headers.get("www-authenticate"),
    };
  };

  it("answers /status 401 without the bearer token and 200 with it, re-reading the token each time", async () => {
    let token = "status-token-one";
    const server = await serve({ statusToken: () => token });

    const missing = await ask(server, "/status");
    const wrong = await ask(server, "/status", "guess");
    const right = await ask(server, "/status", "status-token-one");
    token = "status-token-two";
    const rotatedOld = await ask(server, "/status", "status-token-one");
    const rotatedNew = await ask(server, "/status", "status-token-two");

    expect(missing).toMatchObject({ status: 401, challenge: "Bearer" });
    expect(missing.body).not.toContain("resources");
    expect(wrong.status).toBe(401);
    expect(right.status).toBe(200);
    expect(JSON.parse(right.body)).toEqual(STATUS);
    expect(rotatedOld.status).toBe(401);
    expect(rotatedNew.status).toBe(200);
  });

  it("leaves /metrics, /healthz and /readyz open when a status token is set", async () => {
    const server = await serve({ statusToken: () => "status-token" });

    const codes = await Promise.all(
      ["/metrics", "/healthz", "/readyz"].map(async (path) => (await ask(server, path)).status),
    );

    expect(codes).toEqual([200, 200, 200]);
  });
});
