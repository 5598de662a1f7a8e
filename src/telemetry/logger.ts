import { createRequire } from "node:module";
import type { DestinationStream, Logger } from "pino";
import pino from "pino";
import type PinoPretty from "pino-pretty";
import { CREDENTIAL_FIELDS } from "../credentials.js";

export type { Logger };

/** json: one JSON object a line, for a log collector; pretty: one readable line, for a person. */
export const LOG_FORMATS = ["json", "pretty"] as const;
export type LogFormat = (typeof LOG_FORMATS)[number];

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

/**
 * A logger at `level` (default `info`), writing to `destination` (default stderr) as JSON lines or,
 * with `format` "pretty", as readable lines. Redaction happens before either format sees a line.
 */
export function createLogger(
  level = "info",
  destination?: DestinationStream,
  format: LogFormat = "json",
): Logger {
  return pino(
    {
      level,
      base: { app: "driftless" },
      redact: { paths: REDACT, censor: "[redacted]" },
      timestamp: pino.stdTimeFunctions.isoTime,
    },
    format === "pretty" ? prettyStream(destination) : (destination ?? pino.destination(2)),
  );
}

/**
 * pino's own pretty printer as a stream in this process (not a worker transport): synchronous, so a
 * CLI that exits at once loses no line, and nothing to start or stop. Colours only on the real stderr
 * (pino-pretty asks the terminal); a given destination (a test's) gets plain text.
 */
function prettyStream(destination: DestinationStream | undefined): DestinationStream {
  // Loaded only when used: its import costs about 100 ms, which every JSON run and validate would pay.
  const pretty = createRequire(import.meta.url)("pino-pretty") as typeof PinoPretty;
  return pretty({
    destination: destination ?? 2,
    sync: true,
    ...(destination ? { colorize: false } : {}),
    translateTime: "SYS:HH:MM:ss.l",
    ignore: "pid,hostname,app",
    singleLine: true,
  });
}
