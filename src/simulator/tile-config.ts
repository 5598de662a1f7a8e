import { configOfSeries } from "../platform/tile-config.js";
import type { Tile } from "./model.js";

/**
 * How the published observability API answers a tile: in `config` form, whatever form it was sent in
 * (the translation is platform/tile-config.ts, shared with the reads that compare tiles). The minimal
 * contract answers tiles as they were sent.
 */

/** A stored tile as the published contract answers it: its place, name and config, never series. */
export function tileAnswer(tile: Tile): Record<string, unknown> {
  const { series, config, asRatio, ...place } = tile;
  return { ...place, config: config ?? configOfSeries(series ?? [], asRatio) };
}

/** The display types whose tiles may carry alerts; an alert on any other tile is refused, or deleted. */
const ALERTABLE = new Set(["line", "stacked_bar", "number"]);

/** Whether a stored tile may carry alerts: by its display type, in whichever form it is stored. */
export function alertable(tile: Tile): boolean {
  const config = tile.config ?? configOfSeries(tile.series ?? [], tile.asRatio);
  return ALERTABLE.has(String(config.displayType));
}
