import type { Io } from "./io.js";

export async function schemaCommand(_io: Io): Promise<number> {
  throw new Error("schema: placeholder until the manifest model lands");
}
