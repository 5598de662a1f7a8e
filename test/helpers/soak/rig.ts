import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  defaultFixture,
  defaultIds as ids,
  type Simulator,
  startSimulator,
} from "../../../src/simulator/index.js";
import { type FakeKubernetes, startFakeKubernetes } from "../fake-kubernetes.js";
import { createGitSyncLayout, type GitSyncLayout } from "../git-sync-layout.js";
import { createHttpTestServer, type HttpTestServer } from "../http-test-server.js";
import type { StateSource } from "./invariants.js";
import { KAFKA_PASSWORD_ENV, POSTGRES_PASSWORD_FILE, render, type World } from "./world.js";

/**
 * What the soak's daemon runs against: the simulator (its credentials planted secrets), the fake
 * Kubernetes API for the Kubernetes store, a server that takes the notifications, the git-sync layout,
 * the secrets folder, and the daemon's environment. Every secret planted is kept in `secrets`, by name,
 * for the check that none ever shows.
 */

export type SoakStore = "file" | "kubernetes";
export type Contract = "minimal" | "full";

const NAMESPACE = "driftless-soak";

/** A distinctive secret value: anything that shows it was leaked, never a hash of it. */
const plant = (name: string) => `soak-${name}-${randomBytes(9).toString("hex")}`;

export class SoakRig {
  readonly secrets = new Map<string, string>();

  private constructor(
    readonly sim: Simulator,
    readonly fake: FakeKubernetes | undefined,
    readonly notify: HttpTestServer,
    readonly layout: GitSyncLayout,
    readonly source: StateSource,
    private readonly root: string,
  ) {}

  /** Starts everything for `world` on `store`; the simulator serves `contract` with `seed`. */
  static async create(world: World, store: SoakStore, contract: Contract, seed: number): Promise<SoakRig> {
    const tokens = {
      "management key secret": plant("management-secret"),
      "observability token": plant("observability-token"),
      "webhook token": plant("webhook-token"),
      "status token": plant("status-token"),
      "notification key": plant("notify-secret"),
      "kafka password": plant("kafka-password"),
    };
    const fixture = defaultFixture();
    fixture.keys = fixture.keys?.map((k) =>
      k.id === ids.managementKeyId ? { ...k, secret: tokens["management key secret"] } : k,
    );
    fixture.observabilityTokens = [tokens["observability token"]];
    const sim = await startSimulator({
      contract,
      fixture,
      seed,
      rateLimit: { management: false, observability: false },
      endpointReadyAfterMs: 0,
      recordLimit: 1_000_000,
    });
    const root = await mkdtemp(join(tmpdir(), "driftless-soak-"));
    await mkdir(join(root, "secrets"));
    const notify = await createHttpTestServer();
    const layout = await createGitSyncLayout(join(root, "git"), render(world));
    const fake = store === "kubernetes" ? await startFakeKubernetes() : undefined;
    const source: StateSource = fake
      ? { store: "kubernetes", fake, namespace: NAMESPACE }
      : { store: "file", dir: join(root, "state") };
    const rig = new SoakRig(sim, fake, notify, layout, source, root);
    for (const [name, value] of Object.entries(tokens)) rig.secrets.set(name, value);
    const basic = `${ids.managementKeyId}:${tokens["management key secret"]}`;
    rig.secrets.set("management Basic credentials", Buffer.from(basic).toString("base64"));
    await rig.rotatePostgresPassword();
    return rig;
  }

  /** DRIFTLESS_KEY_SECRETS_DIR: where the keys driftless creates get their id and secret (outside the state). */
  get keySecretsDir(): string {
    return join(this.root, "key-secrets");
  }

  secret(name: string): string {
    return this.secrets.get(name) ?? "";
  }

  /** The environment of `driftless run` (and of `driftless plan` beside it). */
  env(): Record<string, string> {
    const store: Record<string, string> =
      this.source.store === "file"
        ? { DRIFTLESS_STATE_DIR: this.source.dir }
        : {
            DRIFTLESS_STATE_STORE: "kubernetes",
            DRIFTLESS_NAMESPACE: NAMESPACE,
            KUBECONFIG: this.fake?.kubeconfigPath ?? "",
          };
    return {
      DRIFTLESS_MANIFESTS: this.layout.link,
      DRIFTLESS_SECRETS_DIR: join(this.root, "secrets"),
      DRIFTLESS_KEY_SECRETS_DIR: this.keySecretsDir,
      ...store,
      DRIFTLESS_MANAGEMENT_URL: this.sim.managementUrl,
      DRIFTLESS_MANAGEMENT_KEY_ID: ids.managementKeyId,
      DRIFTLESS_MANAGEMENT_KEY_SECRET: this.secret("management key secret"),
      DRIFTLESS_OBSERVABILITY_URL: this.sim.observabilityUrl,
      DRIFTLESS_OBSERVABILITY_TOKEN: this.secret("observability token"),
      DRIFTLESS_RECONCILE_SCHEDULE: "*/2 * * * * *",
      // Poll rounds load the state while passes save; a Kubernetes load is 513 reads, so every 2 s there.
      DRIFTLESS_POLL_SCHEDULE: this.source.store === "file" ? "* * * * * *" : "*/2 * * * * *",
      DRIFTLESS_REASSERT_SCHEDULE: "off",
      // The published contract serves the reads: the read rounds then meet the hostile answers too.
      DRIFTLESS_READS: this.sim.contract === "full" ? "on" : "off",
      DRIFTLESS_WEBHOOK_TOKEN: this.secret("webhook token"),
      DRIFTLESS_STATUS_TOKEN: this.secret("status token"),
      DRIFTLESS_NOTIFY_URL: this.notify.url,
      DRIFTLESS_NOTIFY_SECRET: this.secret("notification key"),
      // Every line the daemon can write is searched for secrets.
      DRIFTLESS_LOG_LEVEL: "debug",
      [KAFKA_PASSWORD_ENV]: this.secret("kafka password"),
    };
  }

  /** Writes a new postgres password the way a mounted Secret changes: a whole new file renamed into place. */
  async rotatePostgresPassword(): Promise<void> {
    const value = plant("postgres-password");
    this.secrets.set(`postgres password ${this.secrets.size}`, value);
    const file = join(this.root, "secrets", POSTGRES_PASSWORD_FILE);
    await writeFile(`${file}.new`, value);
    await rename(`${file}.new`, file);
  }

  async close(): Promise<void> {
    await this.sim.close();
    await this.fake?.close();
    await this.notify.close();
    await rm(this.root, { recursive: true, force: true });
  }
}
