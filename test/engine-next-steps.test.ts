import { afterEach, describe, expect, it } from "vitest";
import { createPlatform } from "../src/commands/platform.js";
import { Backoff } from "../src/daemon/backoff.js";
import { ConfigError, StateError } from "../src/errors.js";
import { createReconciler } from "../src/reconcile/engine.js";
import type { Sender } from "../src/reconcile/send.js";
import type { PassResult, ResourceStatus } from "../src/resources.js";
import { createFileStore } from "../src/state/file-store.js";
import type { StateStore } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { answerOf } from "./helpers/answers.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/**
 * Each outcome says what comes next, decided where the outcome is known: what a later pass may fix on
 * its own is retried with backoff; what waits for a changed input or for a person is not, and counts
 * as terminal. The backoff reads that decision, so a daemon schedules retries for the first only.
 */

const key = (name: string, organizationId: string) =>
  `${header("ApiKey", name)}  organizationId: ${organizationId}\n  keyId: ${ids.ciDeployerKeyId}\n  name: renamed ${name}\n`;

const organization = `${header("Organization", "org")}  organizationId: ${ids.organizationId}\n  privateEndpoints:\n    - { id: pe-1, description: one }\n`;

/** When the daemon's backoff would run its next retry pass after `result` (undefined: none). */
const retryDue = (result: PassResult) => new Backoff({ random: () => 0.5 }).record(result.statuses, 0);

const statusOf = (result: PassResult, name: string): ResourceStatus | undefined =>
  result.statuses.find((s) => s.name === name);

let world: EngineWorld;
afterEach(() => world.close());

describe("what comes next", () => {
  it("a missing organization key needs an operator: Failed, terminal, and no retry pass", async () => {
    world = await startEngineWorld();
    await world.write("a.yaml", key("a", "0b1c2d3e-4f50-4617-8293-a4b5c6d7e8f9"));
    const store = createFileStore(world.stateDir, { logger: createLogger("silent") });
    const send: Sender = async () => {
      throw new Error("nothing is sent without a key (test)");
    };
    const managementKeyId = (organizationId: string) => {
      throw new ConfigError(`no management key for organization ${organizationId}: add it (test)`);
    };

    const result = await createReconciler({
      manifests: world.manifests,
      store,
      send,
      secrets: { env: {}, secretsDir: world.secretsDir },
      logger: createLogger("silent"),
      managementKeyId,
    })
      .pass({ trigger: "cli" })
      .finally(() => store.close());

    expect(statusOf(result, "a")).toMatchObject({ status: "Failed", next: "operator", failure: "terminal" });
    expect(result.ok).toBe(false);
    expect(retryDue(result)).toBeUndefined();
  });

  it("a lost state lock needs an operator: Failed, terminal, and no retry pass", async () => {
    world = await startEngineWorld();
    await world.write("a.yaml", key("a", ids.organizationId));
    const lost = (store: StateStore): StateStore => ({
      load: () => store.load(),
      save: (state) => store.save(state),
      close: () => store.close(),
      ensureWritable: () =>
        Promise.reject(new StateError("this process no longer holds the state lock (test)")),
    });

    const result = await world.apply({}, { store: lost });

    expect(world.writes()).toEqual([]);
    expect(statusOf(result, "a")).toMatchObject({ status: "Failed", next: "operator", failure: "terminal" });
    expect(retryDue(result)).toBeUndefined();
  });

  it("a plan that never converges waits for a change: Failed, terminal, and no retry pass", async () => {
    world = await startEngineWorld();
    await world.write("org.yaml", organization);
    // The console removes the entry again behind every answer: the platform never shows what was sent.
    const platform = await createPlatform(world.config, { logger: createLogger("silent") });
    const send: Sender = async (request, options) => {
      const answer = await platform.send(request, options);
      return { ...answer, result: answerOf(request, { ...answer.result, privateEndpoints: [] }) };
    };
    const store = createFileStore(world.stateDir, { logger: createLogger("silent") });

    const result = await createReconciler({
      manifests: world.manifests,
      store,
      send,
      secrets: { env: {}, secretsDir: world.secretsDir },
      logger: createLogger("silent"),
    })
      .pass({ trigger: "cli" })
      .finally(() => Promise.all([store.close(), platform.close()]));

    expect(statusOf(result, "org")).toMatchObject({ status: "Failed", next: "change", failure: "terminal" });
    expect(statusOf(result, "org")?.message).toContain("still had changes to send after 5 requests");
    expect(retryDue(result)).toBeUndefined();
  });

  it("a platform error is retried: Failed, transient, and a retry pass is scheduled", async () => {
    world = await startEngineWorld({ platform: { http: { retry: { maxAttempts: 1 } } } });
    await world.write("a.yaml", key("a", ids.organizationId));
    world.sim.inject({ api: "management", method: "PATCH", kind: "status", status: 503, count: 1 });

    const result = await world.apply();

    expect(statusOf(result, "a")).toMatchObject({ status: "Failed", next: "retry", failure: "transient" });
    expect(retryDue(result)).toBeGreaterThan(0);
  });

  it("a suspended resource is done: Suspended, and the pass is ok", async () => {
    world = await startEngineWorld();
    const annotated = key("a", ids.organizationId).replace(
      "metadata:\n  name: a\n",
      'metadata:\n  name: a\n  annotations:\n    driftless/suspend: "true"\n',
    );
    await world.write("a.yaml", annotated);

    const result = await world.apply();

    expect(statusOf(result, "a")).toMatchObject({ status: "Suspended", next: "done" });
    expect(result.ok).toBe(true);
  });
});
