import { z } from "zod";
import { ManifestDocument } from "./manifest.js";

/**
 * The JSON Schema of one manifest document, generated from the zod schemas so it cannot drift from
 * what validate accepts. Draft 7, which yaml-language-server supports best. Checks that JSON Schema
 * cannot express (unique keys, references, "exactly one source") are left to `driftless validate`.
 */
export function manifestJsonSchema(): Record<string, unknown> {
  const schema = z.toJSONSchema(ManifestDocument, { target: "draft-7", io: "input", unrepresentable: "any" });
  return {
    ...schema,
    title: "driftless manifest",
    description: "One driftless/v1 manifest document. Validate a folder with `driftless validate`.",
  };
}
