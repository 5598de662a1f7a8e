/**
 * What a command may touch of its process: output streams and the environment. Only cli.ts builds it
 * from the real process; tests build their own.
 */
export type Io = {
  out(text: string): void;
  err(text: string): void;
  env: Readonly<Record<string, string | undefined>>;
};

export type OutputFormat = "text" | "json";
