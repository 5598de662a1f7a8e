import { describe, expect, it } from "vitest";
import { driftless } from "./helpers/cli.js";

describe("settings from flags and environment", () => {
  it("names the environment variable of a bad setting, without a stack trace, and exits 1", () => {
    const result = driftless(["plan", "examples"], { DRIFTLESS_MANAGEMENT_URL: "not a url" });

    expect(result.stderr).toBe("driftless: invalid settings: DRIFTLESS_MANAGEMENT_URL: Invalid URL\n");
    expect(result.code).toBe(1);
  });

  it("lets a flag win over its environment twin", () => {
    const result = driftless(["validate", "--output", "json", "examples"], { DRIFTLESS_OUTPUT: "text" });

    expect(JSON.parse(result.stdout).valid).toBe(true);
    expect(result.code).toBe(0);
  });

  it("shows every flag's environment twin in --help", () => {
    const result = driftless(["run", "--help"]);

    for (const name of [
      "DRIFTLESS_MANIFESTS",
      "DRIFTLESS_LISTEN",
      "DRIFTLESS_RECONCILE_SCHEDULE",
      "DRIFTLESS_LEADER_ELECT",
    ]) {
      expect(result.stdout).toContain(name);
    }
    expect(result.code).toBe(0);
  });
});
