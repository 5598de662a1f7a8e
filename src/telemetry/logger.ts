import pino, { type DestinationStream, type Logger } from "pino";

export type { Logger };

/**
 * Paths that may hold a credential anywhere in a log object. The code never logs secrets on purpose;
 * this is the second line of defence.
 */
const REDACT = [
  "authorization",
  "password",
  "secretKey",
  "accessKeyId",
  "connectionString",
  "token",
  "keySecret",
  "*.authorization",
  "*.Authorization",
  "*.password",
  "*.secretKey",
  "*.accessKeyId",
  "*.connectionString",
  "*.token",
  "*.keySecret",
  "headers.authorization",
  "*.headers.authorization",
  "*.*.password",
  "*.*.secretKey",
  "*.*.accessKeyId",
  "*.*.connectionString",
  "*.*.*.password",
  "*.*.*.secretKey",
  "*.*.*.accessKeyId",
  "*.*.*.connectionString",
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
