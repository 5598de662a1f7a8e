import { cp, mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { platformEnv } from "./helpers/platform-env.js";

/** `driftless plan` with DRIFTLESS_READS=on, as a person runs it after a console edit. */

const org = `apiVersion: driftless/v1
kind: Organization
metadata:
  name: acme
spec:
  organizationId: ${ids.organizationId}
  name: Acme Analytics
`;

const IDS_NOT_CHECKED = "the ids the manifests name were not checked to exist";

/** Manifests driftless never applied, each naming an object by an id the platform does not have. */
const ghosts = `apiVersion: driftless/v1
kind: Organization
metadata:
  name: ghost-org
spec:
  organizationId: 0a0b0c0d-0000-4000-8000-0000000000ff
  name: Ghost
---
apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ghost-key
spec:
  organizationId: ${ids.organizationId}
  keyId: 0a0b0c0d-0000-4000-8000-000000000001
  name: ghost
---
apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: ghost-board
spec:
  dashboardId: 65f1a2b3c4d5e6f7081929ff
  name: Ghost
  tiles: []
---
apiVersion: driftless/v1
kind: ReversePrivateEndpoint
metadata:
  name: ghost-endpoint
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  id: 0e0e0e0e-0000-4000-8000-000000000001
  description: an endpoint that is not there
  type: MSK_MULTI_VPC
  mskClusterArn: arn:aws:kafka:eu-west-1:111122223333:cluster/ghost/5a1b2c3d-4e5f-6a7b-8c9d-0e1f2a3b4c5d-9
  mskAuthentication: SASL_SCRAM
---
apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ci deployer
`;

describe("driftless plan with reads on (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let env: Record<string, string>;
  const reads = () => ({ ...env, DRIFTLESS_READS: "on" });

  beforeEach(async () => {
    // No rate limit: a test here runs several plans that each read every object, and none is about waits.
    sim = await startSimulator({
      contract: "full",
      endpointReadyAfterMs: 0,
      rateLimit: { management: false, observability: false },
    });
    root = await mkdtemp(join(tmpdir(), "driftless-plan-reads-"));
    await mkdir(join(root, "manifests"));
    await writeFile(join(root, "manifests", "org.yaml"), org);
    env = {
      DRIFTLESS_MANIFESTS: join(root, "manifests"),
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: root,
      ...platformEnv(sim),
    };
    expect((await driftlessAsync(["apply"], env)).code).toBe(0);
    const live = sim.state.organizations[0];
    if (live) live.name = "Renamed in the console";
    sim.clearRequests();
  });
  afterEach(async () => {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  it("shows the console's rename as a change to send, marked, in text, JSON and Markdown", async () => {
    const text = await driftlessAsync(["plan"], reads());
    const json = await driftlessAsync(["plan", "-o", "json"], reads());
    const markdown = await driftlessAsync(["plan", "-o", "markdown"], reads());

    expect(text.code).toBe(2);
    expect(text.stdout).toContain(
      'name: "Renamed in the console" -> "Acme Analytics"  (changed outside git)',
    );
    expect(text.stdout).toContain("the live objects of 1 resource(s) were read: 1 changed outside git");
    const doc = JSON.parse(json.stdout);
    expect(json.code).toBe(2);
    expect(doc.reads).toEqual({ read: 1, drifted: 1, unread: 0, unapplied: 0, checked: 0, missing: 0 });
    expect(doc.resources[0].changes).toEqual([
      { path: "name", from: "Renamed in the console", to: "Acme Analytics", op: "set", outsideGit: true },
    ]);
    expect(markdown.stdout).toContain("(changed outside git)");
    expect(sim.requests.map((r) => r.method)).toEqual(["GET", "GET", "GET"]);
  });

  it("apply --reads on puts the console's rename back, as plan showed", async () => {
    const applied = await driftlessAsync(["apply", "--reads", "on"], env);

    expect(applied.code, applied.stderr).toBe(0);
    expect(sim.requests.map((r) => r.method)).toEqual(["GET", "PATCH"]);
    expect(sim.state.organizations[0]?.name).toBe("Acme Analytics");
  });

  it("reads nothing with reads off, and plan --base stays offline with reads on", async () => {
    const off = await driftlessAsync(["plan"], env);
    const dir = join(root, "head");
    await cp(join(root, "manifests"), dir, { recursive: true });
    const base = await driftlessAsync(["plan", "--base", join(root, "manifests"), dir], reads());

    expect(off.code).toBe(0);
    expect(off.stdout).not.toContain("outside git");
    expect(off.stdout.split(IDS_NOT_CHECKED)).toHaveLength(2);
    expect(off.stdout).toContain(
      `NOTE: ${IDS_NOT_CHECKED} (DRIFTLESS_READS=off): one that names no object fails only when apply sends its request; DRIFTLESS_READS=on checks them.`,
    );
    expect(base.code).toBe(0);
    expect(sim.requests).toEqual([]);
  });

  it("says no live object was compared when driftless applied none of the resources yet, not that none changed", async () => {
    const fresh = { ...reads(), DRIFTLESS_STATE_DIR: join(root, "fresh-state") };
    const key = `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: renamed
---
apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: new-board
spec:
  name: New board
  tiles: []
`;

    const empty = await driftlessAsync(["plan"], fresh);
    const json = await driftlessAsync(["plan", "-o", "json"], fresh);
    await writeFile(join(root, "manifests", "key.yaml"), key);
    const partly = await driftlessAsync(["plan"], reads());

    expect(empty.code).toBe(2);
    expect(empty.stdout).toContain(
      "NOTE: no live object of a resource driftless applied was read: it has applied none of these resources yet; the ids of 1 resource(s) driftless has not applied yet were checked: each names an object of the platform; those found were compared with git (their first apply sends only what differs)\n",
    );
    expect(empty.stdout).not.toContain("none was changed outside git");
    expect(JSON.parse(json.stdout).reads).toEqual({
      read: 0,
      drifted: 0,
      unread: 0,
      unapplied: 0,
      checked: 1,
      missing: 0,
    });
    expect(partly.stdout).toContain(
      "NOTE: the live objects of 1 resource(s) were read: 1 changed outside git, shown as the changes that put git's values back (an apply, or the daemon's next write, sends them); the ids of 1 resource(s) driftless has not applied yet were checked: each names an object of the platform; those found were compared with git (their first apply sends only what differs); 1 resource(s) that name no id yet are not read (a first apply creates them)\n",
    );
  });

  it("checks that each id a never-applied manifest names exists: a 404 or an id its list lacks is an error with what to do", async () => {
    await writeFile(join(root, "manifests", "ghosts.yaml"), ghosts);

    const text = await driftlessAsync(["plan"], reads());
    const json = await driftlessAsync(["plan", "-o", "json"], reads());
    const markdown = await driftlessAsync(["plan", "-o", "markdown"], reads());
    const off = await driftlessAsync(["plan"], env);

    expect(text.code, text.stderr).toBe(1);
    // An organization has no list: its GET answers 404. The others are looked for in their lists.
    expect(text.stdout).toMatch(
      /^! Organization\/ghost-org: error: no such object in the platform \(the id was checked before a first apply\): management API GET \/v1\/organizations\/\{organizationId\} answered 404: .*; the organizationId names no organization.*$/m,
    );
    expect(text.stdout).toContain(
      "! ApiKey/ghost-key: error: no such object in the platform (the id was checked before a first apply): its keyId names no key of the organization: fix the id, or remove keyId from the manifest to let driftless create the key\n",
    );
    expect(text.stdout).toContain(
      "! Dashboard/ghost-board: error: no such object in the platform (the id was checked before a first apply): its dashboardId names no dashboard of the team: fix the id, or remove dashboardId from the manifest to let driftless create the dashboard\n",
    );
    expect(text.stdout).toContain(
      "! ReversePrivateEndpoint/ghost-endpoint: error: no such object in the platform (the id was checked before a first apply): its id names no endpoint of the service: fix the id, or remove id from the manifest to let driftless create the endpoint\n",
    );
    // The key that exists is planned as a first contact.
    expect(text.stdout).toMatch(/^~ ApiKey\/ci: PATCH /m);
    expect(text.stdout).toContain(
      "the ids of 5 resource(s) driftless has not applied yet were checked: 4 name no object (shown as errors)",
    );
    expect(text.stdout).not.toContain(IDS_NOT_CHECKED);
    const doc = JSON.parse(json.stdout);
    expect(doc.reads).toEqual({ read: 1, drifted: 1, unread: 0, unapplied: 0, checked: 5, missing: 4 });
    expect(doc.summary).toMatchObject({ errors: 4, toSend: 2 });
    const ghost = doc.resources.find((r: { name: string }) => r.name === "ghost-key");
    expect(ghost).toMatchObject({ outcome: "refuse", changes: [] });
    expect(ghost.request).toBeUndefined();
    expect(markdown.stdout).toContain("<details><summary>&#33; ApiKey/ghost-key</summary>");
    expect(sim.requests.every((r) => r.method === "GET")).toBe(true);
    expect(off.code).toBe(2);
    expect(off.stdout).toContain(IDS_NOT_CHECKED);
  });
});
