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

describe("driftless plan with reads on (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let env: Record<string, string>;
  const reads = () => ({ ...env, DRIFTLESS_READS: "on" });

  beforeEach(async () => {
    sim = await startSimulator({ contract: "full", endpointReadyAfterMs: 0 });
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
    expect(doc.reads).toEqual({ read: 1, drifted: 1, unread: 0, unapplied: 0 });
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
    expect(base.code).toBe(0);
    expect(sim.requests).toEqual([]);
  });

  it("says nothing was read when driftless applied none of the resources yet, not that none changed", async () => {
    const fresh = { ...reads(), DRIFTLESS_STATE_DIR: join(root, "fresh-state") };
    const key = `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: renamed
`;

    const empty = await driftlessAsync(["plan"], fresh);
    const json = await driftlessAsync(["plan", "-o", "json"], fresh);
    await writeFile(join(root, "manifests", "key.yaml"), key);
    const partly = await driftlessAsync(["plan"], reads());

    expect(empty.code).toBe(2);
    expect(empty.stdout).toContain(
      "NOTE: no live object of a resource driftless applied was read: it has applied none of these resources yet; a resource driftless has not applied yet was compared with the live object its manifest names, if any (its first apply sends only what differs from git)",
    );
    expect(empty.stdout).not.toContain("none was changed outside git");
    expect(JSON.parse(json.stdout).reads).toEqual({ read: 0, drifted: 0, unread: 0, unapplied: 1 });
    expect(partly.stdout).toContain(
      "NOTE: the live objects of 1 resource(s) were read: 1 changed outside git, shown as the changes that put git's values back (an apply, or the daemon's next write, sends them); a resource driftless has not applied yet was compared with the live object its manifest names, if any (its first apply sends only what differs from git)",
    );
  });
});
