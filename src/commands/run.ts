import type { Config } from "../config.js";
import type { Io } from "./io.js";

export async function runCommand(_config: Config, _io: Io): Promise<number> {
  throw new Error("run: placeholder until the daemon lands");
}
