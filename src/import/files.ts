import { access, mkdir, writeFile } from "node:fs/promises";
import { dirname, join } from "node:path";
import { stringify } from "yaml";
import { errnoOf } from "../errors.js";
import { API_VERSION } from "../manifests/fields.js";
import type { Kind } from "../manifests/manifest.js";
import { uniqueName } from "./names.js";

/**
 * The files `driftless import` writes: one manifest per file, `<folder of its kind>/<name>.yaml` under
 * the output folder, never over a file that exists (another name is taken, and the write itself is
 * exclusive, so a file made meanwhile is not overwritten either).
 */

/** One manifest to write: where (relative to the output folder), and its text. */
export type ManifestFile = { path: string; text: string };

/** A comment line as written: one line, control characters (from a platform's name) as spaces. */
// biome-ignore lint/suspicious/noControlCharactersInRegex: the control characters are what is replaced
const oneLine = (line: string) => line.replace(/[\u0000-\u001f\u007f\u2028\u2029]/g, " ");

/** A manifest's text: the comment lines, then the document. */
export function manifestText(kind: Kind, name: string, spec: object, comments: readonly string[]): string {
  const head = comments.map((line) => `# ${oneLine(line)}`.trimEnd()).join("\n");
  const body = stringify({ apiVersion: API_VERSION, kind, metadata: { name }, spec }, { lineWidth: 0 });
  return head ? `${head}\n${body}` : body;
}

/** Whether `path` exists (anything at all: a file, a folder, a broken link). */
async function exists(path: string): Promise<boolean> {
  try {
    await access(path);
    return true;
  } catch (error) {
    return errnoOf(error) !== "ENOENT";
  }
}

/**
 * A name for a manifest of `folder` in `root`: `base`, or the first `base-N` that neither `used` (the
 * kind's names already taken) nor a file in the folder has.
 */
export async function freeName(
  root: string,
  folder: string,
  base: string,
  used: Set<string>,
): Promise<string> {
  for (;;) {
    const name = uniqueName(base, used);
    used.add(name);
    if (!(await exists(join(root, folder, `${name}.yaml`)))) return name;
  }
}

/** Writes `file` under `root`, never over an existing file. Throws what the file system throws (EEXIST too). */
export async function writeNew(root: string, file: ManifestFile): Promise<void> {
  const path = join(root, file.path);
  await mkdir(dirname(path), { recursive: true });
  await writeFile(path, file.text, { flag: "wx" });
}
