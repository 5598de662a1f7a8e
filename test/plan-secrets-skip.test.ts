import { spawn } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";
import { driftless, repo } from "./helpers/cli.js";
import { platformEnv } from "./helpers/platform-env.js";

/**
 * The state-based plan in a CI job that has no secret: `--secrets skip` reads none and marks secret
 * fields `(not compared)`, and a plan on an empty state says that it only shows first contacts.
 */

const CANARY = "skip-canary-4b3a2918";

const pipe = (username: string) => `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: orders
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: ${ids.kafkaPipeId}
  name: orders
  source:
    kafka:
      credentials:
        username: ${username}
        password: {fromEnv: ORDERS_PASSWORD}
`;

/** The built CLI as a child that does not block this process (the simulator answers from it). */
function runAsync(
  args: string[],
  env: Record<string, string>,
): Promise<{ code: number | null; stdout: string }> {
  return new Promise((resolve) => {
    const child = spawn(process.execPath, [join(repo, "dist", "cli.js"), ...args], {
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "ignore"],
    });
    let stdout = "";
    child.stdout.on("data", (chunk) => {
      stdout += chunk;
    });
    child.on("close", (code) => resolve({ code, stdout }));
  });
}

describe("driftless plan --secrets skip (built CLI)", () => {
  let root: string;
  let settings: Record<string, string>;

  beforeEach(async () => {
    root = await mkdtemp(join(tmpdir(), "driftless-skip-"));
    await mkdir(join(root, "manifests"));
    await writeFile(join(root, "manifests", "pipe.yaml"), pipe("orders-one"));
    settings = { DRIFTLESS_MANIFESTS: join(root, "manifests"), DRIFTLESS_STATE_DIR: join(root, "state") };
  });
  afterEach(async () => {
    await rm(root, { recursive: true, force: true });
  });

  it("on an empty state without the secret: exit 2, (not compared), and a loud first-contact notice", () => {
    const withoutSkip = driftless(["plan"], settings);
    const text = driftless(["plan", "--secrets", "skip"], settings);
    const json = driftless(["plan", "-o", "json"], { ...settings, DRIFTLESS_SECRETS_MODE: "skip" });

    expect(withoutSkip.code).toBe(1);
    expect(text.code).toBe(2);
    expect(text.stdout).toMatch(
      /^NOTE: the state holds no record: every resource is planned as a first contact\. The daemon's state is not available here/m,
    );
    expect(text.stdout).toMatch(/^NOTE: secret values were not read \(--secrets skip\)/m);
    expect(text.stdout).toContain("      source.kafka.credentials.password: (not compared)\n");
    const doc = JSON.parse(json.stdout);
    expect(doc).toMatchObject({
      formatVersion: 1,
      mode: "state",
      firstContact: true,
      secrets: "skip",
      exitCode: 2,
    });
    // After the one that says the built-in simulator is the platform.
    expect(doc.notices[1]).toContain("every resource is planned as a first contact");
    expect(doc.resources[0].request.body.source.kafka.credentials.password).toBe("(not compared)");
  });

  describe("after an apply with the secret", () => {
    let sim: Simulator;
    let env: Record<string, string>;

    beforeEach(async () => {
      sim = await startSimulator({ endpointReadyAfterMs: 0 });
      env = {
        ...settings,
        ...platformEnv(sim),
      };
      const applied = await runAsync(["apply"], { ...env, ORDERS_PASSWORD: CANARY });
      expect(applied.code).toBe(0);
    });
    afterEach(async () => {
      await sim.close();
    });

    it("plans nothing for an unchanged resource, and marks the secret of a changed one (not compared)", async () => {
      const unchanged = driftless(["plan", "--secrets", "skip"], settings);
      await writeFile(join(root, "manifests", "pipe.yaml"), pipe("orders-two"));
      const changed = driftless(["plan", "--secrets", "skip"], settings);

      expect(unchanged.code).toBe(0);
      expect(unchanged.stdout).not.toContain("first contact");
      expect(changed.code).toBe(2);
      expect(changed.stdout).toContain(
        '      source.kafka.credentials.username: "orders-one" -> "orders-two"\n',
      );
      expect(changed.stdout).toContain("      source.kafka.credentials.password: (not compared)\n");
      expect(unchanged.stdout + changed.stdout).not.toContain(CANARY);
    });
  });
});
