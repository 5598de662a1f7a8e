/// <reference lib="dom" />
/// <reference lib="dom.iterable" />
import { mkdir } from "node:fs/promises";
import { join } from "node:path";
import { type Browser, chromium, type Page } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { driftlessAsync, repo } from "./helpers/cli.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import { apiKey, ids, useDaemonRun, WATCHES } from "./helpers/daemon-run.js";
import { until } from "./helpers/wait.js";

/**
 * The status page `GET /` in a real browser: Debian's chromium (.ci/run installs it) driven by
 * playwright-core. What is shown, the filter and the search, the token form, and hostile text from a
 * manifest shown as text with no script run. A screenshot is kept in test-artifacts/.
 */

const CHROMIUM = "/usr/bin/chromium";
const TOKEN = "status-token-for-page-tests";
const HOSTILE_NAME = "<img src=x onerror=alert(1)></script>";
const HOSTILE_REASON = "</script><script>alert(2)</script><img src=x onerror=alert(3)>";

/** A manifest whose name is markup: invalid, and shown in /status (and the page) as it is. */
const HOSTILE_MANIFEST = `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: "${HOSTILE_NAME}"
spec:
  organizationId: not-a-uuid
  keyId: "<b>bold</b>"
  name: x
  roles: [developer]
`;

/** The platform's own alert, managed: its live state is shown beside its status. */
const ALERT = `apiVersion: driftless/v1
kind: Alert
metadata:
  name: ingest-lag-alert
spec:
  alertId: ${ids.alertId}
  dashboardId: ${ids.dashboardId}
  tileId: ${ids.tileIds[0]}
  name: Ingest lag
  interval: 5m
  thresholdType: above
  threshold: 100
  channel: { type: webhook, webhookId: ${ids.webhookId} }
`;

const run = useDaemonRun();
let browser: Browser;

beforeAll(async () => {
  browser = await chromium.launch({
    executablePath: CHROMIUM,
    args: [
      "--headless",
      "--no-sandbox",
      "--disable-gpu",
      "--disable-background-networking",
      "--disable-component-update",
      "--disable-sync",
      "--no-first-run",
    ],
  });
});

afterAll(async () => {
  await browser?.close();
});

/** A page that records every dialog (alert) and every request it makes. */
async function openPage(): Promise<{ page: Page; dialogs: string[]; requests: string[] }> {
  const page = await browser.newPage({ viewport: { width: 1280, height: 800 } });
  const dialogs: string[] = [];
  const requests: string[] = [];
  page.on("dialog", (dialog) => {
    dialogs.push(dialog.message());
    void dialog.dismiss();
  });
  page.on("request", (request) => requests.push(request.url()));
  return { page, dialogs, requests };
}

/** The daemon on the layout plus the hostile manifest, once a pass and a poll have shown every resource. */
async function startWithHostileManifest(env: Record<string, string> = {}): Promise<DaemonProcess> {
  const revision = await run.layout.publish({
    "keys/ci-deployer.yaml": apiKey("ci-deployer"),
    "keys/hostile.yaml": HOSTILE_MANIFEST,
    "watches.yaml": WATCHES,
    "alerts/ingest-lag.yaml": ALERT,
  });
  const d = await run.start(env);
  await until(async () => {
    const answer = await fetch(`${d.url}/status`, { headers: { authorization: `Bearer ${TOKEN}` } });
    const body = (await answer.json()) as { revision: string; resources: Array<{ polledAt?: string }> };
    return body.revision === revision && body.resources.filter((r) => r.polledAt).length === 3;
  });
  return d;
}

const rowsOf = (page: Page, table: string) =>
  page.$$eval(`#${table} tbody tr`, (rows) =>
    rows.map((row) => [...row.querySelectorAll("td")].map((td) => td.textContent ?? "")),
  );

