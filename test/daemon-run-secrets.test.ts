import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { driftlessAsync } from "./helpers/cli.js";
import { files, ids, metricsOf, statusOf, useDaemonRun, WEBHOOK_TOKEN } from "./helpers/daemon-run.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";
import { stateInSecrets } from "./helpers/state-secrets.js";
import { until } from "./helpers/wait.js";

/**
 * Secrets through `driftless run`: a rotated secret file is used by the next pass without a restart,
 * and no secret value ever reaches /status, /metrics, the logs or the state file; the id and secret
 * of a key the daemon creates reach its Kubernetes Secret and nothing else: not a log line, /metrics,
 * /status, the status page, a notification, a plan or the Kubernetes state Secrets.
 */

const PIPE_ROUTE = "/v1/organizations/{organizationId}/services/{serviceId}/datapipes/{dataPipeId}";

const kinesisPipe = `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: clicks-from-kinesis
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kinesisPipeId}
  name: clicks from kinesis
  source:
    kinesis:
      accessKey:
        accessKeyId: { fromFile: kinesis-access-key-id }
        secretKey: { fromFile: kinesis-secret-key }
`;

describe("secrets in driftless run", () => {
  const run = useDaemonRun();

  it("re-reads a rotated secret file at the next pass and never shows a secret", async () => {
    const secrets = join(run.root, "secrets");
    await mkdir(secrets, { recursive: true });
    await writeFile(join(secrets, "kinesis-access-key-id"), "AKIACANARYKEYID0001\n");
    await writeFile(join(secrets, "kinesis-secret-key"), "canary-secret-before-rotation\n");
    await run.layout.publish({ ...files("ci-deployer"), "pipes/kinesis.yaml": kinesisPipe });
    const d = await run.start();
    await until(() =>
      run.simulator.requests.find(
        (r) => r.route === PIPE_ROUTE && JSON.stringify(r.body).includes("before-rotation"),
      ),
    );

    await writeFile(join(secrets, "kinesis-secret-key"), "canary-secret-after-rotation\n");
    await fetch(`${d.url}/hooks/sync/${WEBHOOK_TOKEN}`, { method: "POST" });
    const rotated = await until(() =>
      run.simulator.requests.find(
        (r) => r.route === PIPE_ROUTE && JSON.stringify(r.body).includes("after-rotation"),
      ),
    );
    await d.waitForLog((l) => l.msg === "pass finished" && l.trigger === "webhook");
    const shown = [
      JSON.stringify(await statusOf(d)),
      await metricsOf(d),
      d.stderr(),
      await readFile(join(run.root, "state", "state.json"), "utf8"),
    ].join("\n");

    expect(rotated.body).toEqual({
      source: {
        kinesis: {
          accessKey: { accessKeyId: "AKIACANARYKEYID0001", secretKey: "canary-secret-after-rotation" },
        },
      },
    });
    expect(shown).not.toContain("canary-secret");
    expect(shown).not.toContain("AKIACANARYKEYID0001");
  });
});

const NAMESPACE = "driftless-canary";
const TARGET = "driftless-key-reporting";

const createdKey = (roles: string) => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: reporting
spec:
  organizationId: ${ids.organizationId}
  name: reporting
  roles: [${roles}]
  secretTarget: { kubernetesSecret: ${TARGET} }
