import { afterEach, expect, it } from "vitest";
import { createPlatform } from "../src/commands/platform.js";
import { createReconciler } from "../src/reconcile/engine.js";
import { createFileStore } from "../src/state/file-store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";

/**
 * A refusal the platform will repeat (400, 401, 403, 404, 422) is terminal: sent again only when one of
 * its inputs changes (manifest, secret value, credential) or at a re-assertion. A transient failure
 * (5xx, 429, time-out) is sent again by the next pass.
 */

const KEY_ROUTE = "/v1/organizations/{organizationId}/keys/{keyId}";
const key = (title: string) =>
  `${header("ApiKey", "ci")}  organizationId: ${ids.organizationId}\n  keyId: ${ids.ciDeployerKeyId}\n  name: ${title}\n`;

let world: EngineWorld;
afterEach(() => world.close());

async function daemonLike(w: EngineWorld) {
  const logger = createLogger("silent");
  const platform = await createPlatform(w.config, { logger, http: { retry: { maxAttempts: 1 } } });
  const reconciler = createReconciler({
    manifests: w.manifests,
    store: createFileStore(w.stateDir, { logger }),
    send: platform.send,
    secrets: { env: w.env, secretsDir: w.secretsDir },
    logger,
  });
  return { reconciler, close: () => platform.close() };
}

const keyRequests = () => world.writes().filter((r) => r.route === KEY_ROUTE);
const statusOf = (result: {
  statuses: { kind: string; status: string; failure?: string; message?: string }[];
}) => result.statuses.find((s) => s.kind === "ApiKey");

it("does not send a refused request again until its manifest changes, and says it is terminal", async () => {
  world = await startEngineWorld();
  await world.write("k.yaml", key("renamed once"));
  world.sim.inject({ api: "management", route: KEY_ROUTE, kind: "status", status: 403, count: Infinity });
  const { reconciler, close } = await daemonLike(world);
  try {
    const first = await reconciler.pass({ trigger: "schedule" });
    const second = await reconciler.pass({ trigger: "retry" });
    await world.write("k.yaml", key("renamed twice"));
    const third = await reconciler.pass({ trigger: "watch" });
    const reasserted = await reconciler.pass({ trigger: "reassert", reassert: true });

    expect(statusOf(first)).toMatchObject({ status: "Failed", failure: "terminal" });
    expect(statusOf(second)).toMatchObject({ status: "Failed", failure: "terminal" });
    expect(statusOf(second)?.message).toContain("403");
    expect(statusOf(second)?.message).toContain("not sent again");
    expect(statusOf(third)?.status).toBe("Failed");
    expect(keyRequests().map((r) => (r.body as { name: string }).name)).toEqual([
      "renamed once",
      "renamed twice",
      "renamed twice",
    ]);
    expect(reasserted.statuses).toHaveLength(1);
  } finally {
    await close();
  }
});

it("sends a transiently failed request again at the next pass", async () => {
  world = await startEngineWorld();
  await world.write("k.yaml", key("renamed"));
  world.sim.inject({ api: "management", route: KEY_ROUTE, kind: "status", status: 503, count: 1 });
  const { reconciler, close } = await daemonLike(world);
  try {
    const first = await reconciler.pass({ trigger: "schedule" });
    const second = await reconciler.pass({ trigger: "retry" });

    expect(statusOf(first)).toMatchObject({ status: "Failed", failure: "transient" });
    expect(statusOf(second)?.status).toBe("Synced");
    expect(keyRequests().map((r) => r.status)).toEqual([503, 200]);
  } finally {
    await close();
  }
});
