/**
 * How the published observability API stores and answers a tile: in `config` form, whatever form it
 * was sent in (contracts/full/observability.yaml). The simulator stores tiles this way, and a read
 * compares a manifest's `series` with the `config` the platform answers through the same translation:
 * one rule, written once.
 */

type Config = Record<string, unknown>;

/** The series fields the translation reads; `groupBy` may hold anything an answer carried. */
export type SeriesInput = {
  type: string;
  aggFn?: string | undefined;
  where?: string | undefined;
  whereLanguage?: string | undefined;
  groupBy?: readonly unknown[] | undefined;
  sourceId?: string | undefined;
  field?: string | undefined;
  alias?: string | undefined;
  level?: number | undefined;
  metricName?: string | undefined;
  metricDataType?: string | undefined;
  displayType?: string | undefined;
  numberFormat?: Record<string, unknown> | undefined;
  fields?: readonly string[] | undefined;
  content?: string | undefined;
};

const AGGREGATES = new Set([
  "avg",
  "count",
  "count_distinct",
  "last_value",
  "max",
  "min",
  "quantile",
  "sum",
  "any",
  "none",
  "increase",
]);

/** One select item of a time, table or number series. */
function selectOf(series: SeriesInput): Config {
  const aggFn = series.aggFn && AGGREGATES.has(series.aggFn) ? series.aggFn : "none";
  return {
    aggFn,
    ...(series.field ? { valueExpression: series.field } : {}),
    ...(series.alias ? { alias: series.alias } : {}),
    ...(aggFn === "quantile" && series.level !== undefined ? { level: series.level } : {}),
    ...(series.metricName ? { metricName: series.metricName } : {}),
    ...(series.metricDataType ? { metricType: series.metricDataType } : {}),
    where: series.where ?? "",
    whereLanguage: series.whereLanguage ?? "lucene",
  };
}

/** The config the platform stores for a tile sent in series form. */
export function configOfSeries(series: readonly SeriesInput[], asRatio: boolean | undefined): Config {
  const first = series[0];
  if (!first) return { displayType: "line", sourceId: "", select: [{ aggFn: "count", where: "" }] };
  const sourceId = first.sourceId ?? "";
  const numberFormat = series.find((s) => s.numberFormat)?.numberFormat;
  const format = numberFormat ? { numberFormat } : {};
  const groupBy = (first.groupBy ?? []).map(String).join(",");
  const grouped = groupBy ? { groupBy } : {};
  if (first.type === "markdown") return { displayType: "markdown", markdown: first.content ?? "" };
  if (first.type === "search") {
    return {
      displayType: "search",
      sourceId,
      select: (first.fields ?? []).join(", "),
      where: first.where ?? "",
      whereLanguage: first.whereLanguage ?? "lucene",
    };
  }
  if (first.type === "number")
    return { displayType: "number", sourceId, select: [selectOf(first)], ...format };
  const select = series.map(selectOf);
  const ratio = asRatio === undefined ? {} : { asRatio: asRatio && select.length === 2 };
  if (first.type === "table")
    return { displayType: "table", sourceId, select, ...grouped, ...ratio, ...format };
  const displayType = first.displayType === "stacked_bar" ? "stacked_bar" : "line";
  return { displayType, sourceId, select, ...grouped, ...ratio, ...format, fillNulls: true };
}
