import { mkdir, readFile, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { files, ids, metricsOf, statusOf, useDaemonRun, WEBHOOK_TOKEN } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/**
 * Secrets through `driftless run`: a rotated secret file is used by the next pass without a restart,
 * and no secret value ever reaches /status, /metrics, the logs or the state file.
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

const run = useDaemonRun();

describe("secrets in driftless run", () => {
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
