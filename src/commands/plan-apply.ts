import type { Config } from "../config.js";
import type { Io, OutputFormat } from "./io.js";

export async function planCommand(
  _config: Config,
  _options: { output: OutputFormat },
  _io: Io,
): Promise<number> {
  throw new Error("plan: placeholder until the engine lands");
}

export async function applyCommand(
  _config: Config,
  _options: { output: OutputFormat },
  _io: Io,
): Promise<number> {
  throw new Error("apply: placeholder until the engine lands");
}
