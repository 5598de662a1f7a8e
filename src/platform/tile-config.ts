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

/** The display types a tile in series form can have. */
const SERIES_DISPLAY_TYPES = new Set(["line", "stacked_bar", "table", "number", "search", "markdown"]);

/** A series as a manifest writes it, read back from a stored tile's config (seriesOfConfig). */
export type SeriesOutput = Record<string, unknown> & { type: string };

const text = (value: unknown): string | undefined => (typeof value === "string" ? value : undefined);

/** One select item of a config as the series fields it came from. */
function seriesOfSelect(item: unknown): Record<string, unknown> {
  if (typeof item !== "object" || item === null) return { aggFn: "none", where: "" };
  const get = (key: string) => Reflect.get(item, key);
  const where = text(get("where")) ?? "";
  const language = text(get("whereLanguage"));
  const level = get("level");
  return {
    aggFn: text(get("aggFn")) ?? "none",
    ...(text(get("valueExpression")) ? { field: get("valueExpression") } : {}),
    ...(text(get("alias")) ? { alias: get("alias") } : {}),
    ...(typeof level === "number" ? { level } : {}),
    ...(text(get("metricName")) ? { metricName: get("metricName") } : {}),
    ...(text(get("metricType")) ? { metricDataType: get("metricType") } : {}),
    where,
    // Stated with any filter: the manifest's own `<field>:<value>` check then leaves it to the language.
    ...(language && (where !== "" || language !== "lucene") ? { whereLanguage: language } : {}),
  };
}

/**
 * The series (and asRatio) a manifest writes for a tile the platform stores as `config`: the inverse of
 * configOfSeries, so that the config made again from them states what `config` holds, and a read of
 * the tile finds no drift. Every series names the config's source, and the fields the published
 * contract requires of its type (`where`, a time or table series' `groupBy`). Undefined for a tile no
 * series can state (a heatmap, raw SQL).
 */
export function seriesOfConfig(config: Config): { series: SeriesOutput[]; asRatio?: boolean } | undefined {
  const displayType = text(config.displayType) ?? "line";
  // A tile series cannot state (a heatmap, raw SQL, ...): no manifest can keep it as it is.
  if (!SERIES_DISPLAY_TYPES.has(displayType) || config.configType === "sql") return undefined;
  const sourceId = text(config.sourceId);
  const source = sourceId ? { sourceId } : {};
  const asRatio = typeof config.asRatio === "boolean" ? { asRatio: config.asRatio } : {};
  const numberFormat =
    typeof config.numberFormat === "object" && config.numberFormat !== null
      ? { numberFormat: config.numberFormat }
      : {};
  if (displayType === "markdown")
    return { series: [{ type: "markdown", content: text(config.markdown) ?? "" }] };
  if (displayType === "search") {
    const fields = (text(config.select) ?? "").split(", ").filter(Boolean);
    const where = text(config.where) ?? "";
    const language = text(config.whereLanguage);
    return {
      series: [
        {
          type: "search",
          ...source,
          ...(fields.length > 0 ? { fields } : {}),
          where,
          ...(language && (where !== "" || language !== "lucene") ? { whereLanguage: language } : {}),
        },
      ],
    };
  }
  const select = Array.isArray(config.select) ? config.select : [];
  if (displayType === "number")
    return { series: [{ type: "number", ...source, ...seriesOfSelect(select[0]), ...numberFormat }] };
  const groupBy = (text(config.groupBy) ?? "").split(",").filter((field) => field !== "");
  const type = displayType === "table" ? "table" : "time";
  const shown = displayType === "stacked_bar" ? { displayType: "stacked_bar" } : {};
  const series = select.map((item, index) => ({
    type,
    ...source,
    ...seriesOfSelect(item),
    groupBy,
    ...(type === "time" ? shown : {}),
    ...(index === 0 ? numberFormat : {}),
  }));
  return { series, ...asRatio };
}
