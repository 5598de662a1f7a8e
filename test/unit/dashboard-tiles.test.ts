import { describe, expect, it } from "vitest";
import { dashboard } from "../../src/kinds/dashboard.js";
import type { PlanInput } from "../../src/kinds/kind.js";
import type { Tile } from "../../src/manifests/specs/dashboard.js";
import type { ResourcePlan } from "../../src/plan/types.js";
import { DashboardAnswer } from "../../src/platform/observability.js";
import type { ResourceRecord } from "../../src/state/store.js";

/**
 * Tile-id matching of dashboards, through the planner with hand-built inputs: a PUT replaces the whole
 * dashboard, so each tile must be sent with the id it already has, or the platform gives it a new one
 * and deletes the alerts watching the old.
 */

const context: PlanInput["context"] = {
  reassert: false,
  now: new Date("2026-01-01T00:00:00Z"),
  ref: () => ({ state: "missing", reason: "none" }),
};

const input = (tiles: Tile[], record?: ResourceRecord): PlanInput<"Dashboard"> => ({
  kind: "Dashboard",
  name: "ops",
  spec: { dashboardId: "d1", name: "Ops", tiles },
  record,
  context,
});

/** The one series of a tile whose query is `query`. */
const series = (query: string) => [
  { type: "time", dataSource: "events", aggFn: "count", where: `q:${query}` },
];

/** A manifest tile: its name is its key in capitals and its query `q-<key>` unless `extra` says. */
const tile = (key: string, extra: { name?: string; query?: string; id?: string } = {}): Tile => ({
  key,
  ...(extra.id ? { id: extra.id } : {}),
  name: extra.name ?? key.toUpperCase(),
  x: 0,
  y: 0,
  w: 6,
  h: 3,
  series: series(extra.query ?? `q-${key}`),
});

/** A tile as it is sent (and answered): no key, the id when there is one. */
const wire = (name: string, query: string, id?: string) => ({
  ...(id ? { id } : {}),
  name,
  x: 0,
  y: 0,
  w: 6,
  h: 3,
  series: series(query),
});

/** The tiles a plan sends. */
const sent = (plan: ResourcePlan) => {
  const request = plan.write?.request;
  return request?.route === "putDashboard" ? request.body.tiles : [];
};

/** The record after a PUT of `tiles` answered with `answer` tiles. */
function applied(tiles: Tile[], answer: Array<Record<string, unknown>>, record?: ResourceRecord) {
  const plan = dashboard.update.plan(input(tiles, record));
  if (!plan.write) throw new Error(`nothing to send: ${plan.reason}`);
  return plan.write.record(DashboardAnswer.parse({ id: "d1", tiles: answer }), "2026-01-01T00:00:00Z");
}

