import { spawnSync } from "node:child_process";
import {
  existsSync,
  mkdirSync,
  mkdtempSync,
  readdirSync,
  readFileSync,
  rmSync,
  writeFileSync,
} from "node:fs";
import { tmpdir } from "node:os";
import { join, relative, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";

/**
 * deploy/ as a user applies it: each kustomization rendered by `kubectl kustomize` (kustomize v5,
 * installed by .ci/run where missing), every rendered object checked against the Kubernetes API
 * schemas, then what the Deployment promises about git-sync, credentials, state and security.
 */

const repo = fileURLToPath(new URL("..", import.meta.url));
const overlays = join(repo, "deploy/overlays");

/**
 * Installations a user makes of an overlay and components (docs/kubernetes.md), in a folder of their
 * own: the key-secrets component over the one-replica example, and over the HA overlay.
 */
const installations = mkdtempSync(join(tmpdir(), "driftless-installations-"));
afterAll(() => rmSync(installations, { recursive: true, force: true }));
function installation(name: string, overlay: string, components: string[]): string {
  const dir = join(installations, name);
  mkdirSync(dir);
  const path = (inRepo: string) => relative(dir, join(repo, inRepo));
  writeFileSync(
    join(dir, "kustomization.yaml"),
    [
      "apiVersion: kustomize.config.k8s.io/v1beta1",
      "kind: Kustomization",
      "namespace: driftless",
      `resources: [${path(overlay)}]`,
      `components: [${components.map(path).join(", ")}]`,
      "",
    ].join("\n"),
  );
  return dir;
}
const withKeySecrets = {
  base: installation("key-secrets", "deploy/overlays/example", [
    "deploy/components/key-secrets",
    "deploy/components/labels",
  ]),
  ha: installation("ha-key-secrets", "deploy/overlays/ha", [
    "deploy/components/key-secrets",
    "deploy/components/labels",
  ]),
};

const kustomizations = [
  "deploy/base",
  ...(existsSync(overlays) ? readdirSync(overlays).map((name) => `deploy/overlays/${name}`) : []),
  withKeySecrets.base,
  withKeySecrets.ha,
];

type K8sObject = {
  apiVersion: string;
  kind: string;
  metadata: { name: string; labels?: Record<string, string> };
  [field: string]: unknown;
};

const version = (JSON.parse(readFileSync(join(repo, "package.json"), "utf8")) as { version: string }).version;

type Rendered = { status: number | null; stderr: string; objects: K8sObject[] };
const rendered = new Map<string, Rendered>();

/**
 * `kubectl kustomize` of `dir` (in the repository, or an installation's absolute path), once per file:
 * the HA overlay's 530 objects take kustomize seconds.
 */
function render(dir: string): Rendered {
  const known = rendered.get(dir);
  if (known) return known;
  const result = spawnSync("kubectl", ["kustomize", resolve(repo, dir)], { encoding: "utf8" });
  if (result.error) throw new Error(`kubectl is needed to render deploy/: ${result.error.message}`);
  const objects = parseAllDocuments(result.stdout).map((doc) => doc.toJS() as K8sObject);
  const made = { status: result.status, stderr: result.stderr, objects };
  rendered.set(dir, made);
  return made;
}

/** The schemas of every API group and version deploy/ may use; another needs a line here. */
const schemas: Record<string, () => Promise<Record<string, unknown>>> = {
  v1: () => import("kubernetes-models/v1"),
  "apps/v1": () => import("kubernetes-models/apps/v1"),
  "policy/v1": () => import("kubernetes-models/policy/v1"),
  "rbac.authorization.k8s.io/v1": () => import("kubernetes-models/rbac.authorization.k8s.io/v1"),
  "coordination.k8s.io/v1": () => import("kubernetes-models/coordination.k8s.io/v1"),
  "networking.k8s.io/v1": () => import("kubernetes-models/networking.k8s.io/v1"),
  "monitoring.coreos.com/v1": () => import("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1"),
};

/** The schema problems of one object: kubernetes-models's validator for its apiVersion and kind. */
async function schemaProblems(object: K8sObject): Promise<string[]> {
  const module = await schemas[object.apiVersion]?.();
  const Model = module?.[object.kind] as (new (data: unknown) => { validate(): void }) | undefined;
  if (!Model) return [`no schema for ${object.apiVersion} ${object.kind}`];
  try {
    new Model(object).validate();
    return [];
  } catch (error) {
    return [(error as Error).message];
  }
}

/**
 * Fields the API server would reject as unknown (kubectl validates strictly): the official client's
 * models, generated from the same OpenAPI document, drop every field they do not know on a
 * deserialize/serialize round trip. Custom resources pass through untouched.
 */
async function unknownFields(object: K8sObject): Promise<string[]> {
  const { ObjectSerializer } = await import("@kubernetes/client-node/dist/serializer.js");
  const type = `${object.apiVersion.split("/").at(-1)?.replace(/^v/, "V")}${object.kind}`;
  const roundTrip = ObjectSerializer.serialize(ObjectSerializer.deserialize(object, type), type);
  return missingPaths(object, roundTrip, "");
}

function missingPaths(original: unknown, kept: unknown, path: string): string[] {
  if (typeof original !== "object" || original === null) return [];
  if (typeof kept !== "object" || kept === null) return [path];
  return Object.entries(original).flatMap(([key, value]) =>
    key in kept
      ? missingPaths(value, (kept as Record<string, unknown>)[key], `${path}/${key}`)
      : [`${path}/${key}`],
  );
}

/** How a kustomization is named in test names: its folder in the repository, or the installation's name. */
const shown = (dir: string) =>
  dir.startsWith(installations) ? `an installation: ${relative(installations, dir)}` : dir;

describe.each(kustomizations.map((dir) => [shown(dir), dir]))("%s", (_, dir) => {
  it("renders with kubectl kustomize", () => {
    const { status, stderr, objects } = render(dir);

    expect(stderr).toBe("");
    expect(status).toBe(0);
    expect(objects.map((o) => o.kind)).toEqual(expect.arrayContaining(["Deployment", "PrometheusRule"]));
  });

  it("holds only objects that the Kubernetes API schemas accept, without unknown fields", async () => {
    const { objects } = render(dir);

    const problems: string[] = [];
    for (const object of objects) {
      const id = `${object.kind}/${object.metadata.name}`;
      for (const problem of await schemaProblems(object)) problems.push(`${id}: ${problem}`);
      for (const field of await unknownFields(object)) problems.push(`${id}: unknown field ${field}`);
    }

    expect(problems).toEqual([]);
  });

  it("labels every object with its name, instance, release version and manager", () => {
    const { objects } = render(dir);

    const unlabelled = objects
      .filter((o) => o.kind !== "Namespace")
      .filter(
        (o) =>
          o.metadata.labels?.["app.kubernetes.io/name"] !== "driftless" ||
          o.metadata.labels?.["app.kubernetes.io/instance"] !== "driftless" ||
          o.metadata.labels?.["app.kubernetes.io/version"] !== version ||
          o.metadata.labels?.["app.kubernetes.io/managed-by"] !== "kustomize",
      )
      .map((o) => `${o.kind}/${o.metadata.name}`);

    expect(objects.length).toBeGreaterThan(5);
    expect(unlabelled).toEqual([]);
  });

  it("keeps the selectors to the name label, so an upgrade never changes a Deployment's selector", () => {
    const { objects } = render(dir);

    const selectors = objects
      .filter((o) => ["Deployment", "Service", "ServiceMonitor", "PodDisruptionBudget"].includes(o.kind))
      .map((o) => {
        const selector = (o.spec as { selector: { matchLabels?: Record<string, string> } }).selector;
        return [o.kind, selector.matchLabels ?? selector];
      });

    expect(selectors.length).toBeGreaterThanOrEqual(3);
    for (const [, selector] of selectors) expect(selector).toEqual({ "app.kubernetes.io/name": "driftless" });
  });

  it("names the Grafana dashboard ConfigMap without a hash suffix, so an upgrade replaces it", () => {
    const { objects } = render(dir);

    const dashboards = objects.filter(
      (o) => o.kind === "ConfigMap" && o.metadata.labels?.grafana_dashboard === "1",
    );

    expect(dashboards.map((o) => o.metadata.name)).toEqual(["driftless-grafana-dashboard"]);
  });
});

type Container = {
  name: string;
  args?: string[];
  env?: { name: string; value?: string; valueFrom?: { secretKeyRef?: { name: string; key: string } } }[];
  envFrom?: { configMapRef?: { name: string } }[];
  ports?: { name: string; containerPort: number }[];
  volumeMounts?: { name: string; mountPath: string; readOnly?: boolean }[];
  livenessProbe?: { httpGet?: { path: string; port: string } };
  readinessProbe?: { httpGet?: { path: string; port: string } };
  resources?: { requests?: Record<string, string>; limits?: Record<string, string> };
  securityContext?: Record<string, unknown>;
};
type Volume = {
  name: string;
  emptyDir?: object;
  secret?: { secretName: string };
  persistentVolumeClaim?: object;
};
type PodSpec = { containers: Container[]; volumes: Volume[]; securityContext: Record<string, unknown> };

describe("the example overlay's Deployment", () => {
  const { objects } = render("deploy/overlays/example");
  const deployment = objects.find((o) => o.kind === "Deployment") as K8sObject & {
    spec: { strategy: { type: string }; replicas: number; template: { spec: PodSpec } };
  };
  const pod = deployment.spec.template.spec;
  const container = (name: string) => pod.containers.find((c) => c.name === name) as Container;
  const driftless = container("driftless");
  const gitSync = container("git-sync");
  const flag = (name: string) => gitSync.args?.find((a) => a.startsWith(`--${name}=`))?.split("=")[1];
  /** driftless's environment: its ConfigMap (kustomize names it with a hash) under its own env. */
  const driftlessEnv = () => {
    const configMaps = (driftless.envFrom ?? []).map((source) => source.configMapRef?.name);
    const fromMaps = objects
      .filter((o) => o.kind === "ConfigMap" && configMaps.includes(o.metadata.name))
      .map((o) => o.data as Record<string, string>);
    const own = Object.fromEntries((driftless.env ?? []).map((e) => [e.name, e.value]));
    return Object.assign({}, ...fromMaps, own) as Record<string, string | undefined>;
  };

  it("reads the manifests through git-sync's link on a volume both containers share", () => {
    const env = driftlessEnv();
    const shared = (c: Container) => c.volumeMounts?.find((m) => m.mountPath === flag("root"))?.name;

    expect(flag("root")).toBe("/git");
    expect(env.DRIFTLESS_MANIFESTS).toBe(`${flag("root")}/${flag("link")}`);
    expect(shared(driftless)).toBeDefined();
    expect(shared(gitSync)).toBe(shared(driftless));
    expect(pod.volumes.find((v) => v.name === shared(driftless))?.emptyDir).toBeDefined();
  });

  it("is woken by git-sync's webhook with the token as the last path segment", () => {
    const port = driftless.ports?.find((p) => p.name === "http")?.containerPort;
    const tokenVariable = /\/hooks\/sync\/\$\((\w+)\)$/.exec(flag("webhook-url") ?? "")?.[1];
    const tokenSource = gitSync.env?.find((e) => e.name === tokenVariable)?.valueFrom?.secretKeyRef;

    expect(flag("webhook-url")).toMatch(new RegExp(`^http://127\\.0\\.0\\.1:${port}/hooks/sync/`));
    expect(tokenSource).toEqual({ name: "driftless-credentials", key: "webhook-token" });
    expect(driftlessEnv().DRIFTLESS_WEBHOOK_TOKEN_FILE).toMatch(/\/webhook-token$/);
    // driftless answers the hook with 202 Accepted; git-sync retries until it sees its success status.
    expect(flag("webhook-success-status")).toBe("202");
  });

  it("keeps an old worktree for longer than a pass can take", () => {
    const [, amount = "0", unit = ""] = /^(\d+)([smh])$/.exec(flag("stale-worktree-timeout") ?? "") ?? [];
    const seconds = Number(amount) * ({ s: 1, m: 60, h: 3600 }[unit] ?? 0);

    // The pass-duration histogram's top bucket is 120 s; a pass that long is already an incident.
    expect(seconds).toBeGreaterThanOrEqual(600);
  });

  it("gives driftless its credentials only as files mounted from a Secret", () => {
    const env = driftlessEnv();
    const credentials = pod.volumes.find((v) => v.secret?.secretName === "driftless-credentials");
    const mount = driftless.volumeMounts?.find((m) => m.name === credentials?.name);
    const fileVariables = Object.keys(env).filter((name) => name.endsWith("_FILE"));
    const plain = [
      "DRIFTLESS_MANAGEMENT_KEY_ID",
      "DRIFTLESS_MANAGEMENT_KEY_SECRET",
      "DRIFTLESS_OBSERVABILITY_TOKEN",
    ];

    expect(fileVariables.sort()).toEqual(
      plain
        .map((name) => `${name}_FILE`)
        .concat("DRIFTLESS_WEBHOOK_TOKEN_FILE", "DRIFTLESS_STATUS_TOKEN_FILE")
        .sort(),
    );
    for (const name of fileVariables) expect(env[name]?.startsWith(`${mount?.mountPath}/`)).toBe(true);
    expect(mount?.readOnly).toBe(true);
    expect(Object.keys(env).filter((name) => plain.includes(name))).toEqual([]);
  });

  it("mounts fromFile secrets at DRIFTLESS_SECRETS_DIR and keeps state on a PersistentVolumeClaim", () => {
    const env = driftlessEnv();
    const mountAt = (path?: string) => driftless.volumeMounts?.find((m) => m.mountPath === path);
    const volume = (path?: string) => pod.volumes.find((v) => v.name === mountAt(path)?.name);

    expect(volume(env.DRIFTLESS_SECRETS_DIR)?.secret?.secretName).toBe("driftless-manifest-secrets");
    expect(volume(env.DRIFTLESS_STATE_DIR)?.persistentVolumeClaim).toBeDefined();
    expect(objects.some((o) => o.kind === "PersistentVolumeClaim")).toBe(true);
    // One replica owns the state: the old pod stops before a new one starts.
    expect(deployment.spec.replicas).toBe(1);
    expect(deployment.spec.strategy.type).toBe("Recreate");
  });

  it("probes /healthz for liveness and /readyz for readiness", () => {
    expect(driftless.livenessProbe?.httpGet).toEqual({ path: "/healthz", port: "http" });
    expect(driftless.readinessProbe?.httpGet).toEqual({ path: "/readyz", port: "http" });
  });

  it.each(["driftless", "git-sync"])("runs %s locked down, with requests and limits", (name) => {
    const c = container(name);

    expect(pod.securityContext).toMatchObject({
      runAsNonRoot: true,
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(c.securityContext).toMatchObject({
      runAsNonRoot: true,
      readOnlyRootFilesystem: true,
      allowPrivilegeEscalation: false,
      capabilities: { drop: ["ALL"] },
      seccompProfile: { type: "RuntimeDefault" },
    });
    expect(c.securityContext?.runAsUser).toBeGreaterThan(0);
    expect(Object.keys(c.resources?.requests ?? {}).sort()).toEqual(["cpu", "memory"]);
    expect(c.resources?.limits?.memory).toBeDefined();
    // With a read-only root, temp files need a writable volume.
    expect(
      pod.volumes.find((v) => v.name === c.volumeMounts?.find((m) => m.mountPath === "/tmp")?.name)?.emptyDir,
    ).toBeDefined();
  });

  it("is scraped through a Service and a ServiceMonitor on the port named http", () => {
    const service = objects.find((o) => o.kind === "Service") as K8sObject & {
      spec: { selector: Record<string, string>; ports: { name: string; targetPort: string }[] };
    };
    const monitor = objects.find((o) => o.kind === "ServiceMonitor") as K8sObject & {
      spec: {
        selector: { matchLabels: Record<string, string> };
        endpoints: { port: string; path: string }[];
      };
    };
    const podLabels = (
      deployment.spec.template as unknown as { metadata: { labels: Record<string, string> } }
    ).metadata.labels;
    const serviceLabels = (service.metadata as unknown as { labels: Record<string, string> }).labels;

    expect(podLabels).toMatchObject(service.spec.selector);
    expect(serviceLabels).toMatchObject(monitor.spec.selector.matchLabels);
    expect(service.spec.ports[0]?.targetPort).toBe("http");
    expect(monitor.spec.endpoints[0]).toMatchObject({ port: "http", path: "/metrics" });
  });
});

type Port = { port?: number | string; protocol?: string };
type PolicyRule = { ports?: Port[]; from?: unknown[]; to?: unknown[] };
type NetworkPolicy = K8sObject & {
  spec: {
    podSelector: { matchLabels?: Record<string, string> };
    policyTypes: string[];
    ingress?: PolicyRule[];
    egress?: PolicyRule[];
  };
};

/** What an overlay renders for the driftless pod: the Deployment, its pod, and driftless's environment. */
function installationOf(dir: string) {
  const { objects } = render(dir);
  const deployment = objects.find((o) => o.kind === "Deployment") as K8sObject & {
    spec: { replicas: number; template: { metadata: { labels: Record<string, string> }; spec: PodSpec } };
  };
  const pod = deployment.spec.template.spec;
  const driftless = pod.containers.find((c) => c.name === "driftless") as Container & { image: string };
  const configMaps = (driftless.envFrom ?? []).map((source) => source.configMapRef?.name);
  const env: Record<string, string | undefined> = Object.assign(
    {},
    ...objects
      .filter((o) => o.kind === "ConfigMap" && configMaps.includes(o.metadata.name))
      .map((o) => o.data as Record<string, string>),
    Object.fromEntries((driftless.env ?? []).map((e) => [e.name, e.value])),
  );
  return { objects, deployment, pod, driftless, env };
}

/** The ports (`number/PROTOCOL`, a named port by its number) that `rules` open, to anywhere. */
function openPorts(rules: PolicyRule[] | undefined, named: Record<string, number>): string[] {
  return (rules ?? [])
    .filter((rule) => rule.from === undefined && rule.to === undefined)
    .flatMap((rule) => rule.ports ?? [])
    .map(
      (port) => `${typeof port.port === "string" ? named[port.port] : port.port}/${port.protocol ?? "TCP"}`,
    )
    .sort();
}

const overlayNames = existsSync(overlays) ? readdirSync(overlays) : [];

describe.each(overlayNames)("deploy/overlays/%s, as kubectl kustomize renders it", (name) => {
  const dir = `deploy/overlays/${name}`;

  it("is a complete installation: a namespace for every object, a pushed image, both platform URLs", () => {
    const { objects, driftless, env } = installationOf(dir);

    const clusterScoped = ["Namespace"];
    expect(objects.filter((o) => !clusterScoped.includes(o.kind) && !("namespace" in o.metadata))).toEqual(
      [],
    );
    expect(driftless.image).toMatch(/^[\w.-]+(:\d+)?\/[\w./-]+:[\w.-]+$/);
    expect(env.DRIFTLESS_MANAGEMENT_URL).toMatch(/^https:\/\//);
    expect(env.DRIFTLESS_OBSERVABILITY_URL).toMatch(/^https:\/\//);
    expect(env.DRIFTLESS_SIMULATOR).toBeUndefined();
  });

  it("puts /status, the page and suspend behind the status token, read from the credentials Secret", () => {
    const { pod, driftless, env } = installationOf(dir);
    const credentials = pod.volumes.find((v) => v.secret?.secretName === "driftless-credentials");
    const mount = driftless.volumeMounts?.find((m) => m.name === credentials?.name);

    expect(env.DRIFTLESS_STATUS_TOKEN_FILE).toBe(`${mount?.mountPath}/status-token`);
  });

  it("limits every container's memory and CPU, and every emptyDir's size (git-sync's /git included)", () => {
    const { pod } = installationOf(dir);

    for (const container of pod.containers) {
      expect(Object.keys(container.resources?.limits ?? {}).sort(), container.name).toEqual([
        "cpu",
        "memory",
      ]);
    }
    const emptyDirs = pod.volumes.filter((v) => v.emptyDir);
    expect(emptyDirs.map((v) => v.name)).toContain("git");
    for (const volume of emptyDirs) expect(volume.emptyDir, volume.name).toHaveProperty("sizeLimit");
  });

  it("lets in only the HTTP port, and out only DNS, HTTPS and, electing a leader, the API server", () => {
    const { objects, deployment, driftless, env } = installationOf(dir);
    const policies = objects.filter((o) => o.kind === "NetworkPolicy") as NetworkPolicy[];
    const podLabels = deployment.spec.template.metadata.labels;
    const selecting = policies.filter((p) =>
      Object.entries(p.spec.podSelector.matchLabels ?? {}).every(([key, value]) => podLabels[key] === value),
    );
    const named = Object.fromEntries((driftless.ports ?? []).map((p) => [p.name, p.containerPort]));

    expect(selecting.length).toBeGreaterThan(0);
    expect(selecting.length).toBe(policies.length);
    expect(selecting.some((p) => p.spec.policyTypes.includes("Ingress"))).toBe(true);
    expect(selecting.some((p) => p.spec.policyTypes.includes("Egress"))).toBe(true);
    expect(
      openPorts(
        selecting.flatMap((p) => p.spec.ingress ?? []),
        named,
      ),
    ).toEqual(["9464/TCP"]);
    expect(
      openPorts(
        selecting.flatMap((p) => p.spec.egress ?? []),
        named,
      ),
    ).toEqual(
      ["443/TCP", "53/TCP", "53/UDP", ...(env.DRIFTLESS_LEADER_ELECT === "true" ? ["6443/TCP"] : [])].sort(),
    );
  });
});

describe("the HA overlay", () => {
  const dir = "deploy/overlays/ha";

  it("runs two replicas on distinct nodes, electing a leader, with the state in Secrets and no volume", () => {
    const { objects, deployment, pod, env } = installationOf(dir);
    const spec = pod as PodSpec & {
      automountServiceAccountToken: boolean;
      affinity: {
        podAntiAffinity: { requiredDuringSchedulingIgnoredDuringExecution: Array<{ topologyKey: string }> };
      };
    };

    expect(deployment.spec.replicas).toBe(2);
    expect(spec.automountServiceAccountToken).toBe(true);
    expect(spec.affinity.podAntiAffinity.requiredDuringSchedulingIgnoredDuringExecution[0]?.topologyKey).toBe(
      "kubernetes.io/hostname",
    );
    expect(pod.volumes.filter((v) => v.persistentVolumeClaim)).toEqual([]);
    expect(objects.filter((o) => o.kind === "PersistentVolumeClaim")).toEqual([]);
    expect(env).toMatchObject({ DRIFTLESS_STATE_STORE: "kubernetes", DRIFTLESS_LEADER_ELECT: "true" });
  });

  it("keeps one replica through a voluntary disruption, and binds the Role to the pods' account in their namespace", () => {
    const { objects, deployment } = installationOf(dir);
    const pdb = objects.find((o) => o.kind === "PodDisruptionBudget") as K8sObject & {
      spec: { minAvailable: number; selector: { matchLabels: Record<string, string> } };
    };
    const binding = objects.find((o) => o.kind === "RoleBinding") as K8sObject & {
      roleRef: { name: string };
      subjects: Array<{ kind: string; name: string; namespace: string }>;
    };
    const account = (deployment.spec.template.spec as PodSpec & { serviceAccountName: string })
      .serviceAccountName;
    const namespace = (deployment.metadata as { namespace?: string }).namespace;

    expect(pdb.spec).toEqual({
      minAvailable: 1,
      selector: { matchLabels: { "app.kubernetes.io/name": "driftless" } },
    });
    expect(binding.roleRef.name).toBe(objects.find((o) => o.kind === "Role")?.metadata.name);
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: account, namespace }]);
  });

  it("creates the Lease and the state Secrets empty ahead, so that the Role needs no create", () => {
    const { objects } = installationOf(dir);
    const state = objects.filter((o) => o.metadata.labels?.["app.kubernetes.io/component"] === "state");

    expect(state.filter((o) => o.kind === "Lease").map((o) => o.metadata.name)).toEqual(["driftless-leader"]);
    expect(state.filter((o) => o.kind === "Secret")).toHaveLength(513);
    expect(state.filter((o) => "data" in o || "spec" in o)).toEqual([]);
  });
});

type Rule = { apiGroups: string[]; resources: string[]; resourceNames?: string[]; verbs: string[] };
type Role = K8sObject & { rules: Rule[] };

describe.each([
  ["the one-replica example", withKeySecrets.base, "deploy/overlays/example"],
  ["the HA overlay", withKeySecrets.ha, "deploy/overlays/ha"],
])("the key-secrets component over %s", (_, dir, overlay) => {
  const keySecrets = () =>
    installationOf(dir).objects.filter(
      (o) => o.kind === "Secret" && o.metadata.labels?.["app.kubernetes.io/component"] === "key-secrets",
    );

  it("lets driftless's account get and update exactly the key Secrets it creates empty, and nothing more", () => {
    const { objects, deployment } = installationOf(dir);
    const roles = objects.filter((o) => o.kind === "Role") as Role[];
    const role = roles.find((r) => r.metadata.name === "driftless-key-secrets");
    const binding = objects.find(
      (o) => o.kind === "RoleBinding" && o.metadata.name === "driftless-key-secrets",
    ) as K8sObject & { roleRef: { kind: string; name: string }; subjects: unknown[] };
    const pod = deployment.spec.template.spec as PodSpec & { serviceAccountName: string };
    const namespace = (deployment.metadata as { namespace?: string }).namespace;
    const names = keySecrets().map((o) => o.metadata.name);

    expect(names.length).toBeGreaterThan(0);
    expect(role?.rules).toEqual([
      { apiGroups: [""], resources: ["secrets"], resourceNames: names, verbs: ["get", "update"] },
    ]);
    expect(binding.roleRef).toEqual({
      apiGroup: "rbac.authorization.k8s.io",
      kind: "Role",
      name: "driftless-key-secrets",
    });
    expect(binding.subjects).toEqual([{ kind: "ServiceAccount", name: pod.serviceAccountName, namespace }]);
    // RBAC cannot limit create, list or delete to names: no Role of the installation grants them.
    const verbs = roles.flatMap((r) => r.rules.flatMap((rule) => rule.verbs));
    expect(verbs.filter((verb) => !["get", "update"].includes(verb))).toEqual([]);
    expect(roles.flatMap((r) => r.rules).filter((rule) => !rule.resourceNames?.length)).toEqual([]);
  });

  it("creates the key Secrets empty, kept from a GitOps tool's prune: driftless fills them", () => {
    const secrets = keySecrets();

    expect(secrets.filter((o) => "data" in o || "stringData" in o)).toEqual([]);
    for (const secret of secrets)
      expect(secret.metadata).toMatchObject({
        annotations: {
          "argocd.argoproj.io/sync-options": "Prune=false,Delete=false",
          "kustomize.toolkit.fluxcd.io/prune": "disabled",
        },
      });
  });

  it("mounts the service account token the base leaves out, and lets the pod reach the API server", () => {
    const { objects, pod } = installationOf(dir);
    const egress = (objects.filter((o) => o.kind === "NetworkPolicy") as NetworkPolicy[]).flatMap(
      (p) => p.spec.egress ?? [],
    );

    expect(
      (installationOf("deploy/overlays/example").pod as { automountServiceAccountToken?: boolean })
        .automountServiceAccountToken,
    ).toBe(false);
    expect((pod as { automountServiceAccountToken?: boolean }).automountServiceAccountToken).toBe(true);
    expect(openPorts(egress, {})).toContain("6443/TCP");
  });

  it("adds to the overlay's Roles without widening them", () => {
    const before = installationOf(overlay).objects.filter((o) => o.kind === "Role");
    const after = installationOf(dir).objects.filter(
      (o) => o.kind === "Role" && o.metadata.name !== "driftless-key-secrets",
    );

    expect(after).toEqual(before);
  });
});
