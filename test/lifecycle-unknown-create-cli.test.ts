import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import type { Api } from "../src/errors.js";
import { defaultIds as ids } from "../src/simulator/index.js";
import {
  createdBoard,
  createdKey,
  createdPipe,
  ROUTE,
  statusOf,
  useLifecycleCli,
} from "./helpers/lifecycle-cli.js";

/**
 * A create whose answer is lost (the simulator does the work and drops the connection) is never sent
 * blindly again: Unknown until the published list (reads on) finds the object it made, or until an
 * operator allows one new attempt with --allow-create; an allowance for a resource that is not Unknown
 * changes nothing. For keys, pipes and dashboards, through the built CLI.
 */

const cli = useLifecycleCli();
const READS = { DRIFTLESS_READS: "on" };

type Case = {
  kind: string;
  api: Api;
  route: string;
  /** The manifest of the object created, or of the same object `changed` (one field). */
  manifest: (changed?: boolean) => string;
  /** The live objects of the case's name. */
  live: () => { id: string }[];
  /** Where a change of the created object goes. */
  update: { method: string; route: string };
};

const CASES: Case[] = [
  {
    kind: "ApiKey",
    api: "management",
    route: ROUTE.keys,
    manifest: (changed) =>
      createdKey("created").replace("[developer]", changed ? "[developer, query_endpoints]" : "[developer]"),
    live: () => cli.sim.state.keys.filter((k) => k.name === "created"),
    update: { method: "PATCH", route: ROUTE.key },
  },
  {
    kind: "DataPipe",
    api: "management",
    route: ROUTE.pipes,
    manifest: (changed) =>
      createdPipe("created", {
        spec: `  settings: { streaming_max_insert_wait_ms: ${changed ? 5000 : 1000} }\n`,
      }),
    live: () => cli.sim.state.pipes.filter((p) => p.name === "created"),
    update: { method: "PATCH", route: ROUTE.pipe },
  },
  {
    kind: "Dashboard",
    api: "observability",
    route: ROUTE.dashboards,
    manifest: (changed) =>
      createdBoard("created").replace("  tiles:", changed ? "  tags: [changed]\n  tiles:" : "  tiles:"),
    live: () => cli.sim.state.dashboards.filter((d) => d.name === "created"),
    update: { method: "PUT", route: ROUTE.dashboard },
  },
];

/** Applies the case's manifest with its create's answer lost; `applied`: the platform did the work. */
async function lostCreate(c: Case, applied = true) {
  await cli.write("created.yaml", c.manifest());
  cli.sim.inject({ api: c.api, method: "POST", route: c.route, kind: "drop", applied });
  return cli.apply();
}

describe.each(CASES)("a $kind whose create's answer is lost", (c) => {
  const id = `${c.kind}/created`;

  it("is Unknown, and is never created again by a later apply", async () => {
    const lost = await lostCreate(c);
    const again = await cli.apply();

    expect(lost.code).toBe(1);
    expect(statusOf(lost, id)).toMatchObject({ status: "Unknown", next: "operator" });
    expect(statusOf(lost, id)?.message).toContain(`driftless apply --allow-create ${id}`);
    expect(again.code).toBe(1);
    expect(statusOf(again, id)).toMatchObject({ status: "Unknown" });
    expect(cli.sent("POST", c.route)).toHaveLength(1);
    expect(c.live()).toHaveLength(1);
  });

  it("is settled by the published list with reads on: the id learned, nothing created twice", async () => {
    await lostCreate(c);

    const settled = await cli.apply([], READS);

    expect(settled.code, settled.stdout).toBe(0);
    expect(statusOf(settled, id)).toMatchObject({ status: "Synced" });
    expect(cli.sent("POST", c.route)).toHaveLength(1);
    expect(c.live()).toHaveLength(1);

    await cli.write("created.yaml", c.manifest(true));
    const changed = await cli.apply();

    expect(changed.code, changed.stdout).toBe(0);
    expect(
      cli.sent(c.update.method, c.update.route).map((r) => r.path.endsWith(String(c.live()[0]?.id))),
    ).toEqual([true]);
  });

  it("is created once more with --allow-create when the lost create made nothing: one new POST", async () => {
    await lostCreate(c, false);

    const allowed = await cli.apply(["--allow-create", id]);
    const again = await cli.apply(["--allow-create", id]);

    expect(allowed.code, allowed.stdout).toBe(0);
    expect(statusOf(allowed, id)).toMatchObject({ status: "Synced" });
    expect(again.code).toBe(0);
    expect(cli.sent("POST", c.route)).toHaveLength(2);
    expect(c.live()).toHaveLength(1);
  });
});

