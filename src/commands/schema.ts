import { manifestJsonSchema } from "../manifests/json-schema.js";
import type { Io } from "./io.js";

/** `driftless schema`: the manifests' JSON Schema on stdout, for yaml-language-server. Returns 0. */
export async function schemaCommand(io: Io): Promise<number> {
  io.out(`${JSON.stringify(manifestJsonSchema(), null, 2)}\n`);
  return 0;
}
