import { existsSync } from "node:fs";
import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { CoreV1Api } from "@kubernetes/client-node";
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";
import { ConfigError } from "../src/errors.js";
import { loadKubeConfig, namespaceOf } from "../src/kubernetes/client.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";

/** How driftless finds the Kubernetes API and its namespace: the client's usual rules. */

let fake: FakeKubernetes;
let home: string;
beforeEach(async () => {
  fake = await startFakeKubernetes();
  home = await mkdtemp(join(tmpdir(), "driftless-home-"));
});
afterEach(async () => {
  vi.unstubAllEnvs();
  await fake.close();
  await rm(home, { recursive: true, force: true });
});

describe("finding the Kubernetes API", () => {
  it("uses the cluster, user and namespace of the KUBECONFIG file", async () => {
    vi.stubEnv("KUBECONFIG", fake.kubeconfigPath);

    const kubeConfig = loadKubeConfig();
    await kubeConfig
      .makeApiClient(CoreV1Api)
      .readNamespacedSecret({ name: "anything", namespace: namespaceOf(kubeConfig) })
      .catch(() => {});

    expect(namespaceOf(kubeConfig)).toBe("driftless-test");
    expect(fake.requests.at(-1)).toMatchObject({
      method: "GET",
      path: "/api/v1/namespaces/driftless-test/secrets/anything",
      token: "fake-kubernetes-token",
    });
  });

  it("prefers DRIFTLESS_NAMESPACE over the context's namespace", () => {
    vi.stubEnv("KUBECONFIG", fake.kubeconfigPath);

    expect(namespaceOf(loadKubeConfig(), "analytics-ops")).toBe("analytics-ops");
  });

  it("uses the namespace `default` when the context names none", async () => {
    const file = join(home, "config");
    await writeFile(file, fake.kubeconfig("t").replace(/, namespace: driftless-test/, ""));
    vi.stubEnv("KUBECONFIG", file);

    expect(namespaceOf(loadKubeConfig())).toBe("default");
  });

  it.skipIf(existsSync("/var/run/secrets/kubernetes.io/serviceaccount/token"))(
    "refuses to guess when there is no kubeconfig and no service account, instead of trying localhost:8080",
    () => {
      vi.stubEnv("KUBECONFIG", "");
      vi.stubEnv("HOME", home);
      vi.stubEnv("USERPROFILE", home);

      expect(() => loadKubeConfig()).toThrow(ConfigError);
      expect(() => loadKubeConfig()).toThrow(/no Kubernetes API found: .* KUBECONFIG/);
    },
  );
});
