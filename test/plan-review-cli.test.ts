import { execFileSync } from "node:child_process";
import { cp, mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { driftless, repo } from "./helpers/cli.js";

/**
 * What a reviewer reads of a pull request's plan (`plan --base`, the built CLI): a dashboard tile's
 * name, position and query, the manifest problems open and first, and that no id was checked.
 */

// Any C0/C1 control character, DEL, or a lone surrogate: none may reach any output raw.
const RAW_CONTROL = new RegExp(
  [
    "[\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f]",
    "[\\ud800-\\udbff](?![\\udc00-\\udfff])",
    "(?<![\\ud800-\\udbff])[\\udc00-\\udfff]",
  ].join("|"),
);

const LOGS = "65f1a2b3c4d5e6f708192a71";

const PAYMENT_TILE = `    - key: payment-latency
      name: Payment latency p99
      x: 0
      y: 7
      w: 6
      h: 3
      series:
        - { type: time, sourceId: ${LOGS}, aggFn: quantile, level: 0.99, field: duration, where: "service:payments", groupBy: [route] }
        - { type: time, sourceId: ${LOGS}, aggFn: count, where: "service:payments AND level:error" }
`;

const PAYMENT_SERIES = [
  `{"type":"time","aggFn":"quantile","where":"service:payments","groupBy":["route"],"sourceId":"${LOGS}","field":"duration","level":0.99}`,
  `{"type":"time","aggFn":"count","where":"service:payments AND level:error","sourceId":"${LOGS}"}`,
];

/** The lines of a new tile as text shows them, under a resource indented by four spaces. */
const paymentTileLines = [
  "    + tiles[payment-latency]: (new tile: the platform assigns its id)",
  '      tiles[payment-latency].name: "Payment latency p99"',
  "      tiles[payment-latency].x: 0",
  "      tiles[payment-latency].y: 7",
  "      tiles[payment-latency].w: 6",
  "      tiles[payment-latency].h: 3",
  `      tiles[payment-latency].series[0]: ${PAYMENT_SERIES[0]}`,
  `      tiles[payment-latency].series[1]: ${PAYMENT_SERIES[1]}`,
];

const IDS_NOT_CHECKED = "the ids the manifests name were not checked to exist";

let root: string;
let dir: string;

const git = (...args: string[]) =>
  execFileSync("git", ["-c", "user.email=ci@example.com", "-c", "user.name=ci", ...args], {
    cwd: root,
    encoding: "utf8",
  });

/** plan --base HEAD of the working tree, in an environment with only PATH and HOME. */
const plan = (args: string[] = []) => driftless(["plan", "--base", "HEAD", dir, ...args], { HOME: root });

async function edit(file: string, change: (text: string) => string) {
  const path = join(dir, file);
  await writeFile(path, change(await readFile(path, "utf8")));
}

const DASHBOARD = "dashboards/platform-overview.yaml";

beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-review-"));
  dir = join(root, "manifests");
  await cp(join(repo, "examples"), dir, { recursive: true });
  await rm(join(dir, "secrets"), { recursive: true });
  git("init", "-q", "-b", "main");
  git("add", ".");
  git("commit", "-qm", "base");
});

afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

