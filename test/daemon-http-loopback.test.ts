import { request } from "node:http";
import { describe, expect, it } from "vitest";
import type { DaemonProcess } from "./helpers/daemon-process.js";
import { passesFinished, useDaemonRun } from "./helpers/daemon-run.js";

/**
 * The loopback rule of `driftless run`: a daemon that listens on a loopback address with no token
 * serves this machine's own clients only. A same-host reverse proxy connects from loopback too, and may
 * rewrite Host, for anyone it serves: a request that carries Forwarded, X-Forwarded-For or X-Real-IP
 * is refused. A web page that rebinds its host name to 127.0.0.1 names its own host: refused on every
 * route, not only on the POSTs. Real requests against the built daemon.
 */

const run = useDaemonRun();

const started = async (env: Record<string, string> = {}) => {
  const d = await run.start({ DRIFTLESS_WEBHOOK_TOKEN: "", ...env });
  await d.waitForLog((l) => l.msg === "pass finished");
  return d;
};

/** One request with raw headers (a proxy's or a rebinding page's, not the CLI's); its status and body. */
function call(
  d: DaemonProcess,
  method: string,
  path: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const sent = request(`${d.url}${path}`, { method, headers, agent: false }, (answer) => {
      let body = "";
      answer.setEncoding("utf8").on("data", (chunk: string) => {
        body += chunk;
      });
      answer.on("end", () => resolve({ status: answer.statusCode ?? 0, body }));
    });
    sent.on("error", reject);
    sent.end(method === "POST" ? "{}" : undefined);
  });
}

const PROXIES: Array<Record<string, string>> = [
  { forwarded: "for=203.0.113.9;proto=https" },
  { "x-forwarded-for": "203.0.113.9" },
  { "x-real-ip": "203.0.113.9" },
];

describe("a daemon on a loopback address with no token", () => {
  it("refuses suspend, resume and reconcile sent through a proxy, even to a loopback Host", async () => {
    const d = await started();
    const json = { "content-type": "application/json" };

    const answers = [];
    for (const proxy of PROXIES) {
      for (const path of ["/suspend", "/resume", "/reconcile"]) {
        answers.push(await call(d, "POST", path, { ...json, ...proxy }));
      }
    }
    const direct = await call(d, "POST", "/resume", json);
    const status = JSON.parse((await call(d, "GET", "/status")).body) as { suspended: unknown };

    expect(answers.map((a) => a.status)).toEqual(Array(9).fill(403));
    expect(JSON.parse(answers[0]?.body ?? "{}").error).toMatch(
      /never through a proxy \(Forwarded, X-Forwarded-For, X-Real-IP\)/,
    );
    expect(direct.status).toBe(200);
    expect(status.suspended).toBeNull();
    expect(passesFinished(d)).toBeLessThanOrEqual(2);
  });

  it("serves /status, /, /metrics and the probes only to this machine's clients, on every route", async () => {
    const d = await started();
    const paths = ["/status", "/", "/metrics", "/healthz", "/readyz"];

    const rebound = await Promise.all(
      paths.map((path) => call(d, "GET", path, { host: "attacker.example" })),
    );
    const proxied = await Promise.all(paths.map((path) => call(d, "GET", path, PROXIES[1])));
    const local = await Promise.all(paths.map((path) => call(d, "GET", path, { host: "localhost" })));

    expect(rebound.map((a) => a.status)).toEqual([403, 403, 403, 403, 403]);
    expect(rebound[0]?.body).toContain("answers only this machine's clients");
    expect(rebound.map((a) => a.body).join("")).not.toContain("ci-deployer");
    expect(proxied.map((a) => a.status)).toEqual([403, 403, 403, 403, 403]);
    expect(local.map((a) => a.status)).toEqual([200, 200, 200, 200, 200]);
  });

  it("serves any client once a status token is set: the token guards /status, the rest is open as before", async () => {
    const d = await started({ DRIFTLESS_STATUS_TOKEN: "status-token-for-tests" });
    const elsewhere = { host: "driftless.internal", "x-forwarded-for": "203.0.113.9" };

    const status = await call(d, "GET", "/status", {
      ...elsewhere,
      authorization: "Bearer status-token-for-tests",
    });
    const without = await call(d, "GET", "/status", elsewhere);
    const metrics = await call(d, "GET", "/metrics", elsewhere);

    expect([status.status, without.status, metrics.status]).toEqual([200, 401, 200]);
  });
});