`;

/** A state Secret's value as the store wrote it: base64 of JSON, or of gzip'd JSON (a shard). */
function decoded(value: string): string {
  const bytes = Buffer.from(value, "base64");
  try {
    return gunzipSync(bytes).toString("utf8");
  } catch {
    return bytes.toString("utf8");
  }
}

describe("a created key's secret in driftless run", () => {
  const run = useDaemonRun({ contract: "full" });
  let kube: FakeKubernetes;
  let receiver: HttpTestServer;
  beforeEach(async () => {
    kube = await startFakeKubernetes();
    receiver = await createHttpTestServer();
  });
  afterEach(async () => {
    await kube.close();
    await receiver.close();
  });

  it("is in its Secret only: never in a log line, /metrics, /status, the page, a notification, a plan or the state Secrets", async () => {
    kube.put("secrets", NAMESPACE, {
      apiVersion: "v1",
      kind: "Secret",
      type: "Opaque",
      metadata: { name: TARGET },
    });
    await writeFile(join(run.root, "notify-secret"), "notify-secret-for-the-canary\n");
    const env = {
      DRIFTLESS_STATE_STORE: "kubernetes",
      DRIFTLESS_NAMESPACE: NAMESPACE,
      KUBECONFIG: kube.kubeconfigPath,
      DRIFTLESS_READS: "on",
      DRIFTLESS_LOG_LEVEL: "debug",
    };
    await run.layout.publish({ "keys/reporting.yaml": createdKey("query_endpoints") });
    const d = await run.start({
      ...env,
      DRIFTLESS_NOTIFY_URL: `${receiver.url}/hooks/driftless`,
      DRIFTLESS_NOTIFY_SECRET_FILE: join(run.root, "notify-secret"),
    });
    const key = await until(() => run.simulator.state.keys.find((k) => k.name === "reporting"));
    await d.waitForLog((l) => l.msg === "pass finished");

    // Renamed in the console: a poll round reads it, reports the drift, and a pass puts it back.
    key.name = "renamed in the console";
    await until(() => receiver.requests.find((r) => r.headers["x-driftless-event"] === "drift"));
    await d.waitForLog((l) => l.msg === "pass finished" && l.trigger === "drift");
    expect(key.name).toBe("reporting");
    // A pull request's plan of a change to the key, against the daemon's state and the live key.
    const proposed = join(run.root, "proposed");
    await mkdir(proposed);
    await writeFile(join(proposed, "reporting.yaml"), createdKey("query_endpoints, developer"));
    const plans = [];
    for (const output of ["text", "json", "markdown"]) {
      const plan = await driftlessAsync(["plan", "-o", output, proposed], {
        ...env,
        DRIFTLESS_MANAGEMENT_URL: run.simulator.managementUrl,
        DRIFTLESS_MANAGEMENT_KEY_ID: ids.managementKeyId,
        DRIFTLESS_MANAGEMENT_KEY_SECRET: ids.managementKeySecret,
        DRIFTLESS_OBSERVABILITY_URL: run.simulator.observabilityUrl,
        DRIFTLESS_OBSERVABILITY_TOKEN: ids.observabilityToken,
      });
      expect(plan.code, plan.stderr).toBe(2);
      plans.push(plan.stdout, plan.stderr);
    }
    // Every write of the state Secrets, not only the last: an intent saved before the create is gone
    // from the state once the create is settled.
    const stateWrites = kube.requests
      .filter((r) => r.method !== "GET" && r.body?.metadata?.name !== TARGET)
      .flatMap((r) => Object.values(r.body?.data ?? {}).map(decoded));

    const pair = Object.fromEntries(
      Object.entries(kube.get("secrets", NAMESPACE, TARGET)?.data ?? {}).map(([k, v]) => [
        k,
        Buffer.from(v, "base64").toString("utf8"),
      ]),
    );
    expect(Object.keys(pair).sort()).toEqual(["keyId", "keySecret"]);
    expect(stateInSecrets(kube, NAMESPACE)?.resources["ApiKey/reporting"]?.serverId).toBe(key.id);
    expect(plans.join("\n")).toContain("roles");
    const shown = [
      d.stderr(),
      d.stdout(),
      await metricsOf(d),
      JSON.stringify(await statusOf(d)),
      await (await fetch(`${d.url}/`)).text(),
      ...receiver.requests.map((r) => r.body),
      ...plans,
    ].join("\n");
    expect(receiver.requests.length).toBeGreaterThan(0);
    expect(stateWrites.join("\n")).toContain('"ApiKey/reporting"');
    expect(d.logs.filter((l) => l.level === 20).length).toBeGreaterThan(0);
    expect(shown).not.toContain(pair.keySecret);
    expect(stateWrites.join("\n")).not.toContain(pair.keySecret);
    // The id is not secret, and only the state's intent of a create in flight holds it whole.
    expect(shown).not.toContain(pair.keyId);
    expect(JSON.stringify(stateInSecrets(kube, NAMESPACE))).not.toContain(pair.keyId);
  });
});
