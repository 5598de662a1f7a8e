// A child of bench/engine.bench.mjs: plans the manifests in argv[2] against the state in argv[3] as
// `driftless plan` does, and prints its peak resident memory and how many resources it would send.
import { dist } from "./dist.mjs";

const { planPass } = await dist("reconcile/engine.js");
const { createFileStore } = await dist("state/file-store.js");
const { createLogger } = await dist("telemetry/logger.js");

const [manifests, stateDir] = process.argv.slice(2);
if (!manifests || !stateDir) throw new Error("usage: plan-peak-memory.mjs <manifests> <state folder>");
const store = createFileStore(stateDir, { readOnly: true });
const report = await planPass({
  manifests,
  store,
  secrets: { env: {}, secretsDir: "/" },
  logger: createLogger("silent"),
});
console.log(
  JSON.stringify({
    maxRss: process.resourceUsage().maxRSS * 1024,
    sends: report.resources.filter((r) => r.outcome !== "none").length,
  }),
);
