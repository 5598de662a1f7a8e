import { jsonPreview } from "../bounded-values.js";
import { escapeLine } from "../escape.js";
import { formatProblem, type Problem } from "../manifests/problem.js";
import type { Change } from "./types.js";
import type { PlanView, ViewOutcome } from "./view.js";

/**
 * How `plan` prints, shared by the state-based plan and `plan --base`: one block per resource that is
 * not in sync, then a summary line. Every line is escaped (escapeLine): a value from a manifest can
 * never start a line of its own or colour the terminal.
 */

const MARK: Record<ViewOutcome, string> = {
  none: "=",
  send: "~",
  adopt: "@",
  wait: "…",
  refuse: "!",
  unknown: "?",
  unmanaged: "-",
};

/** `+` for a request that creates an object, `-` for one that deletes it, else the outcome's mark. */
export function markOf(view: PlanView): string {
  if (view.action === "create" || view.request?.method === "POST") return "+";
  if (view.action === "delete") return "-";
  return MARK[view.outcome];
}

// The placeholders planners put in diffs (secret masks, tile notes). Any other string is quoted, so a
// manifest value cannot pass itself off as one of them.
const PLACEHOLDER =
  /^\((?:changed|unchanged|secret|not compared|reference changed|reference unchanged|new tile: the platform assigns its id|tile [^()"]*)\)$/;

/** Characters of one value a plan line shows; `-o json` holds it whole. */
const PLAN_VALUE_CHARS = 2_000;

const show = (value: unknown): string => {
  if (typeof value === "string" && PLACEHOLDER.test(value)) return value;
  return value === undefined ? "undefined" : jsonPreview(value, PLAN_VALUE_CHARS);
};

/** One diff line: `path: old -> new`, `+ path: entry`, `- path: entry`; marked when made outside git. */
export function formatChange(change: Change): string {
  const line = diffLine(change);
  return change.outsideGit ? `${line}  (changed outside git)` : line;
}

function diffLine(change: Change): string {
  if (change.op === "add")
    return `+ ${change.path}: ${show(change.to)}${"from" in change ? ` (was ${show(change.from)})` : ""}`;
  if (change.op === "remove") return `- ${change.path}: ${show(change.from)}`;
  if (!("from" in change)) return `  ${change.path}: ${show(change.to)}`;
  return `  ${change.path}: ${show(change.from)} -> ${show(change.to)}`;
}

/** `Kind/name`, with the former name of a rename. */
export function titleOf(view: PlanView): string {
  const id = `${view.kind}/${view.name}`;
  return view.renamedFrom ? `${id} (renamed from ${view.kind}/${view.renamedFrom})` : id;
}

/** What a request without a field diff does: a delete, or the desired fields sent again. */
export const noChanges = (view: PlanView): string =>
  view.action === "delete" ? view.reason : `${view.reason}: the desired fields are sent again`;

const LABEL: Record<ViewOutcome, string> = {
  none: "in sync",
  adopt: "adopt",
  wait: "waits",
  refuse: "error",
  unknown: "unknown",
  unmanaged: "no longer managed",
  send: "",
};

const namesObject = (view: PlanView): boolean =>
  view.outcome === "adopt" ||
  view.outcome === "unmanaged" ||
  view.action === "delete" ||
  view.action === "orphan";

/** The lines of one resource, each escaped; the first is `<mark> Kind/name: ...`. */
export function formatView(view: PlanView): string[] {
  const head = `${markOf(view)} ${titleOf(view)}`;
  const lines: string[] = [];
  if (view.request) {
    lines.push(`${head}: ${view.request.method} ${view.request.path}`);
    for (const change of view.changes) lines.push(`    ${formatChange(change)}`);
    if (view.changes.length === 0) lines.push(`    (${noChanges(view)})`);
    if (view.followUp) lines.push(`    then: ${view.followUp}`);
  } else {
    // The object a plan adopts, deletes or leaves is named by its id (a request's path names it too).
    const named = view.id && namesObject(view) ? `${head} (id ${view.id})` : head;
    lines.push(`${named}: ${LABEL[view.outcome]}: ${view.reason}`);
    for (const change of view.changes) lines.push(`    ${formatChange(change)}`);
  }
  for (const note of view.notes ?? []) lines.push(`    note: ${note}`);
  return lines.map(escapeLine);
}

export type PlanSummary = ReturnType<typeof summarize>;

/** Counts of outcomes, for the summary line, `--output json` and the Markdown table. */
export function summarize(views: readonly PlanView[], problems: readonly Problem[]) {
  const count = (outcome: ViewOutcome) => views.filter((v) => v.outcome === outcome).length;
  const sending = (action: PlanView["action"]) =>
    views.filter((v) => v.outcome === "send" && v.action === action).length;
  return {
    toSend: count("send"),
    /** Of toSend: the objects created, and those deleted (their manifest left git). */
    toCreate: sending("create"),
    toDelete: sending("delete"),
    toAdopt: count("adopt"),
    inSync: count("none"),
    waiting: count("wait"),
    errors: count("refuse"),
    unknown: count("unknown"),
    invalid: problems.length,
    unmanaged: count("unmanaged"),
  };
}

/**
 * 1 when anything is wrong (a manifest problem, a refusal, an unknown outcome), 2 when something
 * would be sent, adopted, waited for, or stops being managed, 0 when nothing changes.
 */
export function exitCodeOf(s: PlanSummary): 0 | 1 | 2 {
  if (s.invalid + s.errors + s.unknown > 0) return 1;
  return s.toSend + s.toAdopt + s.waiting + s.unmanaged > 0 ? 2 : 0;
}

/** The last line of the text output. */
export function summaryLine(s: PlanSummary): string {
  const unmanaged = s.unmanaged > 0 ? `, ${s.unmanaged} no longer managed` : "";
  const lifecycle =
    s.toCreate + s.toDelete > 0
      ? ` (${s.toCreate} to create, ${s.toSend - s.toCreate - s.toDelete} to update, ${s.toDelete} to delete)`
      : "";
  return `Plan: ${s.toSend} to send${lifecycle}, ${s.toAdopt} to adopt, ${s.inSync} in sync, ${s.waiting} waiting, ${s.errors} error(s), ${s.unknown} unknown, ${s.invalid} manifest problem(s)${unmanaged}.`;
}

/** What the text output starts with: the revision(s) and the notices a reviewer must not miss. */
export type PlanHeader = { revision?: string; base?: string; notices?: readonly string[] };

export function renderPlan(
  views: readonly PlanView[],
  problems: readonly Problem[],
  header: PlanHeader | string = {},
): string {
  const { revision, base, notices = [] } = typeof header === "string" ? { revision: header } : header;
  const lines: string[] = [];
  if (base) lines.push(escapeLine(`base ${base}`));
  if (revision) lines.push(escapeLine(`revision ${revision}`));
  for (const notice of notices) lines.push(escapeLine(`NOTE: ${notice}`));
  for (const problem of problems) lines.push(escapeLine(`x ${formatProblem(problem)}`));
  // A resource in sync is shown only for its notes (a live object that could not be read, a rename).
  for (const view of views)
    if (view.outcome !== "none" || view.notes?.length) lines.push(...formatView(view));
  lines.push(summaryLine(summarize(views, problems)));
  return lines.join("\n");
}
