import { createLogger, type LogFormat, type Logger } from "../telemetry/logger.js";

/**
 * What a command may touch of its process: output streams and the environment. Only cli.ts builds it
 * from the real process; tests build their own.
 */
export type Io = {
  out(text: string): void;
  err(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
  /** Is stderr, where logs go, a terminal? Then logs are pretty unless a format is set. Default false. */
  errIsTerminal?: boolean;
  /**
   * Rewrites one progress line on stderr, undefined clears it; absent when stderr is not a terminal
   * (nothing extra is printed then).
   */
  progress?(line: string | undefined): void;
};

export type OutputFormat = "text" | "json";

/**
 * The logger of a command: at the level set, else `level`; in the format set, else pretty on a
 * terminal and JSON otherwise.
 */
export function commandLogger(
  settings: { logLevel?: string | undefined; logFormat?: LogFormat | undefined },
  io: Io,
  level: "info" | "warn",
): Logger {
  return createLogger(settings.logLevel ?? level, undefined, logFormatOf(settings.logFormat, io));
}

/** The format set, else pretty when stderr is a terminal (a person reads it) and JSON otherwise. */
export function logFormatOf(setting: LogFormat | undefined, io: Pick<Io, "errIsTerminal">): LogFormat {
  return setting ?? (io.errIsTerminal ? "pretty" : "json");
}
