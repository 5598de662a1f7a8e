import { codeBlock, escapeLine, markdownInline } from "../escape.js";
import { formatProblem, type Problem } from "../manifests/problem.js";
import { formatChange, markOf, noChanges, type PlanSummary, summarize, titleOf } from "../plan/render.js";
import type { PlanView } from "../plan/view.js";

/**
 * `plan -o markdown`: a pull-request comment. One summary line, the manifest problems (open: a reviewer
 * must not miss them), a table of counts, one collapsed `<details>` per resource that changes (its
 * request and field diff); resources in sync are only counted. Values from manifests are escaped
 * (markdownInline, codeBlock), so a pull request cannot forge a row, a block or a line of the plan.
 */

/** GitHub refuses a comment longer than this many characters. */
export const COMMENT_LIMIT = 65_536;

/** The hidden first line: CI recipes find their earlier comment by it and update it in place. */
export const COMMENT_MARKER = "<!-- driftless-plan -->";

// Room kept for the truncation note and the closing lines.
const RESERVE = 1_000;
// One resource may not fill the comment (a dashboard of 1,000 tiles): its diff is cut at this size.
const BLOCK_LIMIT = 8_000;

export type MarkdownInput = {
  views: readonly PlanView[];
  problems: readonly Problem[];
  revision?: string;
  base?: string;
  notices?: readonly string[];
  /** The command that prints the whole plan, named in the truncation note. */
  fullCommand?: string;
  limit?: number;
};

const ROWS: [keyof PlanSummary, string][] = [
  ["toSend", "to send"],
  ["toCreate", "of them creates"],
  ["toDelete", "of them deletes"],
  ["toAdopt", "to adopt"],
  ["waiting", "waiting"],
  ["unmanaged", "no longer managed"],
  ["errors", "refused (errors)"],
  ["unknown", "unknown outcome"],
  ["invalid", "manifest problems"],
];

export function renderMarkdown(input: MarkdownInput): string {
  const limit = input.limit ?? COMMENT_LIMIT;
  const summary = summarize(input.views, input.problems);
  const head = [
    COMMENT_MARKER,
    headline(summary),
    ...problemLines(input.problems),
    ...context(input),
    "",
    ...table(summary),
    "",
  ];
  const blocks = input.views.filter(changed).map(detailsOf);
  const out = head.join("\n");
  let body = "";
  let shown = 0;
  for (const block of blocks) {
    if (out.length + body.length + block.length + 1 > limit - RESERVE) break;
    body += `${block}\n`;
    shown++;
  }
  const left = blocks.length - shown;
  const note =
    left > 0
      ? `\n**${left} more block(s) not shown**: a comment is limited to ${limit} characters. ` +
        `Run \`${input.fullCommand ?? "driftless plan"}\` for the whole plan.\n`
      : "";
  return `${out}\n${body}${note}`;
}

const changed = (view: PlanView) => view.outcome !== "none";

function headline(s: PlanSummary): string {
  const parts = ROWS.filter(([key]) => s[key] > 0).map(([key, label]) => `${s[key]} ${label}`);
  const what = parts.length > 0 ? parts.join(", ") : "no changes";
  return `**driftless plan**: ${what}; ${s.inSync} in sync.`;
}

function context(input: MarkdownInput): string[] {
  const lines: string[] = [];
  if (input.base) lines.push("", `Base: ${markdownInline(input.base)}`);
  if (input.revision) lines.push("", `Revision: ${markdownInline(input.revision)}`);
  for (const notice of input.notices ?? []) lines.push("", `> **Note:** ${markdownInline(notice)}`);
  return lines;
}

/** The counts of what changes; empty (a header only) when nothing does. */
function table(s: PlanSummary): string[] {
  const rows = ROWS.filter(([key]) => s[key] > 0).map(([key, label]) => `| ${label} | ${s[key]} |`);
  return ["| outcome | resources |", "|---|---:|", ...rows];
}

/** The manifest problems, open, as text prints them: nothing is sent for these manifests. */
function problemLines(problems: readonly Problem[]): string[] {
  if (problems.length === 0) return [];
  const lines = problems.map((p) => escapeLine(`x ${formatProblem(p)}`));
  return [
    "",
    `**${problems.length} manifest problem(s)**: nothing is sent for these manifests until they are fixed.`,
    "",
    codeBlock(capped(lines), "text"),
  ];
}

function detailsOf(view: PlanView): string {
  const request = view.request ? `: ${view.request.method} ${view.request.path}` : "";
  const lines: string[] = [];
  if (!view.request) lines.push(view.reason);
  for (const change of view.changes) lines.push(formatChange(change));
  if (view.request && view.changes.length === 0) lines.push(`(${noChanges(view)})`);
  if (view.followUp) lines.push(`then: ${view.followUp}`);
  for (const note of view.notes ?? []) lines.push(`note: ${note}`);
  return details(`${markOf(view)} ${titleOf(view)}${request}`, capped(lines.map(escapeLine)));
}

/** Lines up to BLOCK_LIMIT characters, then a line saying how many were left out. */
function capped(lines: readonly string[]): string[] {
  const kept: string[] = [];
  let size = 0;
  for (const line of lines) {
    if (size + line.length > BLOCK_LIMIT) {
      kept.push(`… ${lines.length - kept.length} more line(s) not shown`);
      break;
    }
    kept.push(line);
    size += line.length + 1;
  }
  return kept;
}

function details(summary: string, lines: readonly string[]): string {
  return [
    `<details><summary>${markdownInline(summary)}</summary>`,
    "",
    codeBlock(lines, "text"),
    "",
    "</details>",
  ].join("\n");
}
