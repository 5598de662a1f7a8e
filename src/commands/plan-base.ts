import { planAgainstBase } from "../review/base-plan.js";
import type { Io } from "./io.js";
import {
  idsNotChecked,
  type PlanDocument,
  type PlanOutputFormat,
  printPlan,
  READS_ON,
} from "./plan-output.js";

const IDS_NOT_CHECKED = idsNotChecked("plan --base opens no connection", `driftless plan with ${READS_ON}`);

export type PlanBaseOptions = { manifests: string; base: string; output: PlanOutputFormat };

/**
 * `driftless plan --base <git-ref|folder> [DIR]`: what merging would send, from the manifests alone.
 * Reads no state, setting, credential or secret value and opens no connection. Exit codes as `plan`.
 */
export async function planBaseCommand(options: PlanBaseOptions, io: Io): Promise<number> {
  const plan = await planAgainstBase(options.manifests, options.base);
  const doc: PlanDocument = {
    mode: "base",
    ...(plan.head.revision ? { revision: plan.head.revision } : {}),
    base: {
      ref: plan.base.ref,
      ...(plan.base.commit ? { revision: plan.base.commit } : {}),
      ...(plan.base.folder ? { folder: plan.base.folder } : {}),
    },
    secrets: "reference",
    notices: [...plan.notices, IDS_NOT_CHECKED],
    problems: plan.problems,
    resources: plan.resources,
  };
  return printPlan(doc, options.output, io, `driftless plan --base ${options.base} ${options.manifests}`);
}
