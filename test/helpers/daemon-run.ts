import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach } from "vitest";
import {
  defaultIds,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../../src/simulator/index.js";
import { type DaemonProcess, startDaemonProcess } from "./daemon-process.js";
import { createGitSyncLayout, type GitSyncLayout } from "./git-sync-layout.js";

/**
 * Shared arrangement of the `driftless run` process tests: the simulator in the test process, a
 * git-sync layout holding one ApiKey and two watches, and the daemon pointed at both.
 */

export const ids = defaultIds;
export const KEY_ROUTE = "/v1/organizations/{organizationId}/keys/{keyId}";
export const WEBHOOK_TOKEN = "hook-token-for-tests";

export const apiKey = (name: string) => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci-deployer
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ${name}
  roles: [developer]
  expireAt: "2027-06-30T00:00:00Z"
  ipAccessList:
    - source: 203.0.113.0/24
      description: CI runners
`;

export const WATCHES = `apiVersion: driftless/v1
kind: AlertWatch
metadata:
  name: ingest-lag
spec:
  alertId: ${ids.alertId}
---
apiVersion: driftless/v1
kind: BackupWatch
metadata:
  name: analytics-backups
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  maxAge: 26h
`;

/** The files of a revision whose ApiKey is named `name`. */
export const files = (name: string) => ({ "keys/ci-deployer.yaml": apiKey(name), "watches.yaml": WATCHES });

export type StatusBody = {
  revision: string | null;
  budget: Array<{ api: string; used: number; limit: number; waiting: number }>;
  resources: Array<{
    kind: string;
    name: string;
    status: string;
    lastError: string | null;
    failure?: string;
  }>;
};

export type RunContext = {
  simulator: Simulator;
  root: string;
  layout: GitSyncLayout;
  /** Starts `node dist/cli.js run` on the layout and the simulator; `env` overrides. */
  start(env?: Record<string, string>): Promise<DaemonProcess>;
  /** PATCHes of the ApiKey that the simulator answered with 200. */
  keyPatches(): Simulator["requests"];
};

/**
 * Registers beforeEach/afterEach hooks and returns the context they fill. Needs `dist/` built.
 * `simulator`: options over the default simulator's (the minimal contract, no rate limits).
 */
export function useDaemonRun(simulator: SimulatorOptions = {}): RunContext {
  let daemon: DaemonProcess | undefined;
  const context = {
    async start(env: Record<string, string> = {}) {
      daemon = await startDaemonProcess({
        DRIFTLESS_MANIFESTS: context.layout.link,
        DRIFTLESS_STATE_DIR: join(context.root, "state"),
        DRIFTLESS_SECRETS_DIR: join(context.root, "secrets"),
        DRIFTLESS_MANAGEMENT_URL: context.simulator.managementUrl,
        DRIFTLESS_MANAGEMENT_KEY_ID: ids.managementKeyId,
        DRIFTLESS_MANAGEMENT_KEY_SECRET: ids.managementKeySecret,
        DRIFTLESS_OBSERVABILITY_URL: context.simulator.observabilityUrl,
        DRIFTLESS_OBSERVABILITY_TOKEN: ids.observabilityToken,
        DRIFTLESS_RECONCILE_SCHEDULE: "off",
        DRIFTLESS_POLL_SCHEDULE: "* * * * * *",
        DRIFTLESS_REASSERT_SCHEDULE: "off",
        DRIFTLESS_WEBHOOK_TOKEN: WEBHOOK_TOKEN,
        ...env,
      });
      return daemon;
    },
    keyPatches: () =>
      context.simulator.requests.filter(
        (r) => r.method === "PATCH" && r.route === KEY_ROUTE && r.status === 200,
      ),
  } as RunContext;

  beforeEach(async () => {
    context.simulator = await startSimulator({
      rateLimit: { management: false, observability: false },
      ...simulator,
    });
    context.root = await mkdtemp(join(tmpdir(), "driftless-run-"));
    context.layout = await createGitSyncLayout(join(context.root, "git"), files("ci-deployer"));
  });

  afterEach(async () => {
    await daemon?.stop("SIGKILL");
    daemon = undefined;
    await context.simulator.close();
    await rm(context.root, { recursive: true, force: true });
  });

  return context;
}

/** Tests of another part still import `until` from here; it lives in wait.ts. */
export { until } from "./wait.js";

export const statusOf = async (d: DaemonProcess) =>
  (await (await fetch(`${d.url}/status`)).json()) as StatusBody;
export const metricsOf = async (d: DaemonProcess) => (await fetch(`${d.url}/metrics`)).text();
export const passesFinished = (d: DaemonProcess) => d.logs.filter((l) => l.msg === "pass finished").length;
