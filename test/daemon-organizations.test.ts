import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { type Simulator, startSimulator } from "../src/simulator/index.js";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";
import {
  ciKey,
  keyIdOf,
  production,
  staging,
  twoOrganizations,
  writeCredentialsDir,
} from "./helpers/two-organizations.js";

/**
 * `driftless run` serving two organizations with a key each (DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR), as a
 * real process against a simulator that refuses each key on the other's organization. Needs dist/ built.
 */

type Status = {
  resources: Array<{ name: string; status: string; organization?: string; lastError: string | null }>;
};

let sim: Simulator;
let root: string;
let daemon: DaemonProcess | undefined;

beforeEach(async () => {
  sim = await startSimulator({
    fixture: twoOrganizations(),
    rateLimit: { management: false, observability: false },
  });
  root = await mkdtemp(join(tmpdir(), "driftless-run-orgs-"));
  await mkdir(join(root, "manifests"));
  await writeFile(join(root, "manifests", "production.yaml"), ciKey("ci-production", production, "ci prod"));
  await writeFile(join(root, "manifests", "staging.yaml"), ciKey("ci-staging", staging, "ci staging"));
});

afterEach(async () => {
  await daemon?.stop("SIGKILL");
  daemon = undefined;
  await sim.close();
  await rm(root, { recursive: true, force: true });
});

function start(): Promise<DaemonProcess> {
  return startDaemonProcess({
    DRIFTLESS_MANIFESTS: join(root, "manifests"),
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: join(root, "secrets"),
    DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
    DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR: join(root, "credentials"),
    DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
    DRIFTLESS_OBSERVABILITY_TOKEN: sim.credentials.observabilityToken,
    DRIFTLESS_RECONCILE_SCHEDULE: "off",
    DRIFTLESS_POLL_SCHEDULE: "off",
    DRIFTLESS_REASSERT_SCHEDULE: "off",
  });
}

const statusOf = async (d: DaemonProcess) => (await (await fetch(`${d.url}/status`)).json()) as Status;

describe("driftless run with a key per organization", () => {
  it("applies each organization with its own key; /status and metrics carry the organization", async () => {
    await writeCredentialsDir(join(root, "credentials"), [production, staging]);

    daemon = await start();
    await daemon.waitForLog((l) => l.msg === "pass finished");
    const status = await statusOf(daemon);
    const metrics = await (await fetch(`${daemon.url}/metrics`)).text();

    expect(
      sim.requests.map((r) => [r.path.split("/")[3], keyIdOf(r.headers.authorization), r.status]).sort(),
    ).toEqual(
      [
        [production.organizationId, production.keyId, 200],
        [staging.organizationId, staging.keyId, 200],
      ].sort(),
    );
    expect(status.resources).toEqual(
      expect.arrayContaining([
        expect.objectContaining({
          name: "ci-production",
          status: "Synced",
          organization: production.organizationId,
        }),
        expect.objectContaining({
          name: "ci-staging",
          status: "Synced",
          organization: staging.organizationId,
        }),
      ]),
    );
    expect(metrics).toContain(
      `driftless_organization_requests_total{organization="${production.organizationId}",code="200"} 1`,
    );
    expect(metrics).toContain(
      `driftless_organization_requests_total{organization="${staging.organizationId}",code="200"} 1`,
    );
  });

  it("picks up an organization's key added to the folder without a restart", async () => {
    await writeCredentialsDir(join(root, "credentials"), [production]);
    daemon = await start();
    await daemon.waitForLog((l) => l.msg === "pass finished");
    const before = await statusOf(daemon);

    await writeCredentialsDir(join(root, "credentials"), [staging]);
    await writeFile(join(root, "manifests", "staging.yaml"), ciKey("ci-staging", staging, "ci staging 2"));
    await daemon.waitForLog(
      (l) => l.msg === "pass finished" && l !== daemon?.logs.find((x) => x.msg === "pass finished"),
    );
    const after = await statusOf(daemon);

    expect(before.resources.find((r) => r.name === "ci-staging")).toMatchObject({
      status: "Failed",
      organization: staging.organizationId,
      lastError: expect.stringContaining(`no management key for organization ${staging.organizationId}`),
    });
    expect(after.resources.find((r) => r.name === "ci-staging")).toMatchObject({ status: "Synced" });
    // A retry pass may send the first name before the watch's pass sends the second: one key either way.
    expect(
      new Set(
        sim.requests
          .filter((r) => r.path.includes(staging.organizationId))
          .map((r) => keyIdOf(r.headers.authorization)),
      ),
    ).toEqual(new Set([staging.keyId]));
  });
});
