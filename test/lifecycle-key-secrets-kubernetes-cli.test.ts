import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { type FakeKubernetes, type RecordedRequest, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * A created API key whose manifest says `secretTarget: {kubernetesSecret: NAME}`, through the built CLI
 * against the simulator's published contract and the fake Kubernetes API: the Secret an installation
 * created empty ahead is read, then replaced with the key's id and secret (its labels, annotations and
 * resourceVersion kept) before the POST, and that pair authenticates; a Secret holding another pair, or
 * a missing Secret whose create the Role refuses, stops the create before anything reaches the platform.
 */

const NAMESPACE = "driftless-keys";
const TARGET = "deployer-key";
const KEY_POSTS = "POST /v1/organizations/{organizationId}/keys";

const KEY = `apiVersion: driftless/v1
kind: ApiKey
metadata: { name: deployer }
spec:
  organizationId: ${ids.organizationId}
  name: deployer
  roles: [developer]
  secretTarget: { kubernetesSecret: ${TARGET} }
`;

/** As `kubectl apply` of the deploy's key-secrets component leaves it: no data, kubectl's marks. */
const EMPTY_SECRET = {
  apiVersion: "v1",
  kind: "Secret",
  type: "Opaque",
  metadata: {
    name: TARGET,
    labels: { "app.kubernetes.io/name": "driftless", "app.kubernetes.io/component": "key-secrets" },
    annotations: {
      "kubectl.kubernetes.io/last-applied-configuration": `{"apiVersion":"v1","kind":"Secret","metadata":{"name":"${TARGET}"},"type":"Opaque"}`,
    },
  },
};

let sim: Simulator;
let kube: FakeKubernetes;
let root: string;
let env: Record<string, string>;
/** Both servers' requests in the order they arrived: one thread records both, in arrival order. */
let arrivals: string[];

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: { management: false, observability: false } });
  kube = await startFakeKubernetes();
  root = await mkdtemp(join(tmpdir(), "driftless-key-secrets-"));
  await mkdir(join(root, "manifests"));
  await writeFile(join(root, "manifests", "key.yaml"), KEY);
  env = {
    ...platformEnv(sim),
    DRIFTLESS_MANIFESTS: join(root, "manifests"),
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_NAMESPACE: NAMESPACE,
    KUBECONFIG: kube.kubeconfigPath,
  };
  arrivals = [];
  tap(sim.requests, (r) => `platform ${r.method} ${r.route}`);
  tap(kube.requests, (r) => `kubernetes ${r.method} ${r.path.replace(/^\/api\/v1\/namespaces\/[^/]+/, "")}`);
});
afterEach(async () => {
  await sim.close();
  await kube.close();
  await rm(root, { recursive: true, force: true });
});

/** Records into `arrivals` what is pushed to `list` from now on. */
function tap<T>(list: T[], name: (item: T) => string) {
  const push = list.push.bind(list);
  list.push = (...items: T[]) => {
    for (const item of items) arrivals.push(name(item));
    return push(...items);
  };
}

const apply = async () => {
  const result = await driftlessAsync(["apply", "-o", "json"], env);
  const statuses = result.stdout ? JSON.parse(result.stdout).statuses : [];
  return { ...result, status: statuses[0] as { status: string; message?: string } | undefined };
};
const keyPosts = () => sim.requests.filter((r) => `${r.method} ${r.route}` === KEY_POSTS);
const secretData = () =>
  Object.fromEntries(
    Object.entries(kube.get("secrets", NAMESPACE, TARGET)?.data ?? {}).map(([k, v]) => [
      k,
      Buffer.from(v, "base64").toString("utf8"),
    ]),
  );
const encoded = (data: Record<string, string>) =>
  Object.fromEntries(Object.entries(data).map(([k, v]) => [k, Buffer.from(v).toString("base64")]));
const kubeWrites = () => kube.requests.filter((r: RecordedRequest) => r.method !== "GET");
const authenticates = async ({ keyId, keySecret }: Record<string, string | undefined>) => {
  const authorization = `Basic ${Buffer.from(`${keyId}:${keySecret}`).toString("base64")}`;
  const answer = await fetch(`${sim.managementUrl}/v1/organizations/${ids.organizationId}/keys`, {
    headers: { authorization },
  });
  return answer.status;
};