describe("tile ids sent", () => {
  it("rule: the tile key is driftless's own and never sent", () => {
    const plan = dashboard.update.plan(input([tile("lag")]));

    expect(sent(plan)).toEqual([wire("LAG", "q-lag")]);
  });

  it("rule: a tile whose id the state knows (by key) is sent with it", () => {
    const record = applied([tile("lag")], [wire("LAG", "q-lag", "t-1")]);

    const plan = dashboard.update.plan(input([tile("lag", { query: "q2" })], record));

    expect(sent(plan)).toEqual([wire("LAG", "q2", "t-1")]);
  });

  it("rule: a tile id given in the manifest adopts that tile", () => {
    const plan = dashboard.update.plan(input([tile("lag", { id: "t-9" })]));

    expect(sent(plan)).toEqual([wire("LAG", "q-lag", "t-9")]);
  });

  it("rule: an adopted id the platform replaced is not sent again; the platform's id is", () => {
    const adopting = [tile("lag", { id: "t-stale" })];
    const record = applied(adopting, [wire("LAG", "q-lag", "t-new")]);

    const plan = dashboard.update.plan(input([tile("lag", { id: "t-stale", query: "q2" })], record));

    expect(sent(plan)[0]?.id).toBe("t-new");
  });

  it("rule: a renamed key keeps the id of the key that left, when its fields are the same", () => {
    const record = applied([tile("lag")], [wire("LAG", "q-lag", "t-1")]);

    const plan = dashboard.update.plan(input([tile("ingest-lag", { name: "LAG", query: "q-lag" })], record));

    expect(sent(plan)).toEqual([wire("LAG", "q-lag", "t-1")]);
    expect(plan.changes).toContainEqual({
      path: "tiles[ingest-lag].key",
      from: "lag",
      to: "ingest-lag",
      op: "set",
    });
  });

  it("rule: failing equal fields, a renamed key keeps the id of the key that left with the same name", () => {
    const record = applied([tile("lag")], [wire("LAG", "q-lag", "t-1")]);

    const plan = dashboard.update.plan(
      input([tile("ingest-lag", { name: "LAG", query: "q-changed" })], record),
    );

    expect(sent(plan)[0]?.id).toBe("t-1");
  });

  it("rule: a new tile is sent without an id, and the plan says the platform assigns one", () => {
    const record = applied([tile("lag")], [wire("LAG", "q-lag", "t-1")]);

    const plan = dashboard.update.plan(input([tile("lag"), tile("cpu")], record));

    expect(sent(plan)).toEqual([wire("LAG", "q-lag", "t-1"), wire("CPU", "q-cpu")]);
    expect(plan.changes).toContainEqual({
      path: "tiles[cpu]",
      op: "add",
      to: "(new tile: the platform assigns its id)",
    });
  });

  it("rule: a tile that left the manifest is reported as removed with its alerts", () => {
    const record = applied(
      [tile("lag"), tile("cpu")],
      [
        { id: "t-1", name: "LAG" },
        { id: "t-2", name: "CPU" },
      ],
    );

    const plan = dashboard.update.plan(input([tile("lag")], record));

    expect(plan.changes).toContainEqual({
      path: "tiles[cpu]",
      op: "remove",
      from: "(tile t-2: alerts watching it are deleted)",
    });
  });

  it("rule: every id known and nothing changed is in sync: no PUT", () => {
    const record = applied([tile("lag")], [wire("LAG", "q-lag", "t-1")]);

    const plan = dashboard.update.plan(input([tile("lag")], record));

    expect(plan.outcome).toBe("none");
  });
});

describe("tile ids learned from the answer", () => {
  it("rule: new tiles take the answer's ids by position when the answer keeps the order", () => {
    const record = applied(
      [tile("a"), tile("b")],
      [
        { id: "t-a", name: "whatever" },
        { id: "t-b", name: "else" },
      ],
    );

    expect(record.tileIds).toEqual({ a: "t-a", b: "t-b" });
  });

  it("rule: when the answer's tiles differ in number, new tiles are matched by name", () => {
    const record = applied(
      [tile("a"), tile("b")],
      [
        { id: "t-b", name: "B" },
        { id: "t-x", name: "X" },
        { id: "t-a", name: "A" },
      ],
    );

    expect(record.tileIds).toEqual({ a: "t-a", b: "t-b" });
  });

  it("rule: a sent id the answer keeps stays the tile's, whatever the answer's order", () => {
    const first = applied(
      [tile("a"), tile("b")],
      [
        { id: "t-a", name: "A" },
        { id: "t-b", name: "B" },
      ],
    );

    // A changed query is sent, with both known ids; the answer lists the tiles the other way round.
    const record = applied(
      [tile("a", { query: "new" }), tile("b")],
      [
        { id: "t-b", name: "B" },
        { id: "t-a", name: "A" },
      ],
      first,
    );

    expect(record.tileIds).toEqual({ a: "t-a", b: "t-b" });
  });

  it("rule: an answer without tiles changes no id", () => {
    const first = applied([tile("a")], [{ id: "t-a", name: "A" }]);

    const record = applied([tile("a", { query: "new" })], [], first);

    expect(record.tileIds).toEqual({ a: "t-a" });
  });
});
