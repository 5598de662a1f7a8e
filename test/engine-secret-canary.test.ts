import { readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { renderPlan } from "../src/plan/render.js";
import { keyHashes } from "../src/platform/management.js";
import type { PlanReport } from "../src/reconcile/engine.js";
import { renderMarkdown } from "../src/review/markdown.js";
import { type EngineWorld, header, ids, startEngineWorld } from "./helpers/engine-world.js";
import { createHttpTestServer } from "./helpers/http-test-server.js";

/** A secret's value reaches the platform and nothing else: not plans, logs, statuses or the state. */

const CANARY_FILE = "canary-9f8e7d6c5b4a-file";
const CANARY_ENV = "canary-1a2b3c4d5e6f-env";

const pipe = `${header("DataPipe", "events")}  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.objectStoragePipeId}
  name: events
  source:
    objectStorage:
      accessKey:
        accessKeyId: {fromEnv: CANARY_KEY_ID}
        secretKey: {fromFile: s3/secret-key}
`;

describe("secret canary", () => {
  let world: EngineWorld;
  beforeEach(async () => {
    world = await startEngineWorld();
    world.env.CANARY_KEY_ID = CANARY_ENV;
    const { mkdir } = await import("node:fs/promises");
    await mkdir(join(world.secretsDir, "s3"));
    await writeFile(join(world.secretsDir, "s3", "secret-key"), `${CANARY_FILE}\n`);
    await world.write("pipe.yaml", pipe);
  });
  afterEach(() => world.close());

  it("is sent to the platform but never appears in plan output, statuses, logs or the state folder", async () => {
    const plan = await world.plan();
    const result = await world.apply();
    await writeFile(join(world.secretsDir, "s3", "secret-key"), `${CANARY_FILE}-rotated\n`);
    const rotatedPlan = await world.plan();
    await world.apply();

    const wire = JSON.stringify(world.writes().map((r) => r.body));
    expect(wire).toContain(CANARY_FILE);
    expect(wire).toContain(CANARY_ENV);
    const seen = [
      JSON.stringify(plan),
      renderPlan(plan.resources, plan.problems),
      JSON.stringify(rotatedPlan),
      renderPlan(rotatedPlan.resources, rotatedPlan.problems),
      JSON.stringify(result),
      world.logs.join(""),
      await world.stateFolderText(),
    ].join("\n");
    expect(world.logs.length).toBeGreaterThan(0);
    expect(seen).not.toContain("canary-");
    expect(renderPlan(rotatedPlan.resources, rotatedPlan.problems)).toContain(
      "source.objectStorage.accessKey.secretKey: (changed)",
    );
    expect(renderPlan(rotatedPlan.resources, rotatedPlan.problems)).toContain(
      "source.objectStorage.accessKey.accessKeyId: (unchanged)",
    );
  });

  it("is masked in a platform error message that echoes the request body", async () => {
    const echoed = `{"status":400,"error":"bad credentials: accessKeyId=${CANARY_ENV} secretKey=\\"${CANARY_FILE}\\"","requestId":"req-echo-1"}`;
    world.sim.inject({ api: "management", method: "PATCH", kind: "status", status: 400, body: echoed });

    const result = await world.apply();

    const status = result.statuses.find((s) => s.name === "events");
    expect(status?.status).toBe("Failed");
    expect(status?.requestId).toBe("req-echo-1");
    expect(status?.message).toContain("bad credentials");
    const seen = [JSON.stringify(result), world.logs.join(""), await world.stateFolderText()].join("\n");
    expect(seen).not.toContain("canary-");
  });

  it("is not kept in the state when the platform's answer carries it back", async () => {
    const platform = await createHttpTestServer((request) => ({
      status: 200,
      body: {
        status: 200,
        requestId: "req-echo-2",
        result: { id: ids.objectStoragePipeId, name: "events", ...(request.json as object) },
      },
    }));
    await world.write(
      "pipe.yaml",
      pipe.replace("      accessKey:", "      connectionString: {fromFile: s3/secret-key}\n      accessKey:"),
    );
    try {
      const result = await world.apply({}, { config: { managementUrl: platform.url } });

      expect(result.ok).toBe(true);
      expect(platform.requests[0]?.body).toContain(CANARY_FILE);
      expect(await world.stateFolderText()).not.toContain("canary-");
    } finally {
      await platform.close();
    }
  });
});

/** A plan as a user sees it: its text, its JSON and its pull-request comment. */
const shownPlan = (plan: PlanReport) =>
  [
    JSON.stringify(plan),
    renderPlan(plan.resources, plan.problems),
    renderMarkdown({ views: plan.resources, problems: plan.problems }),
  ].join("\n");

const KEY_CREATE = "/v1/organizations/{organizationId}/keys";

const createdKey = (roles: string) => `${header("ApiKey", "reporting")}  organizationId: ${ids.organizationId}
  name: reporting
  roles: [${roles}]
  secretTarget: {file: reporting-key}
`;

describe("secret canary: an API key driftless creates", () => {
  let world: EngineWorld;
  beforeEach(async () => {
    world = await startEngineWorld({ simulator: { contract: "full" } });
  });
  afterEach(() => world.close());

  it("writes its id and secret to the target only: never to a plan, the platform, a status, a log or the state", async () => {
    const keySecretsDir = join(world.stateDir, "..", "key-secrets");
    const wiring = { config: { keySecretsDir }, reads: true };
    await world.write("key.yaml", createdKey("query_endpoints"));
    const before = await world.plan({ reads: true });
    // The create's answer is lost: the state keeps the create's intent until the list settles it.
    world.sim.inject({ api: "management", method: "POST", route: KEY_CREATE, kind: "drop", applied: true });

    const lost = await world.apply({}, wiring);
    const stateWhileUnknown = await world.stateFolderText();
    const settled = await world.apply({}, wiring);
    await world.write("key.yaml", createdKey("query_endpoints, developer"));
    const changed = await world.plan({ reads: true });
    const updated = await world.apply({}, wiring);

    const pair = JSON.parse(await readFile(join(keySecretsDir, "reporting-key"), "utf8"));
    expect(renderPlan(changed.resources, changed.problems)).toContain("roles");
    expect(world.logs.length).toBeGreaterThan(0);
    const { keySecretHash } = keyHashes(pair.keyId, pair.keySecret);
    expect(`${stateWhileUnknown}${await world.stateFolderText()}`).not.toContain(keySecretHash);
    expect(stateWhileUnknown).not.toContain(pair.keySecret);
    expect([lost, settled, updated].map((r) => r.statuses[0]?.status)).toEqual([
      "Unknown",
      "Synced",
      "Synced",
    ]);
    const shown = [
      shownPlan(before),
      shownPlan(changed),
      JSON.stringify(world.sim.requests.map((r) => [r.path, r.body])),
      JSON.stringify([lost, settled, updated]),
      world.logs.join(""),
      await world.stateFolderText(),
    ].join("\n");
    expect(shown).not.toContain(pair.keySecret);
    // The id is not secret (the platform lists its last characters), and only the state's intent of a
    // create in flight holds it whole, to tell this key's pair from another's: nothing else needs it.
    expect(shown).not.toContain(pair.keyId);
  });
});
