import type { Config } from "../config.js";
import type { Io, OutputFormat } from "./io.js";

export async function validateCommand(
  _config: Config,
  _options: { output: OutputFormat; resolveSecrets: boolean },
  _io: Io,
): Promise<number> {
  throw new Error("validate: placeholder until the manifest model lands");
}
