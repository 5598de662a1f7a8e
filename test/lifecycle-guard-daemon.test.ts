import { mkdtemp, rm } from "node:fs/promises";
import { request } from "node:http";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { chromium } from "playwright-core";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import { createGitSyncLayout, type GitSyncLayout } from "./helpers/git-sync-layout.js";
import { platformEnv } from "./helpers/platform-env.js";
import { until } from "./helpers/wait.js";

/**
 * The mass-deletion guard as an operator meets it in a running daemon, through the built CLI against
 * the simulator's published contract: a commit that removes more manifests than DRIFTLESS_MAX_DELETES
 * deletes nothing (the resources Pending, driftless_deletes_held counting them, no DELETE on the wire),
 * `driftless reconcile --allow-deletes N` lets one pass send them, and the pass after it is guarded
 * again. A bad N is refused before any pass runs.
 */

const TOKEN = "status-token-for-guard-tests";
const off = { management: false, observability: false } as const;

let sim: Simulator;
let root: string;
let layout: GitSyncLayout;
let daemon: DaemonProcess | undefined;

/** A dashboard driftless creates (its manifest names no id): one tile. */
const board = (n: number) => `apiVersion: driftless/v1
kind: Dashboard
metadata: { name: board-${n} }
spec:
  name: Board ${n}
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

/** The files of a revision holding the dashboards numbered `from` to `to` - 1. */
const boards = (from: number, to: number): Record<string, string> =>
  Object.fromEntries(
    Array.from({ length: to - from }, (_, i) => [`boards/board-${from + i}.yaml`, board(from + i)]),
  );

beforeEach(async () => {
  sim = await startSimulator({ contract: "full", rateLimit: off });
  root = await mkdtemp(join(tmpdir(), "driftless-guard-"));
  layout = await createGitSyncLayout(join(root, "git"), boards(0, 12));
});

afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

type Status = {
  revision: string | null;
  deletesHeld: number;
  resources: Array<{
    kind: string;
    name: string;
    id: string | null;
    status: string;
    lastError: string | null;
  }>;
};

const auth = { authorization: `Bearer ${TOKEN}` };
const statusOf = async (d: DaemonProcess) =>
  (await (await fetch(`${d.url}/status`, { headers: auth })).json()) as Status;
const heldGauge = async (d: DaemonProcess) =>
  /^driftless_deletes_held (\d+)$/m.exec(await (await fetch(`${d.url}/metrics`)).text())?.[1];
const deletes = () => sim.requests.filter((r) => r.method === "DELETE");
const cli = (...args: string[]) => driftlessAsync(args, { DRIFTLESS_STATUS_TOKEN: TOKEN });

/** The daemon on the layout, once its first pass has created the twelve dashboards. */
async function started(): Promise<DaemonProcess> {
  daemon = await startDaemonProcess({
    ...platformEnv(sim),
    DRIFTLESS_MANIFESTS: layout.link,
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_RECONCILE_SCHEDULE: "off",
    DRIFTLESS_POLL_SCHEDULE: "off",
    DRIFTLESS_REASSERT_SCHEDULE: "off",
    DRIFTLESS_STATUS_TOKEN: TOKEN,
  });
  const d = daemon;
  await until(async () => (await statusOf(d)).resources.filter((r) => r.status === "Synced").length === 12);
  return d;
}

/** Publishes `files` as a new revision and waits for the pass that read it. */
async function publish(d: DaemonProcess, files: Record<string, string>): Promise<Status> {
  const revision = await layout.publish(files);
  let status: Status | undefined;
  await until(async () => {
    status = await statusOf(d);
    return status.revision === revision;
  });
  return status as Status;
}

/** The dashboards of this test on the simulator (its fixture has one of its own). */
const ours = () => sim.state.dashboards.filter((b) => b.name.startsWith("Board "));

/** The simulator's id of the dashboard named `Board n`. */
const boardId = (n: number) => sim.state.dashboards.find((b) => b.name === `Board ${n}`)?.id;

describe("the mass-deletion guard in a running daemon", () => {
  it("holds 6 deletes beyond DRIFTLESS_MAX_DELETES, lets them go with reconcile --allow-deletes 6 for that pass only", async () => {
    const d = await started();
    const firstIds = [0, 1, 2, 3, 4, 5].map(boardId);

    const held = await publish(d, boards(6, 12));
    const heldGaugeValue = await heldGauge(d);
    const deletesWhileHeld = deletes().length;

    expect(held.deletesHeld).toBe(6);
    expect(heldGaugeValue).toBe("6");
    expect(deletesWhileHeld).toBe(0);
    expect(ours()).toHaveLength(12);
    expect(held.resources.filter((r) => r.status === "Pending")).toEqual(
      [0, 1, 2, 3, 4, 5].map((n) =>
        expect.objectContaining({
          kind: "Dashboard",
          name: `board-${n}`,
          id: firstIds[n],
          lastError: expect.stringContaining(
            "held by the mass-deletion guard: this pass would delete 6 objects, more than 5",
          ),
        }),
      ),
    );

    const allowed = await cli("reconcile", "--url", d.url, "--allow-deletes", "6");
    const gaugeAfter = await heldGauge(d);

    expect(allowed.stderr).toBe("");
    expect(allowed.code).toBe(0);
    expect(allowed.stdout).toMatch(
      /Reconcile: pass ok at \S+: 12 resources, 6 not Synced \(6 Deleted\)\.\n$/,
    );
    expect(
      deletes()
        .map((r) => r.path)
        .sort(),
    ).toEqual(firstIds.map((id) => `/api/v2/dashboards/${id}`).sort());
    expect(
      ours()
        .map((b) => b.name)
        .sort(),
    ).toEqual([6, 7, 8, 9, 10, 11].map((n) => `Board ${n}`).sort());
    expect(gaugeAfter).toBe("0");
    expect((await statusOf(d)).deletesHeld).toBe(0);

    // The allowance was for that pass: an empty checkout is held again, by the pass it triggers and by
    // a reconcile that does not allow it.
    const emptied = await publish(d, {});
    const again = await cli("reconcile", "--url", d.url);

    expect(emptied.deletesHeld).toBe(6);
    expect(await heldGauge(d)).toBe("6");
    expect(again.code).toBe(1);
    expect(again.stdout).toMatch(
      /^6 deletes are held by the mass-deletion guard \(more than DRIFTLESS_MAX_DELETES in one pass\): nothing is deleted until an operator lets them go\. .* driftless reconcile --allow-deletes 6; if not, fix git\n/,
    );
    expect(deletes()).toHaveLength(6);
    expect(ours()).toHaveLength(6);
  });

  it("refuses a bad N: the CLI before it asks, the daemon with 400 and what is wrong; no pass runs", async () => {
    const d = await started();
    const asked = () => d.logs.filter((l) => l.msg === "reconcile asked for: a pass now").length;
    const post = (body: string) =>
      new Promise<{ code: number; body: string }>((resolve, reject) => {
        const call = request(
          `${d.url}/reconcile`,
          { method: "POST", headers: { ...auth, "content-type": "application/json" } },
          (answer) => {
            let text = "";
            answer.setEncoding("utf8").on("data", (chunk: string) => {
              text += chunk;
            });
            answer.on("end", () => resolve({ code: answer.statusCode ?? 0, body: text }));
          },
        );
        call.on("error", reject);
        call.end(body);
      });

    const negative = await cli("reconcile", "--url", d.url, "--allow-deletes", "-1");
    const word = await cli("reconcile", "--url", d.url, "--allow-deletes", "six");
    const answers = await Promise.all(
      [
        '{"allowDeletes": "6"}',
        '{"allowDeletes": 2.5}',
        '{"allowDeletes": -1}',
        '{"allowDelete": 6}',
        "six",
      ].map(post),
    );

    expect(negative.code).toBe(1);
    expect(negative.stderr).toBe("driftless: invalid settings: DRIFTLESS_ALLOW_DELETES: must be 0 or more\n");
    expect(word.code).toBe(1);
    expect(word.stderr).toBe("driftless: invalid settings: DRIFTLESS_ALLOW_DELETES: must be a number\n");
    expect(answers.map((a) => [a.code, JSON.parse(a.body).error])).toEqual([
      [400, 'allowDeletes must be a number, not "6"'],
      [400, "allowDeletes must be a whole number, not 2.5"],
      [400, "allowDeletes must be 0 or more, not -1"],
      [400, 'unknown field "allowDelete": the body must be a JSON object: {"allowDeletes": N} or {}'],
      [400, 'the body must be a JSON object: {"allowDeletes": N} or {}'],
    ]);
    expect(asked()).toBe(0);
  });

  it("is said on the status page and by driftless status: how many are held, and the command that lets them go", async () => {
    const d = await started();
    await publish(d, boards(6, 12));
    const browser = await chromium.launch({
      executablePath: "/usr/bin/chromium",
      args: ["--headless", "--no-sandbox", "--disable-gpu", "--no-first-run"],
    });
    let banner: string | null;
    let rows: string[][];
    try {
      const page = await browser.newPage();
      await page.goto(`${d.url}/`);
      await page.fill("#token", TOKEN);
      await page.click("button[type=submit]");
      await page.waitForSelector("#deletes-held:not([hidden])");
      banner = await page.textContent("#deletes-held");
      await page.selectOption("#filter", "Pending");
      rows = await page.$$eval("#resources tbody tr", (trs) =>
        trs.map((tr) => [...tr.querySelectorAll("td")].map((td) => td.textContent ?? "")),
      );
    } finally {
      await browser.close();
    }
    const table = await cli("status", "--url", d.url);

    expect(banner).toBe(
      "6 deletes are held by the mass-deletion guard (more than DRIFTLESS_MAX_DELETES in one pass): nothing is deleted until an operator lets them go. Check the Pending resources below (driftless plan shows each delete); if they are meant, let one pass send them with: driftless reconcile --allow-deletes 6. If not (an empty checkout, a bad merge), fix git: a pass that sees the manifests again deletes nothing.",
    );
    // Kind, name, status and the id of the object each held delete is of.
    expect(rows.map((row) => row.slice(0, 4))).toEqual(
      [0, 1, 2, 3, 4, 5].map((n) => ["Dashboard", `board-${n}`, "Pending", boardId(n)]),
    );
    expect(table.code).toBe(1);
    expect(table.stdout.split("\n")[0]).toBe(
      "6 deletes are held by the mass-deletion guard (more than DRIFTLESS_MAX_DELETES in one pass): nothing is deleted until an operator lets them go. Check the Pending resources below (driftless plan shows each delete); if they are meant, driftless reconcile --allow-deletes 6; if not, fix git",
    );
    expect(table.stdout.split("\n")[1]).toMatch(/^KIND +NAME +STATUS +AGE +ID +MESSAGE$/);
    expect(table.stdout).toMatch(
      new RegExp(`Dashboard +board-0 +Pending +\\d+s +${boardId(0)} +held by the mass-deletion guard`),
    );
  });
});