describe("the status page", () => {
  it("shows the revision, the leader, the last pass, the resources, the watches; filters, searches, and shows hostile text as text", async () => {
    const d = await startWithHostileManifest({ DRIFTLESS_STATUS_TOKEN: TOKEN });
    const suspended = await driftlessAsync(["suspend", "--url", d.url, "--reason", HOSTILE_REASON], {
      DRIFTLESS_STATUS_TOKEN: TOKEN,
    });
    const { page, dialogs, requests } = await openPage();

    const answer = await page.goto(`${d.url}/`);
    await page.fill("#token", TOKEN);
    await page.click("button[type=submit]");
    await page.waitForSelector("#resources tbody tr");
    const summary = await page.textContent("#summary");
    const banner = await page.textContent("#suspended");
    const simulatorBannerHidden = await page.isHidden("#simulator");
    const reads = await page.textContent("#reads");
    const all = await rowsOf(page, "resources");
    const watches = await rowsOf(page, "watches");
    const budget = await rowsOf(page, "budget");
    await page.selectOption("#filter", "Invalid");
    const invalid = await rowsOf(page, "resources");
    await page.selectOption("#filter", "all");
    await page.fill("#search", "ci-dep");
    const searched = await rowsOf(page, "resources");
    await page.fill("#search", "");
    await mkdir(join(repo, "test-artifacts"), { recursive: true });
    await page.screenshot({ path: join(repo, "test-artifacts", "status-page.png"), fullPage: true });
    const injected = await page.evaluate(() => ({
      images: document.querySelectorAll("img").length,
      scripts: document.querySelectorAll("script").length,
    }));
    await page.close();

    expect(suspended.code, suspended.stderr).toBe(0);
    expect(answer?.headers()["content-security-policy"]).toMatch(/^default-src 'none'; script-src 'nonce-/);
    expect(summary).toContain(
      `platform ${new URL(run.simulator.managementUrl).origin} · revision ${run.layout.revision}`,
    );
    expect(simulatorBannerHidden).toBe(true);
    expect(summary).toContain("leader");
    expect(summary).toMatch(/last pass \d+s ago/);
    expect(banner).toContain(`: ${HOSTILE_REASON}. Nothing is sent until driftless resume.`);
    expect(reads).toContain(
      "Reads are off (DRIFTLESS_READS): Synced means the platform accepted what git says",
    );
    expect(all.find((row) => row[1] === "ci-deployer")?.[7]).toBe("not read");
    // The id of the key its manifest adopts; none for a manifest too broken to name one.
    expect(all.find((row) => row[1] === "ci-deployer")?.[3]).toBe(ids.ciDeployerKeyId);
    expect(all.find((row) => row[1] === HOSTILE_NAME)?.[3]).toBe("");
    expect(all.map((row) => row.slice(0, 3))).toEqual(
      expect.arrayContaining([
        ["ApiKey", "ci-deployer", "Suspended"],
        ["ApiKey", HOSTILE_NAME, "Invalid"],
      ]),
    );
    expect(watches.map((row) => row.slice(0, 2))).toEqual(
      expect.arrayContaining([
        ["AlertWatch", "ingest-lag"],
        ["BackupWatch", "analytics-backups"],
        ["Alert", "ingest-lag-alert"],
      ]),
    );
    // A managed Alert: its manifest's status among the resources, its live state beside the watches'.
    expect(all.find((row) => row[1] === "ingest-lag-alert")?.slice(0, 3)).toEqual([
      "Alert",
      "ingest-lag-alert",
      "Suspended",
    ]);
    expect(watches.find((row) => row[1] === "ingest-lag-alert")?.[3]).toBe(
      `state=OK, tileId=${ids.tileIds[0]}, dashboard=${ids.dashboardId}`,
    );
    expect(budget.map((row) => [row[0], row[2], row[3]])).toEqual([
      ["management", "9", "10s"],
      ["observability", "90", "60s"],
    ]);
    expect(invalid.map((row) => row[1])).toEqual([HOSTILE_NAME]);
    expect(invalid[0]?.[4]).toContain("metadata.name");
    expect(searched.map((row) => row[1])).toEqual(["ci-deployer"]);
    expect(dialogs).toEqual([]);
    expect(injected).toEqual({ images: 0, scripts: 3 });
    expect(requests.every((url) => url.startsWith(d.url))).toBe(true);
  });

  it("holds no data without the token: it asks for it, and shows the resources once given", async () => {
    const d = await startWithHostileManifest({ DRIFTLESS_STATUS_TOKEN: TOKEN });
    const { page } = await openPage();

    const html = await (await fetch(`${d.url}/`)).text();
    await page.goto(`${d.url}/`);
    await page.waitForSelector("#token-form:not([hidden])");
    const before = await rowsOf(page, "resources");
    await page.fill("#token", "wrong");
    await page.click("button[type=submit]");
    await page.waitForFunction(() => document.querySelector("#summary")?.textContent?.includes("token"));
    const wrong = await rowsOf(page, "resources");
    await page.fill("#token", TOKEN);
    await page.click("button[type=submit]");
    await page.waitForSelector("#resources tbody tr");
    const after = await rowsOf(page, "resources");
    const formHidden = await page.$eval("#token-form", (form) => (form as HTMLFormElement).hidden);
    await page.close();

    expect(html).not.toContain("ci-deployer");
    expect(html).toContain('<script type="application/json" id="initial">null</script>');
    expect(before).toEqual([]);
    expect(wrong).toEqual([]);
    expect(after.map((row) => row[1])).toContain("ci-deployer");
    expect(formHidden).toBe(true);
  });

  it("shows a red banner while the built-in simulator stands in for the platform", async () => {
    const d = await startDaemonProcess({
      DRIFTLESS_MANIFESTS: run.layout.link,
      DRIFTLESS_STATE_DIR: join(run.root, "state"),
      DRIFTLESS_SIMULATOR: "builtin",
      DRIFTLESS_RECONCILE_SCHEDULE: "off",
      DRIFTLESS_POLL_SCHEDULE: "off",
      DRIFTLESS_REASSERT_SCHEDULE: "off",
    });
    try {
      const { page } = await openPage();

      await page.goto(`${d.url}/`);
      await page.waitForSelector("#simulator:not([hidden])");
      const banner = await page.textContent("#simulator");
      const color = await page.$eval("#simulator", (element) => getComputedStyle(element).backgroundColor);
      const summary = await page.textContent("#summary");
      await page.close();

      expect(banner).toMatch(
        /^The BUILT-IN SIMULATOR stands in for the platform: nothing shown here is on a real platform\./,
      );
      expect(color).toBe("rgb(253, 226, 225)");
      expect(summary).toMatch(/^platform the built-in simulator · /);
    } finally {
      await d.stop("SIGKILL");
    }
  });

  it("draws the data at once when /status is open, and escapes the embedded JSON", async () => {
    const d = await startWithHostileManifest();
    const { page, dialogs } = await openPage();

    const html = await (await fetch(`${d.url}/`)).text();
    await page.goto(`${d.url}/`);
    const rows = await rowsOf(page, "resources");
    await page.close();

    expect(html).not.toContain(HOSTILE_NAME);
    expect(html).toContain("\\u003cimg src=x onerror=alert(1)\\u003e\\u003c/script\\u003e");
    expect(rows.map((row) => row[1])).toEqual(expect.arrayContaining(["ci-deployer", HOSTILE_NAME]));
    expect(dialogs).toEqual([]);
  });
});
