import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { basicAuthorization } from "../src/platform/management.js";
import { type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync as driftless } from "./helpers/cli.js";
import {
  ciKey,
  keyIdOf,
  production,
  staging,
  twoOrganizations,
  writeCredentialsDir,
} from "./helpers/two-organizations.js";

/**
 * One plan/apply over two organizations, each with its own management key in
 * DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR, through the built CLI against a simulator that refuses each key
 * on the other's organization. Needs dist/ built.
 */

describe("several organizations (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let env: Record<string, string>;

  beforeEach(async () => {
    sim = await startSimulator({
      fixture: twoOrganizations(),
      rateLimit: { management: false, observability: false },
    });
    root = await mkdtemp(join(tmpdir(), "driftless-orgs-"));
    await mkdir(join(root, "manifests"));
    await writeFile(
      join(root, "manifests", "production.yaml"),
      ciKey("ci-production", production, "ci prod"),
    );
    await writeFile(join(root, "manifests", "staging.yaml"), ciKey("ci-staging", staging, "ci staging"));
    env = {
      DRIFTLESS_MANIFESTS: join(root, "manifests"),
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: join(root, "secrets"),
      DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
      DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
      DRIFTLESS_OBSERVABILITY_TOKEN: sim.credentials.observabilityToken,
      DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR: join(root, "credentials"),
    };
  });
  afterEach(async () => {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  it("refuses each key on the other's organization, as the platform does", async () => {
    const patch = (organizationId: string, keyId: string, secret: string) =>
      fetch(`${sim.managementUrl}/v1/organizations/${organizationId}`, {
        method: "PATCH",
        headers: { authorization: basicAuthorization(keyId, secret), "content-type": "application/json" },
        body: "{}",
      });

    const crossed = [
      await patch(staging.organizationId, production.keyId, production.keySecret),
      await patch(production.organizationId, staging.keyId, staging.keySecret),
    ];

    expect(crossed.map((r) => r.status)).toEqual([403, 403]);
  });

  it("sends each organization's requests with that organization's key", async () => {
    await writeCredentialsDir(env.DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR as string, [production, staging]);

    const applied = await driftless(["apply", "--output", "json"], env);

    expect(applied.code, applied.stderr).toBe(0);
    const sent = sim.requests.map((r) => ({
      path: r.path,
      key: keyIdOf(r.headers.authorization),
      status: r.status,
    }));
    expect(sent).toHaveLength(2);
    expect(sent).toEqual(
      expect.arrayContaining([
        {
          path: `/v1/organizations/${production.organizationId}/keys/${production.ciKeyId}`,
          key: production.keyId,
          status: 200,
        },
        {
          path: `/v1/organizations/${staging.organizationId}/keys/${staging.ciKeyId}`,
          key: staging.keyId,
          status: 200,
        },
      ]),
    );
    const statuses = JSON.parse(applied.stdout).statuses;
    expect(statuses).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: "ci-production",
          status: "Synced",
          organization: production.organizationId,
        }),
        expect.objectContaining({
          name: "ci-staging",
          status: "Synced",
          organization: staging.organizationId,
        }),
      ]),
    );
  });

  it("fails, sending nothing, the resources of an organization without a key; the others apply", async () => {
    await writeCredentialsDir(env.DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR as string, [production]);

    const planned = await driftless(["plan"], env);
    const applied = await driftless(["apply"], env);

    expect(planned.stdout).toContain(`no management key for organization ${staging.organizationId}`);
    expect(applied.code).toBe(1);
    expect(applied.stdout).toMatch(
      new RegExp(
        `Failed\\s+ApiKey/ci-staging\\s+no management key for organization ${staging.organizationId}`,
      ),
    );
    expect(applied.stdout).toMatch(/Synced\s+ApiKey\/ci-production/);
    expect(sim.requests.map((r) => r.path)).toEqual([
      `/v1/organizations/${production.organizationId}/keys/${production.ciKeyId}`,
    ]);
  });

  it("uses the single key for an organization the folder does not name", async () => {
    await writeCredentialsDir(env.DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR as string, [staging]);

    const applied = await driftless(["apply"], {
      ...env,
      DRIFTLESS_MANAGEMENT_KEY_ID: production.keyId,
      DRIFTLESS_MANAGEMENT_KEY_SECRET: production.keySecret,
    });

    expect(applied.code, applied.stdout).toBe(0);
    expect(sim.requests.map((r) => [r.path.split("/")[3], keyIdOf(r.headers.authorization)]).sort()).toEqual(
      [
        [production.organizationId, production.keyId],
        [staging.organizationId, staging.keyId],
      ].sort(),
    );
  });

  it("guards each organization's own key against a lock-out", async () => {
    await writeCredentialsDir(env.DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR as string, [production, staging]);
    const own = `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: driftless-staging
spec:
  organizationId: ${staging.organizationId}
  keyId: ${staging.keyId}
  roles: [developer]
`;
    await writeFile(join(root, "manifests", "staging-own.yaml"), own);

    const applied = await driftless(["apply"], env);

    expect(applied.code).toBe(1);
    expect(applied.stdout).toMatch(
      /Failed\s+ApiKey\/driftless-staging\s+refused: this is the key driftless authenticates with/,
    );
    expect(sim.requests.filter((r) => r.path.endsWith(staging.keyId))).toEqual([]);
  });
});
