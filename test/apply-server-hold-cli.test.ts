import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, expect, it } from "vitest";
import { defaultIds, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync, repo } from "./helpers/cli.js";
import { mskEndpoint } from "./helpers/manifests.js";
import {
  ciKey,
  keyIdOf,
  production,
  staging,
  twoOrganizations,
  writeCredentialsDir,
} from "./helpers/two-organizations.js";

/**
 * A 429 asking one key to wait a day, through the built CLI: the request that got it fails at once,
 * and so does every other request of that key that would have to wait past its own deadline for the
 * key's budget (which the 429 holds for the capped 5 minutes); the other key's requests and the
 * observability API's go out. `apply` ends as soon as that is done, saying which waited and why.
 * The test's time-out (30 s) is far below the 5 minutes the hold lasts: a pass that waits it out fails.
 */

const ENDPOINTS = "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

let sim: Simulator;
let root: string;
let env: Record<string, string>;

beforeEach(async () => {
  sim = await startSimulator({
    fixture: twoOrganizations(),
    rateLimit: { management: false, observability: false },
    endpointReadyAfterMs: 0,
  });
  root = await mkdtemp(join(tmpdir(), "driftless-hold-"));
  const manifests = join(root, "manifests");
  await mkdir(manifests);
  // The endpoint is of the first phase: its POST is answered first, before any other write is asked for.
  await writeFile(join(manifests, "endpoint.yaml"), mskEndpoint("orders-msk"));
  await writeFile(join(manifests, "production.yaml"), ciKey("ci-production", production, "ci prod"));
  await writeFile(join(manifests, "staging.yaml"), ciKey("ci-staging", staging, "ci staging"));
  await cp(join(repo, "examples", "dashboards"), join(manifests, "dashboards"), { recursive: true });
  env = {
    DRIFTLESS_MANIFESTS: manifests,
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: join(root, "secrets"),
    DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
    DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
    DRIFTLESS_OBSERVABILITY_TOKEN: sim.credentials.observabilityToken,
    DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR: await writeCredentialsDir(join(root, "credentials"), [
      production,
      staging,
    ]),
  };
});

afterEach(async () => {
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

it("a one-day Retry-After on one key fails that key's waiting writes at once; the others go out", async () => {
  sim.inject({
    api: "management",
    method: "POST",
    route: ENDPOINTS,
    kind: "status",
    status: 429,
    headers: { "retry-after": "86400" },
    body: { status: 429, error: "too many requests" },
  });

  const applied = await driftlessAsync(["apply"], env);

  expect(applied.code, applied.stderr).toBe(1);
  const sent = sim.requests.map(
    (r) => `${r.method} ${r.path} ${keyIdOf(r.headers.authorization) ?? "token"}`,
  );
  expect(sent).toEqual(
    expect.arrayContaining([
      `POST /v1/organizations/${production.organizationId}/services/${defaultIds.serviceId}/datapipesReversePrivateEndpoints ${production.keyId}`,
      `PATCH /v1/organizations/${staging.organizationId}/keys/${staging.ciKeyId} ${staging.keyId}`,
      "PUT /api/v2/dashboards/65f1a2b3c4d5e6f708192a3b token",
    ]),
  );
  expect(sent).toHaveLength(3);
  expect(applied.stdout).toMatch(
    /Failed\s+ReversePrivateEndpoint\/orders-msk\s+.*answered 429.*the platform asked to wait 86400 s, capped at 300 s, more than the 120 s left/,
  );
  expect(applied.stdout).toMatch(
    /Failed\s+ApiKey\/ci-production\s+management API PATCH \/v1\/organizations\/\{organizationId\}\/keys\/\{keyId\} not sent: .*held.*a 429 answer to POST \S+datapipesReversePrivateEndpoints asked for 86400 s, capped at 300 s.*deadline/,
  );
  expect(applied.stdout).toMatch(/Synced\s+ApiKey\/ci-staging/);
  expect(applied.stdout).toMatch(/Synced\s+Dashboard\/platform-overview/);
});
