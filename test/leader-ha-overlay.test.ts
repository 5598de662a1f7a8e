import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { DEFAULT_LEASE_NAME } from "../src/leader/lease.js";
import { DEFAULT_SECRET_NAME, SHARD_COUNT, shardName } from "../src/state/kubernetes-store.js";

/**
 * deploy/components/ha (the HA overlay's component): its Role and the objects it creates ahead,
 * checked against the names the code uses. What the overlay renders is checked in
 * test/deploy-kustomize.test.ts.
 */

const COMPONENT = "deploy/components/ha";
type Rule = { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] };

/** The verbs the Role grants on `resource` of `group`, for object `name`. */
function verbsOn(rules: Rule[], group: string, resource: string, name: string): string[] {
  return rules
    .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
    .filter((r) => !r.resourceNames || r.resourceNames.includes(name))
    .flatMap((r) => r.verbs)
    .sort();
}

const stateSecrets = [
  DEFAULT_SECRET_NAME,
  ...Array.from({ length: SHARD_COUNT }, (_, index) => shardName(DEFAULT_SECRET_NAME, index)),
];

describe("the HA component", () => {
  it("lets a replica read and update the Lease and the state Secrets the code uses, each by name, and nothing else", async () => {
    const role = parse(await readFile(`${COMPONENT}/role.yaml`, "utf8")) as { rules: Rule[] };

    expect(verbsOn(role.rules, "coordination.k8s.io", "leases", DEFAULT_LEASE_NAME)).toEqual([
      "get",
      "update",
    ]);
    for (const name of stateSecrets)
      expect(verbsOn(role.rules, "", "secrets", name)).toEqual(["get", "update"]);
    expect(role.rules.flatMap((r) => r.resourceNames ?? [])).toEqual([DEFAULT_LEASE_NAME, ...stateSecrets]);
    expect(verbsOn(role.rules, "", "secrets", shardName(DEFAULT_SECRET_NAME, SHARD_COUNT))).toEqual([]);
    expect(verbsOn(role.rules, "", "secrets", "driftless-credentials")).toEqual([]);
    // RBAC cannot limit create (nor list) to names: granted, it would reach every Secret of the namespace.
    expect(role.rules.filter((r) => !r.resourceNames)).toEqual([]);
  });

  it("creates ahead, empty, exactly the Lease and the state Secrets the code uses", async () => {
    const text = await readFile(`${COMPONENT}/state-objects.yaml`, "utf8");
    const objects = parseAllDocuments(text).map(
      (d) => d.toJS() as { kind: string; metadata: { name: string }; data?: unknown },
    );

    expect(objects.filter((o) => o.kind === "Lease").map((o) => o.metadata.name)).toEqual([
      DEFAULT_LEASE_NAME,
    ]);
    expect(objects.filter((o) => o.kind === "Secret").map((o) => o.metadata.name)).toEqual(stateSecrets);
    expect(objects.filter((o) => o.data !== undefined)).toEqual([]);
  });
});