describe("--allow-create of a key", () => {
  const id = "ApiKey/created";
  const key = CASES[0] as Case;
  const pairWorks = async () => {
    const pair = JSON.parse(await readFile(join(cli.root, "key-secrets", "created"), "utf8"));
    const authorization = `Basic ${Buffer.from(`${pair.keyId}:${pair.keySecret}`).toString("base64")}`;
    const answer = await fetch(`${cli.sim.managementUrl}/v1/organizations/${ids.organizationId}/keys`, {
      headers: { authorization },
    });
    return answer.status;
  };

  it("buys exactly one attempt: an attempt whose answer is lost again waits for the allowance to be given anew", async () => {
    await lostCreate(key, false);
    cli.sim.inject({ api: "management", method: "POST", route: ROUTE.keys, kind: "drop" });
    const allow = ["--allow-create", id];

    const lostAgain = await cli.apply(allow);
    const spent = await cli.apply(allow);

    expect(statusOf(lostAgain, id)).toMatchObject({ status: "Unknown" });
    expect(statusOf(spent, id)?.message).toContain("allowance to create it again was already used");
    expect(cli.sent("POST", ROUTE.keys)).toHaveLength(2);

    const rearmed = await cli.apply();
    const allowed = await cli.apply(allow);

    expect(statusOf(rearmed, id)).toMatchObject({ status: "Unknown" });
    expect(allowed.code, allowed.stdout).toBe(0);
    expect(cli.sent("POST", ROUTE.keys)).toHaveLength(3);
    expect(key.live()).toHaveLength(1);
    expect(await pairWorks()).toBe(200);
  });

  it("sends the pair its secret target holds again: when the lost create did make the key, no second key is made", async () => {
    await lostCreate(key);

    const allowed = await cli.apply(["--allow-create", id]);

    expect(allowed.code).toBe(1);
    expect(cli.sent("POST", ROUTE.keys).map((r) => r.status)).toHaveLength(2);
    expect(cli.sent("POST", ROUTE.keys)[1]?.status).toBe(400);
    expect(key.live()).toHaveLength(1);
    expect(await pairWorks()).toBe(200);
  });
});

describe("--allow-create of a resource that is not Unknown", () => {
  it("changes nothing: a Synced one sends nothing, a new one is created once, and a later lost create may still be allowed", async () => {
    await cli.write("synced.yaml", createdKey("synced"));
    expect((await cli.apply()).code).toBe(0);
    await cli.write("fresh.yaml", createdKey("fresh"));
    cli.sim.clearRequests();
    const allow = ["--allow-create", "ApiKey/synced,ApiKey/fresh"];

    const first = await cli.apply(allow);

    expect(first.code, first.stdout).toBe(0);
    expect(cli.writes()).toEqual([`POST ${ROUTE.keys}`]);
    expect(cli.sent("POST", ROUTE.keys)[0]?.body).toMatchObject({ name: "fresh" });

    await cli.write("late.yaml", createdKey("late"));
    cli.sim.inject({ api: "management", method: "POST", route: ROUTE.keys, kind: "drop" });
    const lost = await cli.apply(["--allow-create", "ApiKey/late"]);

    expect(statusOf(lost, "ApiKey/late")).toMatchObject({ status: "Unknown" });

    cli.sim.clearRequests();
    const retried = await cli.apply(["--allow-create", "ApiKey/late"]);

    expect(retried.code, retried.stdout).toBe(0);
    expect(cli.writes()).toEqual([`POST ${ROUTE.keys}`]);
    const pair = JSON.parse(await readFile(join(cli.root, "key-secrets", "late"), "utf8"));
    expect(typeof pair.keyId).toBe("string");
  });
});
