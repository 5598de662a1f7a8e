import { formatProblem, type Problem } from "../manifests/problem.js";
import type { Change, Outcome } from "./types.js";
import type { PlanView } from "./view.js";

/** How `plan` prints: one block per resource that is not in sync, then a summary line. */

const MARK: Record<Outcome, string> = {
  none: "=",
  send: "~",
  adopt: "@",
  wait: "…",
  refuse: "!",
  unknown: "?",
};

const show = (value: unknown): string =>
  typeof value === "string" && value.startsWith("(") ? value : JSON.stringify(value);

/** One diff line: `path: old -> new`, `+ path: entry`, `- path: entry`. */
export function formatChange(change: Change): string {
  if (change.op === "add")
    return `+ ${change.path}: ${show(change.to)}${"from" in change ? ` (was ${show(change.from)})` : ""}`;
  if (change.op === "remove") return `- ${change.path}: ${show(change.from)}`;
  if (!("from" in change)) return `  ${change.path}: ${show(change.to)}`;
  return `  ${change.path}: ${show(change.from)} -> ${show(change.to)}`;
}

export function formatView(view: PlanView): string[] {
  const head = `${MARK[view.outcome]} ${view.kind}/${view.name}`;
  const lines: string[] = [];
  if (view.request) {
    lines.push(`${head}: ${view.request.method} ${view.request.path}`);
    for (const change of view.changes) lines.push(`    ${formatChange(change)}`);
    if (view.changes.length === 0) lines.push(`    (${view.reason}: the desired fields are sent again)`);
    if (view.followUp) lines.push(`    then: ${view.followUp}`);
    return lines;
  }
  const label = {
    none: "in sync",
    adopt: "adopt",
    wait: "waits",
    refuse: "error",
    unknown: "unknown",
    send: "",
  }[view.outcome];
  lines.push(`${head}: ${label}: ${view.reason}`);
  for (const change of view.changes) lines.push(`    ${formatChange(change)}`);
  return lines;
}

/** Counts of outcomes, for the summary line and `--output json`. */
export function summarize(views: readonly PlanView[], problems: readonly Problem[]) {
  const count = (outcome: Outcome) => views.filter((v) => v.outcome === outcome).length;
  return {
    toSend: count("send"),
    toAdopt: count("adopt"),
    inSync: count("none"),
    waiting: count("wait"),
    errors: count("refuse"),
    unknown: count("unknown"),
    invalid: problems.length,
  };
}

export function renderPlan(
  views: readonly PlanView[],
  problems: readonly Problem[],
  revision?: string,
): string {
  const lines: string[] = [];
  if (revision) lines.push(`revision ${revision}`);
  for (const problem of problems) lines.push(`x ${formatProblem(problem)}`);
  for (const view of views) if (view.outcome !== "none") lines.push(...formatView(view));
  const s = summarize(views, problems);
  lines.push(
    `Plan: ${s.toSend} to send, ${s.toAdopt} to adopt, ${s.inSync} in sync, ${s.waiting} waiting, ${s.errors} error(s), ${s.unknown} unknown, ${s.invalid} manifest problem(s).`,
  );
  return lines.join("\n");
}
