import { describe, expect, it } from "vitest";
import { isStateError } from "../../src/errors.js";
import {
  applyLine,
  journalLine,
  readLine,
  replayJournal,
  tailAction,
  wholeLines,
} from "../../src/state/journal.js";
import { knownRecords, newState, topLevelText } from "../../src/state/state-format.js";
import type { ResourceRecord, State } from "../../src/state/store.js";

/** The file store's journal: its line format, and how a load reads the damage a crash can leave. */

const record = (name: string, serverId?: string): ResourceRecord => ({
  kind: "ReversePrivateEndpoint",
  name,
  ...(serverId ? { serverId } : {}),
});
const state = (resources: State["resources"] = {}): State => ({ version: 1, salt: "s", resources });
const texts = (s: State) => ({ records: knownRecords(s), top: topLevelText(s) });

const SET_A = `{"set":{"E/a":${JSON.stringify(record("a", "id-a"))}}}`;
const SET_B = `{"set":{"E/b":${JSON.stringify(record("b", "id-b"))}}}`;

describe("a journal line", () => {
  it("rule: a save's line holds only what changed: records set, ids deleted, top-level fields replaced", () => {
    const before = state({ "E/a": record("a"), "E/b": record("b") });
    const after = { ...state({ "E/a": record("a", "id-a") }), suspended: { since: "2026-01-02T00:00:00Z" } };

    const line = journalLine(texts(before), texts(after));

    expect(JSON.parse(line)).toEqual({
      set: { "E/a": record("a", "id-a") },
      delete: ["E/b"],
      top: { version: 1, salt: "s", suspended: { since: "2026-01-02T00:00:00Z" } },
    });
    expect(line.endsWith("}\n")).toBe(true);
  });

  it("rule: a save that changed nothing has no line", () => {
    const same = state({ "E/a": record("a") });

    expect(journalLine(texts(same), texts(structuredClone(same)))).toBe("");
  });

  it("rule: a line holds whole values, so applying it twice changes nothing", () => {
    const before = state({ "E/a": record("a"), "E/b": record("b") });
    const after = state({ "E/a": record("a", "id-a") });
    const { line } = readLine(journalLine(texts(before), texts(after)).trimEnd(), "journal line 1");
    const once = structuredClone(before);
    applyLine(once, line);

    const twice = structuredClone(once);
    applyLine(twice, line);

    expect(once).toEqual(after);
    expect(twice).toEqual(after);
  });
});

describe("the tail of a journal", () => {
  it("rule: only lines ending in a newline are whole; what follows the last one is a torn save that never was", () => {
    const text = `${SET_A}\n${SET_B.slice(0, 20)}`;

    const found = wholeLines(text);

    expect(found.lines).toEqual([{ number: 1, text: SET_A }]);
    expect(found.torn).toBe(true);
    expect(found.bytes).toBe(Buffer.byteLength(`${SET_A}\n`));
  });

  it("rule: whole lines are counted in bytes, not characters (what a torn tail is cut back to)", () => {
    const line = `{"set":{"E/ü":${JSON.stringify(record("ü"))}}}\n`;

    expect(wholeLines(line).bytes).toBe(Buffer.byteLength(line));
    expect(wholeLines(line).bytes).toBeGreaterThan(line.length);
  });

  it("rule: empty lines are skipped, and lines keep their numbers in the file", () => {
    expect(wholeLines(`\n${SET_A}\n\n${SET_B}\n`).lines.map((l) => l.number)).toEqual([2, 4]);
  });

  it("rule: the next append needs the journal as long as the whole lines this process knows", () => {
    expect(tailAction(120, 120)).toBe("append");
  });

  it("rule: a journal longer than that ends in a torn line, cut off before anything is appended", () => {
    expect(tailAction(150, 120)).toBe("cut");
  });

  it("rule: a journal shorter than that was cut by someone else: the whole state is saved instead", () => {
    expect(tailAction(80, 120)).toBe("rewrite");
  });
});

describe("a torn save followed by a whole one on the same line (what an earlier driftless appended)", () => {
  it("rule: the whole save that ends the line counts; the torn one does not", () => {
    const read = readLine(`${SET_B.slice(0, 30)}${SET_A}`, "journal line 3");

    expect(read).toEqual({ line: { set: { "E/a": record("a", "id-a") } }, repaired: true });
  });

  it("rule: a torn prefix that happens to contain a save's start is passed over: the first point where the rest parses counts", () => {
    // Cut inside a record whose owned list is named like a save's part: `{"top":` starts in it.
    const torn = `{"set":{"E/b":{"kind":"x","name":"b","owned":{"top":["`;

    const read = readLine(`${torn}${SET_A}`, "journal line 1");

    expect(read.repaired).toBe(true);
    expect(read.line.set).toEqual({ "E/a": record("a", "id-a") });
  });

  it("rule: a whole line that is neither a save nor a torn one followed by a save is refused, naming the file and line, advising against moving the state aside", () => {
    const error = (() => {
      try {
        readLine(`${SET_A.slice(0, 30)}garbage`, "/state/state.journal line 7");
      } catch (thrown) {
        return thrown;
      }
    })();

    expect(isStateError(error)).toBe(true);
    expect((error as Error).message).toMatch(/^\/state\/state\.journal line 7 is corrupt \(not valid JSON: /);
    expect((error as Error).message).toContain("Do not move the state aside");
  });

  it("rule: JSON that is not a save is refused, naming the field", () => {
    expect(() => readLine(`{"set":{"E/a":{"name":"a"}}}`, "journal line 2")).toThrow(
      /journal line 2 is not a driftless state.*kind/s,
    );
    expect(() => readLine(`{"unknown":1}`, "journal line 2")).toThrow(
      /journal line 2 is not a driftless state/,
    );
  });
});

describe("replaying a journal", () => {
  it("rule: the whole lines are applied in order over the snapshot, and the repaired ones are named", () => {
    const snapshot = state({ "E/b": record("b") });
    const text = `${SET_A}\n${SET_B.slice(0, 10)}{"delete":["E/b"]}\n${SET_B.slice(0, 5)}`;

    const replayed = replayJournal(snapshot, text, "j");

    expect(snapshot.resources).toEqual({ "E/a": record("a", "id-a") });
    expect(replayed).toEqual({ bytes: Buffer.byteLength(text) - 5, torn: true, repaired: [2] });
  });

  it("rule: an empty journal changes nothing", () => {
    const snapshot = state({ "E/b": record("b") });

    expect(replayJournal(snapshot, "", "j")).toEqual({ bytes: 0, torn: false, repaired: [] });
    expect(snapshot).toEqual(state({ "E/b": record("b") }));
  });
});

describe("a journal over a new state", () => {
  it("rule: a top-level line replaces every top-level field, keeping the records", () => {
    const s = { ...newState(), suspended: { since: "x" } };
    s.resources["E/a"] = record("a");

    applyLine(s, { top: { version: 1, salt: "new" } });

    expect(s).toEqual({ version: 1, salt: "new", resources: { "E/a": record("a") } });
  });
});
