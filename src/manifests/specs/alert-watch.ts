import { z } from "zod";
import { EVEN_WITH_FIELD_PROBLEMS, ManifestName, manifestDocument, NonEmpty, PathId } from "../fields.js";

/**
 * GET /api/v2/alerts/{alertId}, polled and exported as metrics. `dashboard` (a Dashboard manifest's
 * name) and `tile` (a tile key in it) are checked against that dashboard, so a watch breaks loudly
 * when the tile it relies on is renamed away.
 */
export const AlertWatchSpec = z
  .strictObject({
    alertId: PathId,
    dashboard: ManifestName.optional(),
    tile: NonEmpty.optional(),
  })
  .superRefine((spec, ctx) => {
    if (spec.tile !== undefined && spec.dashboard === undefined) {
      ctx.addIssue({
        code: "custom",
        path: ["tile"],
        message: "needs dashboard: a tile key is only unique in its dashboard",
      });
    }
  }, EVEN_WITH_FIELD_PROBLEMS);
export type AlertWatchSpec = z.infer<typeof AlertWatchSpec>;

export const AlertWatch = manifestDocument("AlertWatch", AlertWatchSpec);
export type AlertWatch = z.infer<typeof AlertWatch>;
