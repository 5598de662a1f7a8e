import { request } from "node:http";
import { Writable } from "node:stream";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type HttpServer, startHttpServer } from "../src/daemon/http-server.js";
import { createLogger } from "../src/telemetry/logger.js";

/** The daemon's HTTP server on odd requests, over loopback. */

const servers: HttpServer[] = [];
afterEach(async () => {
  await Promise.all(servers.splice(0).map((s) => s.close(100)));
});

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
      status: () => ({
        revision: null,
        ready: true,
        leader: true,
        lastPass: null,
        passError: null,
        resources: [],
      }),
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
