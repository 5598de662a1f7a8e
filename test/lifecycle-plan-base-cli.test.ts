import { execFileSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids } from "../src/simulator/index.js";
import { driftless } from "./helpers/cli.js";
import {
  adoptedKey,
  createdBoard,
  createdEndpoint,
  createdKey,
  createdPipe,
} from "./helpers/lifecycle-cli.js";

/**
 * `plan --base` of a change that removes manifests: each removed object shows as the delete or the
 * orphan its BASE manifest's policy makes it (its annotation, else created or adopted: adopted when
 * the base manifest names an id), from the manifests alone, in text, JSON and Markdown, with what the
 * platform deletes along. The built CLI on a temporary git repository, with only PATH and HOME.
 */

let root: string;
let dir: string;

const git = (...args: string[]) =>
  execFileSync("git", ["-c", "user.email=ci@example.com", "-c", "user.name=ci", ...args], {
    cwd: root,
    encoding: "utf8",
  });

const plan = (...args: string[]) => driftless(["plan", "--base", "HEAD", dir, ...args], { HOME: root });

type Resource = {
  kind: string;
  name: string;
  outcome: string;
  action?: string;
  reason: string;
  notes?: string[];
};

/** Commits `files` as the base, then leaves only `head` in the working tree. */
async function change(files: Record<string, string>, head: Record<string, string> = {}) {
  for (const [file, text] of Object.entries(files)) await writeFile(join(dir, file), text);
  git("add", ".");
  git("commit", "-qm", "base");
  for (const file of Object.keys(files)) if (!(file in head)) await rm(join(dir, file));
  for (const [file, text] of Object.entries(head)) await writeFile(join(dir, file), text);
}

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-base-lifecycle-"));
  dir = join(root, "manifests");
  await mkdir(dir);
  git("init", "-q", "-b", "main");
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

const POLICY = "driftless/deletion-policy";
const WATCH = `apiVersion: driftless/v1
kind: AlertWatch
metadata: { name: ingest-lag }
spec: { alertId: ${ids.alertId} }
`;
const adoptedPipe = `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: adopted-pipe
  annotations: { ${POLICY}: delete }
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kafkaPipeId}
  name: orders-from-kafka
`;

describe("plan --base of removed manifests", () => {
  it("shows each as the delete or orphan of its base manifest's policy, once, dependents first, with the cascade", async () => {
    await change({
      "board.yaml": createdBoard("board"),
      "adopted.yaml": adoptedKey("adopted"),
      "kept.yaml": createdKey("kept", { annotations: { [POLICY]: "orphan" } }),
      "adopted-pipe.yaml": adoptedPipe,
      "msk.yaml": createdEndpoint("msk"),
      "orders.yaml": createdPipe("orders", { endpoints: ["msk"] }),
      "watch.yaml": WATCH,
    });

    const text = plan();
    const json = plan("-o", "json");
    const markdown = plan("-o", "markdown");

    expect(text.stderr).toBe("");
    expect(text.code).toBe(2);
    const resources: Resource[] = JSON.parse(json.stdout).resources;
    expect(resources.map((r) => `${r.kind}/${r.name} ${r.outcome} ${r.action ?? ""}`.trim()).sort()).toEqual([
      "AlertWatch/ingest-lag unmanaged",
      "ApiKey/adopted unmanaged orphan",
      "ApiKey/kept unmanaged orphan",
      "Dashboard/board send delete",
      "DataPipe/adopted-pipe send delete",
      "DataPipe/orders send delete",
      "ReversePrivateEndpoint/msk send delete",
    ]);
    const order = resources.map((r) => `${r.kind}/${r.name}`);
    expect(order.indexOf("DataPipe/orders")).toBeLessThan(order.indexOf("ReversePrivateEndpoint/msk"));
    expect(JSON.parse(json.stdout).summary).toMatchObject({ toSend: 4, toDelete: 4, unmanaged: 3 });
    expect(text.stdout).toContain(
      "- Dashboard/board: DELETE /api/v2/dashboards/<id of Dashboard/board>\n    (its manifest left git and its deletion policy is delete)\n    note: the platform deletes the alerts on its tiles with it\n",
    );
    expect(text.stdout).toContain(
      `- DataPipe/adopted-pipe: DELETE /v1/organizations/${ids.organizationId}/services/${ids.serviceId}/datapipes/${ids.kafkaPipeId}\n`,
    );
    expect(text.stdout).toContain(
      `- ApiKey/adopted (id ${ids.ciDeployerKeyId}): no longer managed: its manifest was removed and its deletion policy is orphan (adopted by its id): nothing is sent, the object stays on the platform as it is`,
    );
    expect(text.stdout).toContain(
      `- ApiKey/kept: no longer managed: its manifest was removed and its deletion policy is orphan (${POLICY}: orphan)`,
    );
    expect(text.stdout).toContain("(0 to create, 0 to update, 4 to delete)");
    expect(markdown.stdout).toContain("| of them deletes | 4 |");
    expect(markdown.stdout).toContain("<details><summary>- Dashboard/board: DELETE /api/v2/dashboards/");
    expect(markdown.stdout).toContain("note: the platform deletes the alerts on its tiles with it");
    expect(markdown.stdout).toContain(`its deletion policy is orphan (${POLICY}: orphan)`);
  });

  it("shows a renamed created object as a second one created and the old one deleted, and says how to keep it", async () => {
    // Only metadata.name changes (its first line "  name: board").
    await change(
      { "board.yaml": createdBoard("board") },
      { "board.yaml": createdBoard("board").replace("  name: board\n", "  name: board-v2\n") },
    );

    const text = plan();

    expect(text.stdout).toContain(
      "+ Dashboard/board-v2 (renamed from Dashboard/board): POST /api/v2/dashboards",
    );
    expect(text.stdout).toContain("- Dashboard/board: DELETE /api/v2/dashboards/<id of Dashboard/board>");
    expect(text.stdout).toContain(
      "note: a second dashboard is created, and the old one is deleted (its deletion policy is delete); to keep the old one, add the annotation driftless/previous-name: board (or set spec.dashboardId to its id)",
    );
  });
});
