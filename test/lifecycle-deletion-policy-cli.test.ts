import { readFile } from "node:fs/promises";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { defaultIds as ids } from "../src/simulator/index.js";
import { driftlessAsync } from "./helpers/cli.js";
import {
  adoptedKey,
  createdBoard,
  createdKey,
  ROUTE,
  statusLines,
  statusOf,
  useLifecycleCli,
} from "./helpers/lifecycle-cli.js";

/**
 * The deletion policy, through the built CLI against the simulator's published contract: what becomes
 * of an object once its manifest leaves git. Created objects are deleted, adopted ones orphaned, the
 * annotation of the last manifest wins either way, DRIFTLESS_PRUNE=off orphans everything, and the key
 * driftless authenticates with is never deleted.
 */

const cli = useLifecycleCli();
const POLICY = "driftless/deletion-policy";

describe("the default deletion policy", () => {
  it("deletes an object driftless created and orphans one it adopted by id, once their manifests leave git", async () => {
    await cli.write("created.yaml", createdKey("created"));
    await cli.write("adopted.yaml", adoptedKey("adopted"));
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("created.yaml", "adopted.yaml");
    cli.sim.clearRequests();

    const planned = await cli.plan();
    const result = await cli.apply();

    expect(planned.code).toBe(2);
    expect(planned.doc.resources?.map((r) => `${r.kind}/${r.name} ${r.outcome} ${r.action}`).sort()).toEqual([
      "ApiKey/adopted unmanaged orphan",
      "ApiKey/created send delete",
    ]);
    expect(planned.doc.resources?.find((r) => r.name === "adopted")?.reason).toContain(
      "its deletion policy is orphan (its object is left as it is)",
    );
    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(cli.writes()).toEqual([`DELETE ${ROUTE.key}`]);
    expect(cli.sim.state.keys.some((k) => k.name === "created")).toBe(false);
    expect(cli.sim.state.keys.some((k) => k.id === ids.ciDeployerKeyId)).toBe(true);
    expect(statusLines(result).sort()).toEqual(["ApiKey/adopted Unmanaged", "ApiKey/created Deleted"]);
  });
});

describe("driftless/deletion-policy", () => {
  it("of the last manifest wins over the default both ways: a created object orphaned, an adopted one deleted", async () => {
    await cli.write("board.yaml", createdBoard("board"));
    await cli.write("adopted.yaml", adoptedKey("adopted"));
    expect((await cli.apply()).code).toBe(0);
    await cli.write("board.yaml", createdBoard("board", { annotations: { [POLICY]: "orphan" } }));
    await cli.write(
      "adopted.yaml",
      adoptedKey("adopted", undefined, { annotations: { [POLICY]: "delete" } }),
    );
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("board.yaml", "adopted.yaml");
    cli.sim.clearRequests();

    const result = await cli.apply();

    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(cli.writes()).toEqual([`DELETE ${ROUTE.key}`]);
    expect(cli.sent("DELETE", ROUTE.key)[0]?.path).toContain(ids.ciDeployerKeyId);
    expect(cli.sim.state.dashboards.some((d) => d.name === "board")).toBe(true);
    expect(statusLines(result).sort()).toEqual(["ApiKey/adopted Deleted", "Dashboard/board Unmanaged"]);
  });

  it("taken back before the manifest leaves git, lets the default decide again", async () => {
    await cli.write("board.yaml", createdBoard("board", { annotations: { [POLICY]: "orphan" } }));
    expect((await cli.apply()).code).toBe(0);
    await cli.write("board.yaml", createdBoard("board"));
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("board.yaml");
    cli.sim.clearRequests();

    const result = await cli.apply();

    expect(cli.writes()).toEqual([`DELETE ${ROUTE.dashboard}`]);
    expect(statusLines(result)).toEqual(["Dashboard/board Deleted"]);
  });

  it("with a value other than delete or orphan is a validate error naming file, line and field", async () => {
    await cli.write("ok.yaml", createdKey("ok"));
    await cli.write(
      "board.yaml",
      createdBoard("board", { annotations: { [POLICY]: "keep", "team.example.com/owner": "data" } }),
    );

    const result = await driftlessAsync(["validate", join(cli.root, "manifests")], cli.env);

    expect(result.code).toBe(1);
    expect(result.stdout).toMatch(
      /board\.yaml:6:32 +Dashboard\/board +metadata\.annotations\.driftless\/deletion-policy: must be "delete" or "orphan"/,
    );
    expect(result.stdout).not.toContain("ok.yaml");
  });
});

describe("DRIFTLESS_PRUNE=off", () => {
  it("orphans everything whose manifest leaves git, even an object whose annotation says delete", async () => {
    await cli.write("created.yaml", createdKey("created"));
    await cli.write("board.yaml", createdBoard("board", { annotations: { [POLICY]: "delete" } }));
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("created.yaml", "board.yaml");
    cli.sim.clearRequests();

    const result = await cli.apply([], { DRIFTLESS_PRUNE: "off" });

    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(cli.writes()).toEqual([]);
    expect(statusLines(result).sort()).toEqual(["ApiKey/created Unmanaged", "Dashboard/board Unmanaged"]);
    expect(statusOf(result, "ApiKey/created")?.message).toContain(
      "DRIFTLESS_PRUNE=off leaves its object as it is",
    );
    expect(cli.sim.state.keys.some((k) => k.name === "created")).toBe(true);
    expect(cli.sim.state.dashboards.some((d) => d.name === "board")).toBe(true);
  });
});

describe("the key driftless authenticates with", () => {
  it("is never deleted, adopted with policy delete: orphaned, no request", async () => {
    await cli.write(
      "own.yaml",
      adoptedKey("own", ids.managementKeyId, {
        annotations: { [POLICY]: "delete" },
        extra: "  roles: [admin]\n",
      }),
    );
    expect((await cli.apply()).code).toBe(0);
    await cli.remove("own.yaml");
    cli.sim.clearRequests();

    const result = await cli.apply();

    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(cli.writes()).toEqual([]);
    expect(statusOf(result, "ApiKey/own")).toMatchObject({ status: "Unmanaged" });
    expect(statusOf(result, "ApiKey/own")?.message).toContain("the key driftless authenticates with");
  });

  it("is never deleted when it is a key driftless created, and now authenticates with", async () => {
    await cli.write("rotated.yaml", createdKey("rotated", { extra: "" }).replace("[developer]", "[admin]"));
    expect((await cli.apply()).code).toBe(0);
    const pair = JSON.parse(await readFile(join(cli.root, "key-secrets", "rotated"), "utf8"));
    await cli.remove("rotated.yaml");
    cli.sim.clearRequests();

    const result = await cli.apply([], {
      DRIFTLESS_MANAGEMENT_KEY_ID: pair.keyId,
      DRIFTLESS_MANAGEMENT_KEY_SECRET: pair.keySecret,
    });

    expect(result.code, result.stdout + result.stderr).toBe(0);
    expect(cli.writes()).toEqual([]);
    expect(statusOf(result, "ApiKey/rotated")).toMatchObject({ status: "Unmanaged" });
    expect(cli.sim.state.keys.some((k) => k.name === "rotated")).toBe(true);
  });
});
