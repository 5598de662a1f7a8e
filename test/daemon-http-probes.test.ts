import { get, request } from "node:http";
import { connect, type Socket } from "node:net";
import { afterEach, expect, it } from "vitest";
import type { DaemonProcess } from "./helpers/daemon-process.js";
import { files, useDaemonRun, WEBHOOK_TOKEN } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/**
 * Anyone who reaches the port of `driftless run` must not be able to make its liveness probe fail:
 * real sockets against the built daemon, filling its 64 connections with clients that never speak,
 * that send a request's first bytes and then nothing more, or that wait for a pass.
 */

const run = useDaemonRun();
const CAP = 64;

const sockets: Socket[] = [];
afterEach(() => {
  for (const socket of sockets.splice(0)) socket.destroy();
});

/** Opens `count` connections to the daemon, each writing `first` (or nothing) once connected. */
async function hold(d: DaemonProcess, count: number, first?: string): Promise<Array<() => boolean>> {
  const { hostname, port } = new URL(d.url);
  return Promise.all(
    Array.from({ length: count }, async () => {
      const socket = connect(Number(port), hostname);
      sockets.push(socket);
      let closed = false;
      socket.on("close", () => {
        closed = true;
      });
      socket.on("error", () => {});
      socket.resume();
      await new Promise((resolve) => socket.once("connect", resolve));
      if (first) socket.write(first);
      return () => closed;
    }),
  );
}

/** GET `path` on a connection of its own, as the kubelet probes; the status, or the error instead. */
const probe = (d: DaemonProcess, path: string) =>
  new Promise<number | string>((resolve) => {
    const request = get(`${d.url}${path}`, { agent: false, timeout: 5_000 }, (answer) => {
      answer.resume();
      resolve(answer.statusCode ?? 0);
    });
    request.on("timeout", () => request.destroy(new Error("no answer within 5 s")));
    request.on("error", (error) => resolve(String(error)));
  });

it("serves /healthz and /readyz while every connection is held by a client that says nothing", async () => {
  const d = await run.start();
  await d.waitForLog((l) => l.msg === "pass finished");
  // More than the cap: the daemon has surely met it by the time the probes, which connect last, arrive.
  const silent = await hold(d, CAP + 16);
  const closed = () => silent.filter((isClosed) => isClosed()).length;

  const healthz = await probe(d, "/healthz");
  const readyz = await probe(d, "/readyz");
  await until(() => closed() >= 17);

  expect(healthz).toBe(200);
  expect(readyz).toBe(200);
  // The silent clients that came first: 16 for the 16 beyond the cap, one for the first probe (and
  // one for the second, unless the first probe's connection was closed by then).
  expect(silent.slice(0, 17).every((isClosed) => isClosed())).toBe(true);
});

it("serves /healthz while every connection is held by a client that sent half a request", async () => {
  const d = await run.start();
  await d.waitForLog((l) => l.msg === "pass finished");
  await hold(d, CAP, "GET /metrics HTTP/1.1\r\nHost: driftless\r\n");

  const healthz = await probe(d, "/healthz");

  expect(healthz).toBe(200);
});

/** POST /reconcile with the token, on a connection of its own as each CLI would; its status, or the error. */
const reconcile = (d: DaemonProcess) =>
  new Promise<number | string>((resolve) => {
    const call = request(
      `${d.url}/reconcile`,
      { method: "POST", agent: false, headers: { authorization: `Bearer ${WEBHOOK_TOKEN}` } },
      (answer) => {
        answer.resume();
        resolve(answer.statusCode ?? 0);
      },
    );
    call.on("error", (error) => resolve(String(error)));
    call.end();
  });

it("serves /healthz while more POST /reconcile wait for a slow pass than it keeps: the rest are refused at once", async () => {
  const d = await run.start();
  await d.waitForLog((l) => l.msg === "pass finished");
  let release = () => {};
  const released = new Promise<void>((resolve) => {
    release = resolve;
  });
  run.simulator.inject({ api: "management", method: "PATCH", kind: "latency", until: released });
  await run.layout.publish(files("renamed in git"));
  await until(() => run.simulator.requests.some((r) => r.method === "PATCH" && r.status === 0));
  const answered: Array<number | string> = [];
  const asked = Array.from({ length: 70 }, () => reconcile(d).then((status) => answered.push(status)));
  await until(() => answered.length >= 62);

  const healthz = await probe(d, "/healthz");
  release();
  await Promise.all(asked);

  expect(healthz).toBe(200);
  // Eight wait and get their pass; the others are refused at once, or cut at the connection cap when
  // more than 64 came at the same moment (a flood of connections, closed as designed).
  expect(answered.filter((status) => status === 200)).toHaveLength(8);
  const others = answered.filter((status) => status !== 200);
  expect(
    others.filter((status) => status !== 429 && !/ECONNRESET|socket hang up/.test(String(status))),
  ).toEqual([]);
  expect(others.filter((status) => status === 429).length).toBeGreaterThan(40);
});
