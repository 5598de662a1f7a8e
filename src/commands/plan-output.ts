import { escapeJson } from "../escape.js";
import type { Problem } from "../manifests/problem.js";
import { exitCodeOf, renderPlan, summarize } from "../plan/render.js";
import type { PlanView } from "../plan/view.js";
import type { DriftCounts } from "../reconcile/plan-drift.js";
import { renderMarkdown } from "../review/markdown.js";
import { SETTINGS } from "../settings.js";
import type { Io, OutputFormat } from "./io.js";

/** `plan` also prints a pull-request comment. */
export type PlanOutputFormat = OutputFormat | "markdown";

/** Bumped when a field of the JSON document changes meaning or goes away (new fields do not bump it). */
export const PLAN_FORMAT_VERSION = 1;

/**
 * Said once by a plan that read nothing from the platform (`why`): an id no object has (a typo, an
 * object deleted in the console) passes it, and fails only at apply. `plan` with reads on checks them.
 */
export function idsNotChecked(why: string, remedy: string): string {
  return `the ids the manifests name were not checked to exist (${why}): one that names no object fails only when apply sends its request; ${remedy} checks them.`;
}

/** The setting that makes `plan` read, as the notices name it. */
export const READS_ON = `${SETTINGS.reads.env}=on`;

/** What every output of a plan is made of, state-based or `--base`. */
export type PlanDocument = {
  mode: "state" | "base";
  /** A plan of the state: "simulator" (the built-in one stands in), or the management API's origin. */
  platform?: string;
  revision?: string;
  /** `--base`: the git revision (or folder) taken as what the platform has. */
  base?: { ref: string; revision?: string; folder?: string };
  firstContact?: boolean;
  secrets: "read" | "skip" | "reference";
  /**
   * With reads on: how many live objects were read, how many differ from git, how many could not be
   * read, and how many driftless never applied (not read).
   */
  reads?: DriftCounts;
  notices: string[];
  problems: Problem[];
  resources: PlanView[];
};

/** Prints `doc` as `format` and returns the exit code: 0 nothing changes, 2 changes, 1 errors. */
export function printPlan(doc: PlanDocument, format: PlanOutputFormat, io: Io, fullCommand: string): number {
  const summary = summarize(doc.resources, doc.problems);
  const exitCode = exitCodeOf(summary);
  const base = doc.base ? `${doc.base.ref}${doc.base.revision ? ` (${doc.base.revision})` : ""}` : undefined;
  if (format === "json") {
    io.out(
      escapeJson(JSON.stringify({ formatVersion: PLAN_FORMAT_VERSION, ...doc, summary, exitCode }, null, 2)),
    );
  } else if (format === "markdown") {
    io.out(
      renderMarkdown({
        views: doc.resources,
        problems: doc.problems,
        notices: doc.notices,
        fullCommand,
        ...(doc.revision ? { revision: doc.revision } : {}),
        ...(base ? { base } : {}),
      }),
    );
  } else {
    io.out(
      renderPlan(doc.resources, doc.problems, {
        notices: doc.notices,
        ...(doc.revision ? { revision: doc.revision } : {}),
        ...(base ? { base } : {}),
      }),
    );
  }
  return exitCode;
}
