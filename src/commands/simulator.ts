import type { Io } from "./io.js";

export async function simulatorCommand(_flags: Record<string, unknown>, _io: Io): Promise<number> {
  throw new Error("simulator: placeholder until the simulator lands");
}
