import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import { platformEnv } from "./helpers/platform-env.js";
import { until } from "./helpers/wait.js";

/**
 * The id of each resource's object wherever a resource is shown, through the built daemon and CLI
 * against the simulator's published contract: the id the platform assigned to an object driftless
 * created, and the id a manifest adopts, in /status, `driftless status` (table and JSON) and plans
 * (JSON, and text where the line names no request path). A watch has none.
 */

const off = { management: false, observability: false } as const;

let sim: Simulator;
let root: string;
let env: Record<string, string>;
let daemon: DaemonProcess | undefined;

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: off });
  root = await mkdtemp(join(tmpdir(), "driftless-ids-"));
  await mkdir(join(root, "manifests"));
  env = {
    ...platformEnv(sim),
    DRIFTLESS_MANIFESTS: join(root, "manifests"),
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_KEY_SECRETS_DIR: join(root, "key-secrets"),
  };
});

afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

const write = (file: string, yaml: string) => writeFile(join(root, "manifests", file), yaml);

/** A key driftless creates: its manifest names no keyId. */
const CREATED_KEY = `apiVersion: driftless/v1
kind: ApiKey
metadata: { name: deployer }
spec:
  organizationId: ${ids.organizationId}
  name: deployer
  roles: [developer]
  secretTarget: { file: deployer-key }
`;

/** A key the manifest adopts by its id. */
const ADOPTED_KEY = `apiVersion: driftless/v1
kind: ApiKey
metadata: { name: ci-deployer }
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ci-deployer
  roles: [developer]
`;

const board = (name: string) => `apiVersion: driftless/v1
kind: Dashboard
metadata: { name: ${name} }
spec:
  name: ${name}
  tiles:
    - key: volume
      name: Volume
      x: 0
      y: 0
      w: 6
      h: 4
      series:
        - { type: time, aggFn: count, where: "", whereLanguage: lucene, groupBy: [], sourceId: ${ids.sourceIds[0]} }
`;

const WATCH = `apiVersion: driftless/v1
kind: AlertWatch
metadata: { name: ingest-lag }
spec:
  alertId: ${ids.alertId}
`;

type Entry = { kind: string; name: string; status?: string; id?: string | null };
const idsOf = (entries: Entry[]) => Object.fromEntries(entries.map((e) => [`${e.kind}/${e.name}`, e.id]));

describe("the id of each resource's object", () => {
  it("is in /status and driftless status (table and JSON): assigned when created, named when adopted, none for a watch", async () => {
    await write("created-key.yaml", CREATED_KEY);
    await write("adopted-key.yaml", ADOPTED_KEY);
    await write("board.yaml", board("payments"));
    await write("watch.yaml", WATCH);
    daemon = await startDaemonProcess({
      ...env,
      DRIFTLESS_RECONCILE_SCHEDULE: "off",
      DRIFTLESS_POLL_SCHEDULE: "off",
      DRIFTLESS_REASSERT_SCHEDULE: "off",
    });
    const d = daemon;
    let status: { resources: Entry[] } = { resources: [] };
    await until(async () => {
      status = await (await fetch(`${d.url}/status`)).json();
      return status.resources.filter((r) => r.status === "Synced").length === 4;
    });

    const table = await driftlessAsync(["status", "--all", "--url", d.url]);
    const json = await driftlessAsync(["status", "-o", "json", "--url", d.url]);

    const keyId = sim.state.keys.find((k) => k.name === "deployer")?.id;
    const boardId = sim.state.dashboards.find((b) => b.name === "payments")?.id;
    expect([keyId, boardId].every(Boolean)).toBe(true);
    const expected = {
      "ApiKey/deployer": keyId,
      "ApiKey/ci-deployer": ids.ciDeployerKeyId,
      "Dashboard/payments": boardId,
      "AlertWatch/ingest-lag": null,
    };
    expect(idsOf(status.resources)).toEqual(expected);
    expect(idsOf(JSON.parse(json.stdout).resources)).toEqual(expected);
    expect(table.code, table.stderr).toBe(0);
    const rows = table.stdout.trimEnd().split("\n");
    expect(rows[0]).toMatch(/^KIND +NAME +STATUS +AGE +ID +MESSAGE$/);
    expect(
      rows.slice(1).map((row) =>
        row
          .split(/ +/)
          .slice(0, 5)
          .filter((_, i) => i !== 3),
      ),
    ).toEqual(
      expect.arrayContaining([
        ["ApiKey", "deployer", "Synced", keyId],
        ["ApiKey", "ci-deployer", "Synced", ids.ciDeployerKeyId],
        ["Dashboard", "payments", "Synced", boardId],
        ["AlertWatch", "ingest-lag", "Synced", "<none>"],
      ]),
    );
  });

  it("is in plans: each object updated, deleted or left, and none for a create", async () => {
    await write("created-key.yaml", CREATED_KEY);
    await write("adopted-key.yaml", ADOPTED_KEY);
    await write("board.yaml", board("payments"));
    const applied = await driftlessAsync(["apply", "-o", "json"], env);
    const keyId = sim.state.keys.find((k) => k.name === "deployer")?.id;
    const boardId = sim.state.dashboards.find((b) => b.name === "payments")?.id;
    await write("created-key.yaml", CREATED_KEY.replace("roles: [developer]", "roles: [developer, admin]"));
    await rm(join(root, "manifests", "adopted-key.yaml"));
    await rm(join(root, "manifests", "board.yaml"));
    await write("new-board.yaml", board("orders"));

    const json = await driftlessAsync(["plan", "-o", "json"], env);
    const text = await driftlessAsync(["plan"], env);

    expect(applied.code, applied.stdout).toBe(0);
    expect(idsOf(JSON.parse(applied.stdout).statuses)).toEqual({
      "ApiKey/deployer": keyId,
      "ApiKey/ci-deployer": ids.ciDeployerKeyId,
      "Dashboard/payments": boardId,
    });
    expect(json.code, json.stderr).toBe(2);
    const views: Array<Entry & { outcome: string; action?: string }> = JSON.parse(json.stdout).resources;
    expect(views.map((v) => [`${v.kind}/${v.name}`, v.outcome, v.action, v.id])).toEqual(
      expect.arrayContaining([
        ["ApiKey/deployer", "send", "update", keyId],
        ["Dashboard/orders", "send", "create", undefined],
        ["Dashboard/payments", "send", "delete", boardId],
        ["ApiKey/ci-deployer", "unmanaged", "orphan", ids.ciDeployerKeyId],
      ]),
    );
    expect(text.stdout).toContain(`- Dashboard/payments: DELETE /api/v2/dashboards/${boardId}\n`);
    expect(text.stdout).toContain(
      `- ApiKey/ci-deployer (id ${ids.ciDeployerKeyId}): no longer managed: its manifest is gone since `,
    );
    expect(text.stdout).toContain("+ Dashboard/orders: POST /api/v2/dashboards\n");
  });
});
