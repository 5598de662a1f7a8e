import { describe, expect, it } from "vitest";
import { escapeJson } from "../src/escape.js";
import { renderPlan } from "../src/plan/render.js";
import type { PlanView } from "../src/plan/view.js";
import { COMMENT_LIMIT, renderMarkdown } from "../src/review/markdown.js";

/** What a reviewer reads of a plan, in text, JSON and Markdown, when manifests hold hostile values. */

const RAW_CONTROL = new RegExp(
  [
    "[\\u0000-\\u0009\\u000b-\\u001f\\u007f-\\u009f]",
    "[\\ud800-\\udbff](?![\\udc00-\\udfff])",
    "(?<![\\ud800-\\udbff])[\\udc00-\\udfff]",
  ].join("|"),
);

const HOSTILE =
  "x\n~ ApiKey/forged: PATCH /v1/forged\r\u001b[2K\u009b31m | <details><summary>y</summary> ``` \ud800 \u202e";

const patch = (name: string, to: unknown): PlanView => ({
  kind: "ApiKey",
  name,
  outcome: "send",
  reason: "1 change(s)",
  request: {
    api: "management",
    method: "PATCH",
    route: "/v1/k/{id}",
    path: `/v1/k/${name}`,
    body: { name: to },
  },
  changes: [{ path: "name", from: "old", to, op: "set" }],
});

const create: PlanView = {
  kind: "ReversePrivateEndpoint",
  name: "msk",
  outcome: "send",
  reason: "not created yet",
  request: { api: "management", method: "POST", route: "/v1/e", path: "/v1/e", body: { description: "d" } },
  changes: [{ path: "description", to: "d", op: "set" }],
};

describe("plan output", () => {
  it("marks a create +, a change ~, a refusal ! and a wait …", () => {
    const waiting: PlanView = {
      kind: "DataPipe",
      name: "p",
      outcome: "wait",
      reason: "waits for it",
      changes: [],
    };
    const refused: PlanView = {
      kind: "ReversePrivateEndpoint",
      name: "e",
      outcome: "refuse",
      reason: "no",
      changes: [],
    };

    const text = renderPlan([create, patch("k", "new"), refused, waiting], []);

    expect(text.split("\n")).toEqual([
      "+ ReversePrivateEndpoint/msk: POST /v1/e",
      '      description: "d"',
      "~ ApiKey/k: PATCH /v1/k/k",
      '      name: "old" -> "new"',
      "! ReversePrivateEndpoint/e: error: no",
      "… DataPipe/p: waits: waits for it",
      "Plan: 2 to send, 0 to adopt, 0 in sync, 1 waiting, 1 error(s), 0 unknown, 0 manifest problem(s).",
    ]);
  });

  it("keeps a hostile value on its own escaped line in text: no forged line, no raw control character", () => {
    const text = renderPlan([patch("k", HOSTILE)], []);

    expect(text).not.toMatch(RAW_CONTROL);
    expect(text.split("\n")).toHaveLength(3);
    expect(text).not.toMatch(/^~ ApiKey\/forged/m);
    expect(text).toContain(String.raw`"x\n~ ApiKey/forged: PATCH /v1/forged\r\u001b[2K\u009b31m`);
  });

  it("escapes a hostile field name (a settings key from a manifest) like a value", () => {
    const view = {
      ...patch("k", "v"),
      changes: [{ path: `settings.${HOSTILE}`, to: 1, op: "set" as const }],
    };

    const text = renderPlan([view], []);
    const markdown = renderMarkdown({ views: [view], problems: [] });

    expect(text).not.toMatch(RAW_CONTROL);
    expect(text.split("\n")).toHaveLength(3);
    expect(markdown).not.toMatch(RAW_CONTROL);
    expect(markdown.match(/^<details>/gm)).toHaveLength(1);
  });

  it("quotes a manifest value in parentheses that is not one of the plan's own placeholders", () => {
    const text = renderPlan([patch("k", "(unchanged) -> (changed)")], []);

    expect(text).toContain('      name: "old" -> "(unchanged) -> (changed)"');
  });

  it("escapes in JSON what JSON.stringify leaves raw, and the document still parses to the same value", () => {
    const json = escapeJson(JSON.stringify({ value: HOSTILE }, null, 2));

    expect(json).not.toMatch(RAW_CONTROL);
    expect(json).not.toContain("\u202e");
    expect(JSON.parse(json).value).toBe(HOSTILE);
  });

  it("keeps a hostile value inside its Markdown code block: one <details> per changed resource", () => {
    const markdown = renderMarkdown({ views: [patch("k", HOSTILE), create], problems: [] });

    expect(markdown).not.toMatch(RAW_CONTROL);
    expect(markdown.match(/^<details>/gm)).toHaveLength(2);
    expect(markdown.match(/^<\/details>/gm)).toHaveLength(2);
    // The fence is longer than any run of backticks inside it, so the value cannot close it.
    expect(markdown).toContain("````text\n");
  });

  it("escapes Markdown and HTML in a summary line", () => {
    const markdown = renderMarkdown({
      views: [
        {
          ...patch("k", "v"),
          request: { api: "management", method: "PATCH", route: "/", path: "/v1/</summary>|*x*", body: {} },
        },
      ],
      problems: [],
    });

    expect(markdown).toContain("PATCH /v1/&#60;/summary&#62;&#124;&#42;x&#42;</summary>");
  });

  it("counts resources in sync without a block, and gives an empty table when nothing changes", () => {
    const inSync: PlanView = { kind: "ApiKey", name: "k", outcome: "none", reason: "in sync", changes: [] };

    const markdown = renderMarkdown({ views: [inSync, inSync], problems: [] });

    expect(markdown).toContain("**driftless plan**: no changes; 2 in sync.");
    expect(markdown).toContain("| outcome | resources |\n|---|---:|\n\n");
    expect(markdown).not.toContain("<details>");
  });

  it("stays under GitHub's comment limit for 5,000 changed resources, with a truncation note", () => {
    const views = Array.from({ length: 5_000 }, (_, i) => patch(`key-${i}`, `name number ${i} `.repeat(5)));

    const markdown = renderMarkdown({
      views,
      problems: [],
      fullCommand: "driftless plan --base main manifests",
    });

    expect(markdown.length).toBeLessThan(COMMENT_LIMIT);
    expect(markdown).toContain("| to send | 5000 |");
    const shown = markdown.match(/^<details>/gm)?.length ?? 0;
    expect(shown).toBeGreaterThan(10);
    expect(markdown).toContain(`**${5_000 - shown} more block(s) not shown**`);
    expect(markdown).toContain("Run `driftless plan --base main manifests` for the whole plan.");
  });
});
