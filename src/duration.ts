import { z } from "zod";

/** Durations as people write them in manifests and settings: `90m`, `26h`, `2d` (units s, m, h, d). */

const UNIT_MS = { s: 1_000, m: 60_000, h: 3_600_000, d: 86_400_000 } as const;
const DURATION = /^([1-9][0-9]{0,8})(s|m|h|d)$/;

/** Milliseconds of a duration like `90m`, `26h`, `2d`; undefined when malformed. */
export function parseDuration(text: string): number | undefined {
  const match = DURATION.exec(text);
  if (!match) return undefined;
  return Number(match[1]) * UNIT_MS[match[2] as keyof typeof UNIT_MS];
}

export const Duration = z.string({ error: "must be a duration like 90m, 26h or 2d" }).regex(DURATION, {
  error: "must be a duration like 90m, 26h or 2d (a positive whole number and s, m, h or d)",
});