describe("a created key's Kubernetes Secret", () => {
  it("fills the Secret created empty ahead before the POST, keeps its labels and annotations, and the pair works", async () => {
    const before = kube.put("secrets", NAMESPACE, EMPTY_SECRET);

    const result = await apply();

    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(arrivals.filter((a) => !a.startsWith("platform GET"))).toEqual([
      `kubernetes GET /secrets/${TARGET}`,
      `kubernetes GET /secrets/${TARGET}`,
      `kubernetes PUT /secrets/${TARGET}`,
      `platform ${KEY_POSTS}`,
    ]);
    const put = kubeWrites()[0]?.body;
    expect(put?.metadata?.resourceVersion).toBe(before.metadata?.resourceVersion);
    const after = kube.get("secrets", NAMESPACE, TARGET);
    expect(after?.metadata?.labels).toEqual(EMPTY_SECRET.metadata.labels);
    expect(after?.metadata?.annotations).toEqual(EMPTY_SECRET.metadata.annotations);
    const pair = secretData();
    expect(Object.keys(pair).sort()).toEqual(["keyId", "keySecret"]);
    expect(JSON.stringify(keyPosts()[0]?.body)).not.toContain(pair.keySecret);
    expect(await authenticates(pair)).toBe(200);
    expect(await authenticates({ ...pair, keySecret: `${pair.keySecret}x` })).toBe(401);
  });

  it("sends nothing more on the next apply: the key is created once, its Secret written once", async () => {
    kube.put("secrets", NAMESPACE, EMPTY_SECRET);
    expect((await apply()).code).toBe(0);
    const pair = secretData();
    kube.requests.length = 0;
    sim.clearRequests();

    const again = await apply();

    expect(again.code, again.stderr + again.stdout).toBe(0);
    expect(keyPosts()).toEqual([]);
    expect(kubeWrites()).toEqual([]);
    expect(secretData()).toEqual(pair);
  });

  it("creates a missing Secret, labelled as driftless's, where the Role allows create", async () => {
    const result = await apply();

    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(kubeWrites().map((r) => r.method)).toEqual(["POST"]);
    expect(kube.get("secrets", NAMESPACE, TARGET)?.metadata?.labels).toEqual({
      "app.kubernetes.io/managed-by": "driftless",
    });
    expect(await authenticates(secretData())).toBe(200);
    expect(arrivals.indexOf(`kubernetes POST /secrets`)).toBeLessThan(
      arrivals.indexOf(`platform ${KEY_POSTS}`),
    );
  });

  it("refuses a Secret that holds another key's pair: it is left as it is and no POST is sent", async () => {
    const other = { keyId: "OTHERKEYID00000000A1B2", keySecret: "another-keys-secret" };
    kube.put("secrets", NAMESPACE, {
      ...EMPTY_SECRET,
      data: encoded(other),
    });

    const result = await apply();

    expect(result.code).toBe(1);
    expect(result.status?.status).toBe("Failed");
    expect(result.status?.message).toContain(
      `Secret ${TARGET} already holds the id and secret of another key (its id ends A1B2)`,
    );
    expect(keyPosts()).toEqual([]);
    expect(kubeWrites()).toEqual([]);
    expect(secretData()).toEqual(other);
  });

  it("writes nothing over a pair that appeared in the Secret after the create read it, and sends no POST", async () => {
    kube.put("secrets", NAMESPACE, EMPTY_SECRET);
    const other = { keyId: "RACEDKEYID000000000C3D4", keySecret: "a-pair-written-meanwhile" };
    let reads = 0;
    // Another writer fills the Secret between the create's first read and the write's own read.
    kube.setFault({ delayMs: 0 }, (r) => {
      if (r.method === "GET" && ++reads === 2)
        kube.put("secrets", NAMESPACE, { ...EMPTY_SECRET, data: encoded(other) });
      return false;
    });

    const result = await apply();

    expect(reads).toBe(2);
    expect(result.code).toBe(1);
    expect(result.status?.message).toContain(
      `the Secret ${NAMESPACE}/${TARGET} now holds the id and secret of another key (its id ends C3D4)`,
    );
    expect(kubeWrites()).toEqual([]);
    expect(secretData()).toEqual(other);
    expect(keyPosts()).toEqual([]);
  });

  it("refuses a Secret that holds something else than a pair, and never writes over it", async () => {
    kube.put("secrets", NAMESPACE, {
      ...EMPTY_SECRET,
      data: encoded({ token: "someone-elses-token" }),
    });

    const result = await apply();

    expect(result.code).toBe(1);
    expect(result.status?.message).toContain(
      `the Secret ${NAMESPACE}/${TARGET} exists but holds no keyId and keySecret`,
    );
    expect(keyPosts()).toEqual([]);
    expect(kubeWrites()).toEqual([]);
    expect(secretData()).toEqual({ token: "someone-elses-token" });
  });

  it("says to create the Secret empty and name it in the Role when the Role refuses create, and sends no POST", async () => {
    kube.setFault({ status: 403 }, (r) => r.method === "POST");

    const result = await apply();

    expect(result.code).toBe(1);
    expect(result.status?.message).toContain(`cannot write the Secret ${NAMESPACE}/${TARGET}`);
    expect(result.status?.message).toContain(
      "create the Secret empty ahead and name it in the Role, as the deploy's key-secrets component (deploy/components/key-secrets) does",
    );
    expect(kubeWrites().map((r) => r.method)).toEqual(["POST"]);
    expect(kube.get("secrets", NAMESPACE, TARGET)).toBeUndefined();
    expect(keyPosts()).toEqual([]);
  });

  it("goes on with the create when the Secret's write landed but its answer was lost, and writes it once", async () => {
    kube.put("secrets", NAMESPACE, EMPTY_SECRET);
    kube.setFault({ afterEffect: "reset" }, (r) => r.method === "PUT");

    const result = await apply();

    expect(result.code, result.stderr + result.stdout).toBe(0);
    expect(kubeWrites().map((r) => r.method)).toEqual(["PUT"]);
    expect(keyPosts()).toHaveLength(1);
    expect(await authenticates(secretData())).toBe(200);
  });
});
