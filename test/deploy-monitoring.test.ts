import { spawnSync } from "node:child_process";
import { existsSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { parser } from "@prometheus-io/lezer-promql";
import { Registry } from "prom-client";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { createMetrics } from "../src/telemetry/metrics.js";

/**
 * The PrometheusRule and the Grafana dashboard in deploy/base: the rules checked and unit-tested by
 * promtool (Debian's `prometheus` package, installed by .ci/run), and every query parsed with
 * Prometheus's own PromQL grammar so that it names only series driftless exports.
 */

const repo = fileURLToPath(new URL("..", import.meta.url));
const base = join(repo, "deploy/base");

type Rule = { alert?: string; record?: string; expr: string; for?: string; labels?: Record<string, string> };
const ruleObject = parse(readFileSync(join(base, "prometheusrule.yaml"), "utf8")) as {
  spec: { groups: { name: string; rules: Rule[] }[] };
};
const rules = ruleObject.spec.groups.flatMap((group) => group.rules);

type Override = { matcher: { id: string; options: string }; properties: { id: string; value: unknown }[] };
type Panel = {
  title?: string;
  type: string;
  targets?: { expr: string; refId: string }[];
  panels?: Panel[];
  fieldConfig?: { defaults?: { unit?: string }; overrides?: Override[] };
};

/** The unit Grafana draws a query of `panel` in: an override for its refId, else the panel's. */
function unitOf(panel: Panel, refId: string): string | undefined {
  const override = panel.fieldConfig?.overrides?.find(
    (o) => o.matcher.id === "byFrameRefID" && o.matcher.options === refId,
  );
  const unit = override?.properties.find((property) => property.id === "unit")?.value;
  return typeof unit === "string" ? unit : panel.fieldConfig?.defaults?.unit;
}
const dashboard = JSON.parse(readFileSync(join(base, "grafana-dashboard.json"), "utf8")) as {
  panels: Panel[];
  templating: { list: { name: string; query?: string | { query: string } }[] };
};
const panels = dashboard.panels.flatMap((panel) => [panel, ...(panel.panels ?? [])]);
const dashboardQueries = [
  ...panels.flatMap((panel) =>
    (panel.targets ?? []).map((target) => ({ where: panel.title, expr: target.expr })),
  ),
  ...dashboard.templating.list
    .filter((variable) => typeof variable.query === "object")
    .map((variable) => ({ where: `$${variable.name}`, expr: labelValuesSelector(variable.query) })),
];

/** Every series name driftless's registry exposes, as a scrape shows it. */
async function exportedSeries(): Promise<Set<string>> {
  const registry = new Registry();
  createMetrics(registry);
  const names = new Set<string>();
  for (const metric of await registry.getMetricsAsJSON()) {
    const suffixes = String(metric.type) === "histogram" ? ["_bucket", "_sum", "_count"] : [""];
    for (const suffix of suffixes) names.add(`${metric.name}${suffix}`);
  }
  return names;
}

/**
 * The metric names a PromQL expression selects, and its syntax errors. Grafana's variables are
 * replaced the way Grafana would before sending the query.
 */
function selectedMetrics(expr: string): { names: string[]; errors: number } {
  const query = expr.replace(/\$__\w+/g, "5m").replace(/\$\{?\w+\}?/g, "value");
  const names: string[] = [];
  let errors = 0;
  parser.parse(query).iterate({
    enter(node) {
      if (node.type.isError) errors++;
      if (node.name !== "VectorSelector") return;
      const identifier = node.node.getChild("Identifier");
      if (identifier) names.push(query.slice(identifier.from, identifier.to));
    },
  });
  return { names, errors };
}

/** `label_values(metric, label)` → `metric`, a selector the PromQL grammar can check. */
function labelValuesSelector(query: unknown): string {
  const text = typeof query === "object" && query !== null ? String((query as { query: unknown }).query) : "";
  return /^label_values\((\w+)/.exec(text)?.[1] ?? text;
}

describe("the PrometheusRule", () => {
  const extracted = join(repo, "deploy/prometheus/driftless.rules.yaml");

  it("is extracted as deploy/prometheus/driftless.rules.yaml, so that promtool reads it as it is", () => {
    const text = existsSync(extracted) ? readFileSync(extracted, "utf8") : "";

    expect(parse(text), "run: node deploy/prometheus/extract-rules.mjs").toEqual(ruleObject.spec);
  });

  it("passes promtool check rules", () => {
    const check = spawnSync("promtool", ["check", "rules", "deploy/prometheus/driftless.rules.yaml"], {
      cwd: repo,
      encoding: "utf8",
    });

    expect(check.error, "promtool is needed: apt-get install prometheus").toBeUndefined();
    expect(check.stdout + check.stderr).toMatch(new RegExp(`SUCCESS: ${rules.length} rules found`));
    expect(check.status).toBe(0);
  });

  it("fires each alert on the series that should fire it, and only then (promtool test rules, as docs/kubernetes.md runs it)", () => {
    const tests = join(repo, "deploy/prometheus/rules.test.yaml");
    const tested = new Set([...readFileSync(tests, "utf8").matchAll(/alertname: (\w+)/g)].map((m) => m[1]));

    const run = spawnSync("promtool", ["test", "rules", "deploy/prometheus/rules.test.yaml"], {
      cwd: repo,
      encoding: "utf8",
    });

    expect(run.stdout + run.stderr).toMatch(/SUCCESS/);
    expect(run.status).toBe(0);
    expect(rules.map((rule) => rule.alert).filter((alert) => !tested.has(alert))).toEqual([]);
  });

  it("covers what a platform team pages on", () => {
    const alerts = rules.map((rule) => rule.alert);

    expect(alerts).toEqual(
      expect.arrayContaining([
        "DriftlessReconcileFailing",
        "DriftlessResourcesFailing",
        "DriftlessNoRecentSuccess",
        "DriftlessManifestsInvalid",
        "DriftlessBackupStale",
        "DriftlessWatchedAlertFiring",
        "DriftlessApiRateLimited",
        "DriftlessSimulator",
      ]),
    );
    for (const rule of rules) expect(rule.labels?.severity, rule.alert).toMatch(/^(warning|critical)$/);
  });

  it("names only series driftless exports (and the scrape's `up`)", async () => {
    const exported = await exportedSeries();

    const unknown = rules.flatMap((rule) => {
      const { names, errors } = selectedMetrics(rule.expr);
      const strangers = names.filter((name) => name !== "up" && !exported.has(name));
      return [...strangers, ...(errors ? [`${rule.alert}: ${errors} syntax errors`] : [])];
    });

    expect(unknown).toEqual([]);
  });
});

describe("the Grafana dashboard", () => {
  it("queries only series driftless exports, in valid PromQL", async () => {
    const exported = await exportedSeries();

    const problems = dashboardQueries.flatMap(({ where, expr }) => {
      const { names, errors } = selectedMetrics(expr);
      return [
        ...names.filter((name) => !exported.has(name)).map((name) => `${where}: ${name}`),
        ...(errors ? [`${where}: ${errors} syntax errors in ${expr}`] : []),
        ...(names.length === 0 ? [`${where}: selects no metric`] : []),
      ];
    });

    expect(dashboardQueries.length).toBeGreaterThan(10);
    expect(problems).toEqual([]);
  });

  it("charts every metric whose name docs/daemon.md#metrics fixes", () => {
    const charted = new Set(dashboardQueries.flatMap(({ expr }) => selectedMetrics(expr).names));
    const fixed = [
      "driftless_reconcile_total",
      "driftless_reconcile_duration_seconds_bucket",
      "driftless_resources",
      "driftless_manifest_errors",
      "driftless_api_requests_total",
      "driftless_api_request_duration_seconds_bucket",
      "driftless_alert_state",
      "driftless_backup_last_finished_timestamp_seconds",
      "driftless_backup_stale",
      "driftless_last_success_timestamp_seconds",
      "driftless_source_revision_info",
      "driftless_resources_failed",
      "driftless_alert_firing",
      "driftless_suspended",
      "driftless_simulator",
      "driftless_lifecycle_total",
      "driftless_deletes_held",
    ];

    expect(fixed.filter((name) => !charted.has(name))).toEqual([]);
  });

  it("draws each query in the unit of what it measures: bytes as bytes, durations as seconds", () => {
    const wrong = panels.flatMap((panel) =>
      (panel.targets ?? []).flatMap((target) => {
        const unit = unitOf(panel, target.refId);
        const names = selectedMetrics(target.expr).names;
        const expected = names.some((name) => name.endsWith("_bytes"))
          ? "bytes"
          : names.some((name) => name.endsWith("_duration_seconds")) ||
              (target.expr.startsWith("histogram_quantile(") &&
                names.some((name) => name.endsWith("_seconds_bucket")))
            ? "s"
            : undefined;
        return expected && unit !== expected
          ? [`${panel.title} ${target.refId}: ${unit}, not ${expected}`]
          : [];
      }),
    );

    expect(wrong).toEqual([]);
  });

  it("takes its data source from a variable, so it imports into any Grafana", () => {
    const sources = panels
      .filter((panel) => panel.type !== "row")
      .map((panel) => (panel as Panel & { datasource?: { uid: string } }).datasource?.uid);

    expect(sources).toEqual(sources.map(() => expect.stringMatching(/^\$\{datasource\}$/)));
  });
});
