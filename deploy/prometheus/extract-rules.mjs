// Writes deploy/prometheus/driftless.rules.yaml: the groups of the PrometheusRule in
// deploy/base/prometheusrule.yaml as a plain Prometheus rule file, which promtool reads. Run it after
// changing the PrometheusRule: `node deploy/prometheus/extract-rules.mjs` (test/deploy-monitoring.test.ts
// fails while the two differ).
import { readFileSync, writeFileSync } from "node:fs";
import { parse, stringify } from "yaml";

const here = new URL(".", import.meta.url);
const rule = parse(readFileSync(new URL("../base/prometheusrule.yaml", here), "utf8"));
const header =
  "# Generated from deploy/base/prometheusrule.yaml by deploy/prometheus/extract-rules.mjs: do not edit.\n" +
  "# `promtool test rules deploy/prometheus/rules.test.yaml` reads it.\n";
writeFileSync(new URL("driftless.rules.yaml", here), header + stringify(rule.spec));
