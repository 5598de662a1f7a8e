import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { DRIFTLESS_ANNOTATIONS, unknownAnnotation } from "../src/manifests/fields.js";
import { repo } from "./helpers/cli.js";

/**
 * The annotations section of docs/manifests.md against the code: every annotation driftless reads has
 * its row (and no row is left of one it no longer reads), and the error quoted for a typo is the one
 * validate prints.
 */

function section(): string {
  const page = readFileSync(join(repo, "docs/manifests.md"), "utf8");
  const start = page.indexOf("\n### Annotations\n");
  expect(start, "docs/manifests.md has a '### Annotations' section").toBeGreaterThan(-1);
  const end = page.indexOf("\n#", start + 1);
  return page.slice(start, end === -1 ? undefined : end);
}

describe("the annotations of docs/manifests.md", () => {
  it("has a row for each annotation driftless reads, and only those", () => {
    const rows = [...section().matchAll(/^\| `(driftless\/[^`]+)` \|/gm)].map((match) => match[1]);

    expect(rows.sort()).toEqual(Object.values(DRIFTLESS_ANNOTATIONS).sort());
  });

  it("quotes the error validate gives for a misspelt one", () => {
    const quoted = /`(driftless\/[^`]+)` gets `([^`]+)`/.exec(section().replace(/\s*\n\s*/g, " "));

    expect(quoted, "a quoted example: `driftless/KEY` gets `MESSAGE`").not.toBeNull();
    expect(quoted?.[2]).toBe(unknownAnnotation(quoted?.[1] ?? ""));
  });
});
