import { z } from "zod";
import { Bool, Int, manifestDocument, NonEmpty, PathId, refineUnique, Text } from "../fields.js";

/**
 * PUT /api/v2/dashboards/{id}. The API names some values that "occur" for series fields and says
 * nothing of the others, so any non-empty string is accepted; the known ones are suggested to editors.
 */

const openEnum = (known: readonly string[]) =>
  NonEmpty.meta({
    examples: [...known],
    description: `known values: ${known.join(", ")}; others are passed on`,
  });

/** `<field>:<value>`, the only filter form the API shows. */
export const Where = z
  .string({ error: "must be a string" })
  .regex(/^[^\s:]+:\S.*$/, { error: "must have the form <field>:<value>, like level:error" });

export const Series = z.strictObject({
  type: openEnum(["time", "number"]),
  dataSource: openEnum(["events"]),
  aggFn: openEnum(["count"]),
  where: Where.optional(),
  groupBy: z.array(Text).optional(),
});
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

export const DashboardSpec = z.strictObject({
  dashboardId: PathId,
  name: NonEmpty,
  tags: z.array(Text).optional(),
  tiles: z.array(Tile).superRefine((tiles, ctx) => {
    refineUnique(
      tiles,
      (t) => t.key,
      ctx,
      (key) => `tile key ${key} is used twice in this dashboard`,
      "key",
    );
    refineUnique(
      tiles,
      (t) => t.id,
      ctx,
      (id) => `tile id ${id} is adopted twice in this dashboard`,
      "id",
    );
  }),
});
export type DashboardSpec = z.infer<typeof DashboardSpec>;

export const Dashboard = manifestDocument("Dashboard", DashboardSpec);
export type Dashboard = z.infer<typeof Dashboard>;
