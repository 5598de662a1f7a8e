import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Registry } from "prom-client";
import { afterEach, describe, expect, it } from "vitest";
import { type Daemon, startDaemon } from "../src/daemon/daemon.js";
import { Suspension } from "../src/daemon/suspension.js";
import { newState } from "../src/state/state-format.js";
import { createMetrics } from "../src/telemetry/metrics.js";
import { driftlessAsync } from "./helpers/cli.js";
import { fakeDaemonDeps, passResult } from "./helpers/fake-daemon.js";
import { switchableLeadership } from "./helpers/switchable-leadership.js";

/**
 * POST /suspend with leader election: only the leader writes the state, so a follower refuses, and a
 * replica that stops leading forgets the suspension (the new leader reads it from the state).
 */

const TOKEN = "hook-token";
const daemons: Daemon[] = [];
const roots: string[] = [];
afterEach(async () => {
  await Promise.all(daemons.splice(0).map((d) => d.stop(1_000)));
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

/** A daemon whose passes save the suspension as the engine does, into a state kept in memory. */
async function start(leader: boolean) {
  const manifests = await mkdtemp(join(tmpdir(), "driftless-suspend-"));
  roots.push(manifests);
  const leadership = switchableLeadership(leader);
  const registry = new Registry();
  const metrics = createMetrics(registry, { defaultMetrics: false });
  const suspension = new Suspension((value) => metrics.suspended.set(value ? 1 : 0));
  const state = newState();
  const daemon = await startDaemon(
    fakeDaemonDeps(manifests, {
      settings: { webhookToken: { value: TOKEN } },
      reconciler: {
        pass: async () => {
          suspension.saved(suspension.sync(state));
          return passResult();
        },
      },
      suspension,
      leadership,
      registry,
      metrics,
    }),
  );
  daemons.push(daemon);
  const post = (path: string) =>
    fetch(`http://${daemon.address}${path}`, {
      method: "POST",
      headers: { authorization: `Bearer ${TOKEN}` },
      body: JSON.stringify({ reason: "maintenance" }),
    });
  const gauge = async () => /^driftless_suspended (\d)$/m.exec(await registry.metrics())?.[1];
  const suspended = async () =>
    ((await (await fetch(`http://${daemon.address}/status`)).json()) as { suspended: unknown }).suspended;
  return { leadership, state, post, gauge, suspended, url: `http://${daemon.address}` };
}

describe("POST /suspend and leadership", () => {
  it("is refused by a follower, which cannot write the state", async () => {
    const replica = await start(false);

    const answer = await replica.post("/suspend");

    expect(answer.status).toBe(503);
    expect(((await answer.json()) as { error: string }).error).toContain("not the leader");
    expect(replica.state.suspended).toBeUndefined();
    expect(await replica.gauge()).toBe("0");
  });

  it("driftless status on a follower says to ask the leader, and exits 1", async () => {
    const replica = await start(false);

    const result = await driftlessAsync(["status", "--url", replica.url]);

    expect(result).toEqual({
      code: 1,
      stdout:
        "this replica is a follower and reconciles nothing: ask the leader's pod (driftless_leader is 1)\n",
      stderr: "",
    });
  });

  it("is saved by the leader's pass, and forgotten by a replica that stops leading", async () => {
    const replica = await start(true);

    const answer = await replica.post("/suspend");
    const saved = { ...replica.state.suspended };
    const whileLeading = { gauge: await replica.gauge(), suspended: await replica.suspended() };
    replica.leadership.set(false);

    expect(answer.status).toBe(200);
    expect(await answer.json()).toEqual({ suspended: saved, saved: true });
    expect(saved).toEqual({ since: expect.any(String), reason: "maintenance" });
    expect(whileLeading).toEqual({ gauge: "1", suspended: saved });
    expect(await replica.gauge()).toBe("0");
    expect(await replica.suspended()).toBeNull();
  });
});
