import { readdir, readFile } from "node:fs/promises";
import { dirname, join, relative, resolve } from "node:path";
import { describe, expect, it } from "vitest";

/**
 * The rooms around the state store import one way only: leader/ may use state/ (it guards the store),
 * both may use kubernetes/ (the API client), and neither state/ nor kubernetes/ reaches back. A cycle
 * here once made the Kubernetes client helper live in leader/ and the Secret store import it from there.
 */

const SRC = resolve("src");
type Room = "state" | "leader" | "kubernetes";

/** Every room that the files of `room` import (static imports, `export … from` and dynamic `import()`). */
async function importsOf(room: Room): Promise<Set<string>> {
  const folder = join(SRC, room);
  const found = new Set<string>();
  for (const file of (await readdir(folder)).filter((name) => name.endsWith(".ts"))) {
    const text = await readFile(join(folder, file), "utf8");
    for (const [, target = ""] of text.matchAll(/(?:from|import)\s*\(?\s*"(\.{1,2}\/[^"]+)"/g)) {
      const [top] = relative(SRC, resolve(dirname(join(folder, file)), target)).split("/");
      if (top && top !== room && !top.endsWith(".js")) found.add(top);
    }
  }
  return found;
}

describe("imports between state/, leader/ and kubernetes/", () => {
  it("go one way: leader → state → kubernetes, never back", async () => {
    const [state, leader, kubernetes] = await Promise.all([
      importsOf("state"),
      importsOf("leader"),
      importsOf("kubernetes"),
    ]);

    expect([...state].filter((room) => room === "leader")).toEqual([]);
    expect([...kubernetes].filter((room) => room === "state" || room === "leader")).toEqual([]);
    expect(leader.has("state")).toBe(true);
    expect(state.has("kubernetes")).toBe(true);
  });
});