describe("a reviewable plan (plan --base, built CLI)", () => {
  it("shows a new tile's name, position and every series in text, Markdown and JSON", async () => {
    await edit(DASHBOARD, (t) => t + PAYMENT_TILE);

    const text = plan();
    const markdown = plan(["-o", "markdown"]);
    const json = JSON.parse(plan(["-o", "json"]).stdout);

    expect(text.code).toBe(2);
    expect(text.stdout).toContain(
      `~ Dashboard/platform-overview: PUT /api/v2/dashboards/65f1a2b3c4d5e6f708192a3b\n${paymentTileLines.join("\n")}\nPlan: `,
    );
    expect(markdown.stdout).toContain(
      `\`\`\`text\n${paymentTileLines.map((line) => line.slice(4)).join("\n")}\n\`\`\``,
    );
    const board = json.resources.find((r: { kind: string }) => r.kind === "Dashboard");
    expect(board.changes).toContainEqual({ path: "tiles[payment-latency].y", to: 7, op: "set" });
    expect(board.changes).toContainEqual({
      path: "tiles[payment-latency].series[0]",
      to: JSON.parse(PAYMENT_SERIES[0] ?? ""),
      op: "set",
    });
  });

  it("shows a changed query as the whole series before and after, an added series with +", async () => {
    await edit(DASHBOARD, (t) =>
      t.replace(
        'aggFn: count, where: "level:error" }',
        'aggFn: count, where: "level:error AND env:prod" }\n        - { type: number, sourceId: 65f1a2b3c4d5e6f708192a71, aggFn: count, where: "level:warn" }',
      ),
    );

    const text = plan();

    expect(text.code).toBe(2);
    expect(text.stdout).toContain(
      [
        `      tiles[error-count].series[0]: {"type":"number","dataSource":"events","aggFn":"count","where":"level:error","sourceId":"${LOGS}"} -> {"type":"number","dataSource":"events","aggFn":"count","where":"level:error AND env:prod","sourceId":"${LOGS}"}`,
        `    + tiles[error-count].series[1]: {"type":"number","aggFn":"count","where":"level:warn","sourceId":"${LOGS}"}`,
      ].join("\n"),
    );
  });

  it("shows the tiles of a dashboard driftless creates the same way, under its POST", async () => {
    await writeFile(
      join(dir, "dashboards", "payments.yaml"),
      `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: payments
spec:
  name: Payments
  tiles:
${PAYMENT_TILE}`,
    );

    const text = plan();

    expect(text.code).toBe(2);
    expect(text.stdout).toContain(
      `+ Dashboard/payments: POST /api/v2/dashboards\n      name: "Payments"\n${paymentTileLines.join("\n")}\n`,
    );
  });

  it("keeps a hostile tile name and query on their own escaped lines, inside the Markdown block", async () => {
    const hostile = String.raw`evil\n~ ApiKey/forged: PATCH /v1/x\e[31m </summary> \u0060\u0060\u0060 \ud800 \u009b2J \u202e`;
    await edit(DASHBOARD, (t) =>
      (t + PAYMENT_TILE)
        .replace("name: Payment latency p99", `name: "${hostile}"`)
        .replace('where: "service:payments AND level:error"', `whereLanguage: sql, where: "${hostile}"`),
    );

    const outputs = ["text", "json", "markdown"].map((format) => plan(["-o", format]));

    for (const output of outputs) {
      expect(output.code).toBe(2);
      expect(output.stdout).not.toMatch(RAW_CONTROL);
      expect(output.stdout).not.toContain("\u202e");
    }
    const [text, , markdown] = outputs.map((o) => o.stdout);
    expect(text).not.toMatch(/^\s*~ ApiKey\/forged/m);
    expect(text).toContain(
      String.raw`      tiles[payment-latency].name: "evil\n~ ApiKey/forged: PATCH /v1/x\u001b[31m </summary> `,
    );
    expect(text).toContain(
      String.raw`"aggFn":"count","where":"evil\n~ ApiKey/forged: PATCH /v1/x\u001b[31m </summary> `,
    );
    expect(markdown).not.toMatch(/^\s*~ ApiKey\/forged/m);
    expect(markdown?.match(/^<details>/gm)).toHaveLength(1);
    expect(markdown?.match(/^<\/details>/gm)).toHaveLength(1);
  });

  it("shows manifest problems first and open in Markdown, before the counts and every resource", async () => {
    await edit(DASHBOARD, (t) => t + PAYMENT_TILE);
    await edit("api-keys.yaml", (t) => t.replace("roles: [developer]", "roles: developer"));

    const markdown = plan(["-o", "markdown"]).stdout;

    const problem = markdown.search(/^x api-keys\.yaml:\d+:\d+ {2}ApiKey\/ci-deployer {2}spec\.roles: /m);
    expect(problem).toBeGreaterThan(0);
    expect(problem).toBeLessThan(markdown.indexOf("| outcome | resources |"));
    expect(problem).toBeLessThan(markdown.indexOf("<details>"));
    expect(problem).toBeLessThan(markdown.indexOf("Base: HEAD"));
    // Open: no <details> block holds it.
    expect(markdown.slice(0, problem)).not.toContain("<details>");
    expect(markdown.match(/^<details>/gm)).toHaveLength(1);
  });

  it("says once, in every output, that the ids the manifests name were not checked to exist", async () => {
    await edit(DASHBOARD, (t) => t + PAYMENT_TILE);

    const outputs = ["text", "json", "markdown"].map((format) => plan(["-o", format]).stdout);

    for (const output of outputs) expect(output.split(IDS_NOT_CHECKED)).toHaveLength(2);
    expect(outputs[0]).toContain(
      `NOTE: ${IDS_NOT_CHECKED} (plan --base opens no connection): one that names no object fails only when apply sends its request; driftless plan with DRIFTLESS_READS=on checks them.`,
    );
  });
});
