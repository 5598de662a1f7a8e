import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { loadManifests } from "../src/manifests/load.js";
import { nearest } from "../src/manifests/suggest.js";
import { defaultIds } from "../src/simulator/index.js";

/** An unknown field that is a typo of a known one names the known one. */

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-suggest-"));
});
afterEach(() => rm(dir, { recursive: true, force: true }));

const key = (field: string) => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci
spec:
  organizationId: ${defaultIds.organizationId}
  keyId: ${defaultIds.ciDeployerKeyId}
  ${field}:
    - source: 203.0.113.0/24
      descripton: CI runners
`;

describe("an unknown field", () => {
  it("suggests the field it is a typo of, at every depth", async () => {
    await writeFile(join(dir, "key.yaml"), key("ipAccesList"));
    const inner = key("ipAccessList").replace("name: ci", "name: inner");
    await writeFile(
      join(dir, "inner.yaml"),
      inner.replace(defaultIds.ciDeployerKeyId, defaultIds.managementKeyId),
    );

    const set = await loadManifests(dir);

    expect(set.problems.map((p) => `${p.field}: ${p.message}`)).toEqual([
      "spec.ipAccessList[0].descripton: unknown field (not in the API's request body); did you mean description?",
      "spec.ipAccesList: unknown field (not in the API's request body); did you mean ipAccessList?",
    ]);
  });

  it("suggests nothing when no known field is near", async () => {
    await writeFile(join(dir, "key.yaml"), key("allowedNetworks"));

    const set = await loadManifests(dir);

    expect(set.problems.map((p) => p.message)).toContain("unknown field (not in the API's request body)");
    expect(set.problems.map((p) => p.message).join("\n")).not.toContain("did you mean ipAccessList");
  });
});

describe("the nearest field", () => {
  it("takes a case slip, a missing, extra or wrong letter, or two neighbours swapped", () => {
    const known = ["ipAccessList", "name", "roles", "expireAt"];

    expect(nearest("ipaccesslist", known)).toBe("ipAccessList");
    expect(nearest("nam", known)).toBe("name");
    expect(nearest("rolse", known)).toBe("roles");
    expect(nearest("expiresAt", known)).toBe("expireAt");
    expect(nearest("color", known)).toBeUndefined();
  });
});
