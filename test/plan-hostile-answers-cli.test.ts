import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { cutNote, MAX_ANSWER_DEPTH } from "../src/bounded-values.js";
import { type Fault, defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { ciDeployerKey } from "./helpers/manifests.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * `driftless plan` with reads on against a platform whose read answers strangely (the simulator's
 * hostile answers): a value 6,000 levels deep, a list of 20,000 entries, a field of the wrong type,
 * members in another order. Each gives a plan, with what could not be shown cut and what could not be
 * read said, never a crash.
 */

const KEY_ROUTE = "/v1/organizations/{organizationId}/keys/{keyId}";
const PIPE_ROUTE = "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}";

const pipe = `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: orders
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kafkaPipeId}
  fieldMappings:
    - {sourceField: id, destinationField: order_id}
`;

const key = ciDeployerKey(
  "ci-deployer",
  `  roles: [developer]
  ipAccessList:
    - {source: 10.0.0.0/8, description: office}
    - {source: 203.0.113.0/24, description: CI runners}
`,
);

describe("driftless plan with reads on, against hostile answers (built CLI)", () => {
  let sim: Simulator;
  let root: string;
  let env: Record<string, string>;

  beforeEach(async () => {
    sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
    root = await mkdtemp(join(tmpdir(), "driftless-plan-hostile-"));
    await mkdir(join(root, "manifests"));
    await writeFile(join(root, "manifests", "key.yaml"), key);
    await writeFile(join(root, "manifests", "pipe.yaml"), pipe);
    env = {
      DRIFTLESS_MANIFESTS: join(root, "manifests"),
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: root,
      ...platformEnv(sim),
    };
    expect((await driftlessAsync(["apply"], env)).code).toBe(0);
  });
  afterEach(async () => {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  });

  /** `plan` (text, or `-o json`) with reads on, the key's read (or the route's) answered as `fault` says. */
  const planAgainst = (fault: Omit<Fault, "api">, output: string[] = []) => {
    sim.inject({ api: "management", method: "GET", route: KEY_ROUTE, ...fault });
    return driftlessAsync(["plan", ...output], { ...env, DRIFTLESS_READS: "on" });
  };

  it("shows a pipe's field mappings answered 6,000 levels deep cut, in text and JSON, as a change to send", async () => {
    const deep = { route: PIPE_ROUTE, kind: "deep", field: "fieldMappings" } as const;

    const text = await planAgainst(deep);
    const json = await planAgainst(deep, ["-o", "json"]);

    expect(text.code, text.stderr).toBe(2);
    expect(text.stdout).toMatch(
      /fieldMappings: \{"a":\{"a":.*\{…\}\}+ \(cut below 12 levels\) -> \[\{"sourceField":"id".*\(changed outside git\)/,
    );
    expect(json.code, json.stderr).toBe(2);
    const pipeView = JSON.parse(json.stdout).resources.find((r: { kind: string }) => r.kind === "DataPipe");
    expect(pipeView.changes[0].path).toBe("fieldMappings");
    expect(JSON.stringify(pipeView.changes[0].from)).toContain(JSON.stringify(cutNote(MAX_ANSWER_DEPTH)));
  });

  it("shows a live list of 20,000 entries cut at 2,000 characters, with its size", async () => {
    const text = await planAgainst({ kind: "huge", field: "ipAccessList" });

    expect(text.code, text.stderr).toBe(2);
    const line = text.stdout.split("\n").find((l) => l.includes("ipAccessList:")) ?? "";
    expect(line).toContain('{"source":"10.0.0.0/8 #0","description":"office #0"}');
    expect(line).toContain("… (cut at 2000 characters; a list of 20000 entries) -> [");
    expect(line.length).toBeLessThan(2_400);
  });

  it("names a resource whose answer has a field of the wrong type as not read, and why", async () => {
    const text = await planAgainst({ kind: "wrong-type", field: "ipAccessList" });

    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("1 could not be read (see their notes)");
    expect(text.stdout).toMatch(
      /= ApiKey\/ci-deployer: in sync: .*\n {4}note: the live object could not be read: .*ipAccessList/,
    );
  });

  it("finds nothing changed outside git in an answer whose members come in another order", async () => {
    const text = await planAgainst({ route: PIPE_ROUTE, kind: "reordered" });

    expect(text.code, text.stderr).toBe(0);
    expect(text.stdout).toContain("none was changed outside git");
  });
});
