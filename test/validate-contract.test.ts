import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { driftless } from "./helpers/cli.js";

/** `validate --contract full`: the published contract's rules a manifest can break, found before merge. */

const folder = join(import.meta.dirname, "fixtures", "contract-full");

describe("validate --contract full", () => {
  it("prints each rule of the published contract a manifest breaks, at its line, and exits 1", () => {
    const result = driftless(["validate", folder, "--contract", "full"]);

    expect(result.stdout.split("\n")).toEqual([
      "dashboard.yaml:8:10  Dashboard/overview  spec.tags[0]: must be at most 32 characters (the published contract)",
      "dashboard.yaml:12:10  Dashboard/overview  spec.tiles[0].x: must be at most 23 (the published contract)",
      "dashboard.yaml:17:11  Dashboard/overview  spec.tiles[0].series[0].sourceId: is required (the published contract)",
      "dashboard.yaml:17:11  Dashboard/overview  spec.tiles[0].series[0].groupBy: is required (the published contract)",
      "dashboard.yaml:22:10  Dashboard/overview  spec.tiles[1].w: must be at most 24 (the published contract)",
      "dashboard.yaml:25:11  Dashboard/overview  spec.tiles[1].series[0].content: is required (the published contract)",
      "pipe.yaml:10:33  DataPipe/events  spec.settings.object_storage_concurrency: must be at most 35 (the published contract)",
      "pipe.yaml:11:35  DataPipe/events  spec.settings.streaming_max_insert_wait_ms: must be at least 500 (the published contract)",
      "pipe.yaml:18:12  AlertWatch/lag  spec.alertId: must be an id of 24 hexadecimal characters (the published contract)",
      "9 problems in 3 manifests; 0 of 3 manifests valid",
      "",
    ]);
    expect(result.code).toBe(1);
  });

  it("takes the contract from DRIFTLESS_CONTRACT, and by default checks the minimal contract only", () => {
    const byEnv = driftless(["validate", folder], { DRIFTLESS_CONTRACT: "full" });
    const byDefault = driftless(["validate", folder]);

    expect(byEnv.code).toBe(1);
    expect(byDefault.stdout).toBe("3 valid manifests, no problems\n");
    expect(byDefault.code).toBe(0);
  });

  it("passes examples/, whose every series names a source", () => {
    const result = driftless(["validate", "examples", "--contract", "full"]);

    expect(result.stdout).toBe("13 valid manifests, no problems\n");
    expect(result.code).toBe(0);
  });
});
