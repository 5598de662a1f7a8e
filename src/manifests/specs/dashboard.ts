import { z } from "zod";
import {
  Bool,
  EVEN_WITH_FIELD_PROBLEMS,
  Int,
  manifestDocument,
  NonEmpty,
  PathId,
  stringField,
  Text,
  uniqueIn,
} from "../fields.js";

/**
 * PUT /api/v2/dashboards/{id}. The minimal contract names some values that "occur" for series fields
 * and says nothing of the others, so any non-empty string is accepted there; the known ones (the
 * published contract's) are suggested to editors. The published contract's own series fields follow
 * its rules; its stricter rules for the rest (a required sourceId, the grid's bounds, ...) are checked
 * by `validate --contract full` (manifests/contract-problems.ts).
 */

const openEnum = (known: readonly string[]) =>
  NonEmpty.meta({
    examples: [...known],
    description: `known values: ${known.join(", ")}; others are passed on`,
  });

/** `<field>:<value>`, the only filter form the minimal contract shows; "" filters nothing. */
const FIELD_VALUE = /^[^\s:]+:\S.*$/;
export const Where = z.string({ error: "must be a string" });

/** Series types that have no aggregate, in both contracts. */
const UNAGGREGATED = new Set(["search", "markdown"]);

const choice = (values: readonly [string, ...string[]]) =>
  z.enum(values, { error: `must be one of ${values.join(", ")}` });

export const Series = z
  .strictObject({
    type: openEnum(["time", "number", "table", "search", "markdown"]),
    /** The minimal contract's; the published platform ignores it. */
    dataSource: openEnum(["events"]).optional(),
    aggFn: openEnum([
      "count",
      "sum",
      "avg",
      "min",
      "max",
      "count_distinct",
      "quantile",
      "last_value",
      "any",
      "none",
      "increase",
    ]).optional(),
    where: Where.optional(),
    groupBy: z.array(Text).optional(),
    // The published contract's series fields, sent only when stated.
    sourceId: NonEmpty.optional().meta({
      description: "the id of one of the team's sources (GET /api/v2/sources)",
    }),
    whereLanguage: choice(["lucene", "sql", "promql"]).optional(),
    field: Text.optional(),
    alias: Text.optional(),
    level: z
      .number({ error: "must be a number from 0 to 1" })
      .min(0)
      .max(1, { error: "must be a number from 0 to 1" })
      .optional(),
    metricName: Text.optional(),
    metricDataType: choice(["gauge", "histogram", "sum", "summary", "exponential histogram"]).optional(),
    displayType: choice(["line", "stacked_bar"]).optional(),
    sortOrder: choice(["asc", "desc"]).optional(),
    numberFormat: z.record(z.string(), z.unknown(), { error: "must be a mapping" }).optional(),
    /** search: the columns shown. */
    fields: z.array(Text).optional(),
    /** markdown: the text. */
    content: Text.optional(),
  })
  .superRefine((series, ctx) => {
    // Run beside the series' other problems (EVEN_WITH_FIELD_PROBLEMS): its fields may be of any type.
    if (series.aggFn === undefined && typeof series.type === "string" && !UNAGGREGATED.has(series.type)) {
      ctx.addIssue({ code: "custom", path: ["aggFn"], message: `is required on a ${series.type} series` });
    }
    // With a query language stated, `where` is that language's; without one, the minimal contract's form.
    const { where } = series;
    if (
      typeof where === "string" &&
      where &&
      series.whereLanguage === undefined &&
      !FIELD_VALUE.test(where)
    ) {
      ctx.addIssue({
        code: "custom",
        path: ["where"],
        message: "must have the form <field>:<value>, like level:error",
      });
    }
  }, EVEN_WITH_FIELD_PROBLEMS);
export type Series = z.infer<typeof Series>;

// The grid's size is not shown; these bounds only catch typos (a stray extra digit), not layouts.
const GRID_MAX = 1000;

export const Tile = z.strictObject({
  /** Identity of the tile in this dashboard, never sent: driftless maps it to the server's tile id. */
  key: z.string().regex(/^[A-Za-z0-9]([-_.A-Za-z0-9]*[A-Za-z0-9])?$/, {
    error: "must be letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
  }),
  /** Adopt an existing tile: its id is kept instead of a new one being assigned. */
  id: NonEmpty.optional(),
  name: NonEmpty,
  x: Int(0, GRID_MAX),
  y: Int(0, GRID_MAX),
  w: Int(1, GRID_MAX),
  h: Int(1, GRID_MAX),
  asRatio: Bool.optional(),
  series: z.array(Series),
});
export type Tile = z.infer<typeof Tile>;

export const DashboardSpec = z
  .strictObject({
    /** The dashboard's id: adopts an existing dashboard. Absent: driftless creates the dashboard. */
    dashboardId: PathId.optional(),
    name: NonEmpty,
    tags: z.array(Text).optional(),
    tiles: uniqueIn(
      uniqueIn(
        z.array(Tile),
        stringField("key"),
        (key) => `tile key ${key} is used twice in this dashboard`,
        "key",
      ),
      stringField("id"),
      (id) => `tile id ${id} is adopted twice in this dashboard`,
      "id",
    ),
  })
  .superRefine((spec, ctx) => {
    if (spec.dashboardId !== undefined) return;
    // A tile id adopts a tile of an existing dashboard; a dashboard driftless creates has none yet.
    spec.tiles.forEach((tile, index) => {
      if (tile.id === undefined) return;
      ctx.addIssue({
        code: "custom",
        path: ["tiles", index, "id"],
        message:
          "adopts a tile of an existing dashboard: give the dashboard's dashboardId too, or leave the id out",
      });
    });
  });
export type DashboardSpec = z.infer<typeof DashboardSpec>;

export const Dashboard = manifestDocument("Dashboard", DashboardSpec);
export type Dashboard = z.infer<typeof Dashboard>;
