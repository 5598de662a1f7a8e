import pino, { type DestinationStream, type Logger } from "pino";
import { CREDENTIAL_FIELDS } from "../credentials.js";

export type { Logger };

/** Fields that may hold a credential: the manifests' credential fields and the daemon's own. */
const SENSITIVE = [...CREDENTIAL_FIELDS, "authorization", "token", "keySecret"];

/**
 * Paths that may hold a credential anywhere in a log object, up to three levels deep. The code never
 * logs secrets on purpose; this is the second line of defence.
 */
const REDACT = [
  ...["", "*.", "*.*.", "*.*.*."].flatMap((depth) => SENSITIVE.map((field) => `${depth}${field}`)),
  "*.Authorization",
  "headers.authorization",
  "*.headers.authorization",
];

/** A JSON logger at `level` (default `info`), writing to `destination` (default stderr). */
export function createLogger(level = "info", destination?: DestinationStream): Logger {
  return pino(
    {
      level,
      base: { app: "driftless" },
      redact: { paths: REDACT, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    destination ?? pino.destination(2),
  );
}
