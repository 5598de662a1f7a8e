import { Cron } from "croner";
import { ConfigError, messageOf } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";

export type Schedule = {
  name: string;
  /** A cron expression (5 fields, or 6 with seconds first), or "off". */
  pattern: string;
  run: () => Promise<void> | void;
};

export type Schedules = { stop(): void };

/** True when a schedule setting turns its job off. */
export const isOff = (pattern: string) =>
  ["off", "never", "false", ""].includes(pattern.trim().toLowerCase());

/**
 * The time between two runs of `pattern` from `from` (croner's next two runs), or undefined when the
 * schedule is off or invalid.
 */
export function periodOf(pattern: string, from = new Date()): number | undefined {
  if (isOff(pattern)) return undefined;
  try {
    const [first, second] = new Cron(pattern, { paused: true }).nextRuns(2, from);
    return first && second ? second.getTime() - first.getTime() : undefined;
  } catch {
    return undefined;
  }
}

/**
 * Starts each schedule with croner. A run never overlaps the previous run of the same schedule (croner's
 * `protect`): a slow poll makes the next tick skip, not pile up. Throws ConfigError for an invalid
 * expression, naming the setting.
 */
export function startSchedules(schedules: readonly Schedule[], logger: Logger): Schedules {
  const jobs: Cron[] = [];
  for (const schedule of schedules) {
    if (isOff(schedule.pattern)) {
      logger.info({ schedule: schedule.name }, "schedule off");
      continue;
    }
    try {
      jobs.push(
        new Cron(
          schedule.pattern,
          {
            protect: () => logger.debug({ schedule: schedule.name }, "previous run still busy, tick skipped"),
            catch: (error) => logger.error({ err: error, schedule: schedule.name }, "scheduled run failed"),
          },
          schedule.run,
        ),
      );
    } catch (error) {
      for (const job of jobs) job.stop();
      throw new ConfigError(`invalid ${schedule.name} schedule "${schedule.pattern}": ${messageOf(error)}`, {
        cause: error,
      });
    }
  }
  return {
    stop: () => {
      for (const job of jobs) job.stop();
    },
  };
}
