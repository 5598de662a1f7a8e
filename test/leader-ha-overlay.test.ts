import { spawnSync } from "node:child_process";
import { readFile } from "node:fs/promises";
import { describe, expect, it } from "vitest";
import { parse, parseAllDocuments } from "yaml";
import { DEFAULT_LEASE_NAME } from "../src/leader/lease.js";
import { DEFAULT_SECRET_NAME, SHARD_COUNT, shardName } from "../src/state/kubernetes-store.js";

/**
 * deploy/overlays/ha: what an operator gets from it, checked against the names the code uses. The
 * rendered checks need kustomize (`kubectl kustomize`) and are skipped where it is missing.
 */

const OVERLAY = "deploy/overlays/ha";
type Doc = { kind: string; metadata: { name: string }; [key: string]: unknown };
type Rule = { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] };

const kubectl = spawnSync("kubectl", ["version", "--client"], { encoding: "utf8" }).status === 0;

function render(): Doc[] {
  const built = spawnSync("kubectl", ["kustomize", OVERLAY], { encoding: "utf8" });
  if (built.status !== 0) throw new Error(`kubectl kustomize ${OVERLAY} failed:\n${built.stderr}`);
  return parseAllDocuments(built.stdout).map((d) => d.toJS() as Doc);
}

/** The verbs the Role grants on `resource` of `group`, for object `name`. */
function verbsOn(rules: Rule[], group: string, resource: string, name: string): string[] {
  return rules
    .filter((r) => r.apiGroups.includes(group) && r.resources.includes(resource))
    .filter((r) => !r.resourceNames || r.resourceNames.includes(name))
    .flatMap((r) => r.verbs)
    .sort();
}

describe("the HA overlay", () => {
  it("lets a replica create, read and update the Lease and the state Secret the code uses, and no other", async () => {
    const role = parse(await readFile(`${OVERLAY}/role.yaml`, "utf8")) as { rules: Rule[] };

    expect(verbsOn(role.rules, "coordination.k8s.io", "leases", DEFAULT_LEASE_NAME)).toEqual([
      "create",
      "get",
      "update",
    ]);
    const stateSecrets = [
      DEFAULT_SECRET_NAME,
      ...Array.from({ length: SHARD_COUNT }, (_, index) => shardName(DEFAULT_SECRET_NAME, index)),
    ];
    for (const name of stateSecrets) {
      expect(verbsOn(role.rules, "", "secrets", name)).toEqual(["create", "get", "update"]);
    }
    expect(
      role.rules.flatMap((r) => r.resourceNames ?? []).filter((n) => n.startsWith(DEFAULT_SECRET_NAME)),
    ).toEqual(stateSecrets);
    expect(verbsOn(role.rules, "", "secrets", shardName(DEFAULT_SECRET_NAME, SHARD_COUNT))).toEqual([
      "create",
    ]);
    expect(verbsOn(role.rules, "", "secrets", "driftless-credentials")).toEqual(["create"]);
    expect(role.rules.flatMap((r) => r.verbs)).not.toContain("list");
  });

  it.skipIf(!kubectl)(
    "renders two replicas on distinct nodes, electing a leader, keeping state in a Secret",
    () => {
      const docs = render();
      const deployment = docs.find((d) => d.kind === "Deployment") as unknown as {
        spec: { replicas: number; template: { spec: Record<string, unknown> } };
      };
      const pod = deployment.spec.template.spec as {
        automountServiceAccountToken: boolean;
        affinity: {
          podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: Array<{ topologyKey: string }> };
        };
        volumes: Array<{ name: string; persistentVolumeClaim?: unknown }>;
        containers: Array<{ name: string; envFrom: Array<{ configMapRef?: { name: string } }> }>;
      };
      // The settings of the driftless container, in the ConfigMap as kustomize named (and hashed) it.
      const settingsName = pod.containers.find((c) => c.name === "driftless")?.envFrom[0]?.configMapRef?.name;
      const settings = docs.find(
        (d) => d.kind === "ConfigMap" && d.metadata.name === settingsName,
      ) as unknown as {
        data: Record<string, string>;
      };

      expect(deployment.spec.replicas).toBe(2);
      expect(pod.automountServiceAccountToken).toBe(true);
      expect(
        pod.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]?.topologyKey,
      ).toBe("kubernetes.io/hostname");
      expect(pod.volumes.filter((v) => v.persistentVolumeClaim)).toEqual([]);
      expect(docs.filter((d) => d.kind === "PersistentVolumeClaim")).toEqual([]);
      expect(settings.data).toMatchObject({
        DRIFTLESS_STATE_STORE: "kubernetes",
        DRIFTLESS_LEADER_ELECT: "true",
      });
    },
  );

  it.skipIf(!kubectl)(
    "keeps one replica through a voluntary disruption, and binds the Role to the pods' account",
    () => {
      const docs = render();
      const pdb = docs.find((d) => d.kind === "PodDisruptionBudget") as unknown as {
        spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
      };
      const binding = docs.find((d) => d.kind === "RoleBinding") as unknown as {
        roleRef: { name: string };
        subjects: Array<{ kind: string; name: string }>;
      };
      const account = docs.find((d) => d.kind === "ServiceAccount");

      expect(pdb.spec).toEqual({
        minAvailable: 1,
        selector: { matchLabels: { "app.kubernetes.io/name": "driftless" } },
      });
      expect(binding.roleRef.name).toBe(docs.find((d) => d.kind === "Role")?.metadata.name);
      expect(binding.subjects).toEqual([
        expect.objectContaining({ kind: "ServiceAccount", name: account?.metadata.name }),
      ]);
    },
  );
});
