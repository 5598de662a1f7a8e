import { randomBytes } from "node:crypto";
import { mkdir, mkdtemp, rename, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { seededRandom } from "../../../src/simulator/faults.js";
import {
  defaultFixture,
  defaultIds as ids,
  type Simulator,
  startSimulator,
} from "../../../src/simulator/index.js";
import { driftlessAsync } from "../cli.js";
import { type FakeKubernetes, startFakeKubernetes } from "../fake-kubernetes.js";
import { createGitSyncLayout, type GitSyncLayout } from "../git-sync-layout.js";
import { createHttpTestServer, type HttpTestServer } from "../http-test-server.js";
import { SoakDaemon } from "./daemon.js";
import { between, editWorld, type Random, type StateFacts } from "./edits.js";
import { type FaultCounts, injectKubernetesFault, injectPlatformFault, type LatencyBook } from "./faults.js";
import {
  checkNoDuplicateCreate,
  checkNoSecret,
  checkTileIds,
  factsOf,
  loadState,
  type StateSource,
  stateTexts,
} from "./invariants.js";
import { operateOnUnknown } from "./operator.js";
import { quietPhase } from "./quiet.js";
import { initialWorld, KAFKA_PASSWORD_ENV, POSTGRES_PASSWORD_FILE, render, type World } from "./world.js";

/**
 * The fault soak: the built daemon against the simulator (and, for the Kubernetes store, the fake
 * Kubernetes API) while seeded random steps kill it, inject the platform's and the API server's faults,
 * swap git-sync's link, edit the manifests (renames included), rotate a secret and play the operator
 * who settles an Unknown create; after every step the invariants are checked (invariants.ts), and a
 * last quiet phase checks that every resource ends Synced or says why (quiet.ts). A failure throws
 * with the seed, the steps so far and how to replay them.
 */

export type SoakStore = "file" | "kubernetes";

export type SoakOptions = {
  seed: number;
  store: SoakStore;
  /** How long the faults last, in real seconds (steps are drawn until then); ignored with `steps`. */
  seconds: number;
  /** Exactly this many steps, whatever the time (to replay a failure's steps). */
  steps?: number;
  /** The test file, for the replay command. */
  testFile: string;
};

export type SoakReport = {
  seed: number;
  store: SoakStore;
  contract: "minimal" | "full";
  steps: number;
  faultSeconds: number;
  totalSeconds: number;
  faults: FaultCounts;
  kills: number;
  starts: number;
  edits: number;
  renames: number;
  passes: number;
  operator: string[];
  stepList: string[];
};

const NAMESPACE = "driftless-soak";

/** The weights of the step kinds; `kubernetes` is a wait on the file store. */
const STEP_KINDS: Array<[string, number]> = [
  ["wait", 24],
  ["edit", 18],
  ["swap", 5],
  ["webhook", 3],
  ["kill", 9],
  ["platform", 20],
  ["kubernetes", 12],
  ["operator", 4],
  ["rotate", 3],
  ["plan", 3],
];

function drawKind(random: Random): string {
  const total = STEP_KINDS.reduce((sum, [, weight]) => sum + weight, 0);
  let roll = random() * total;
  for (const [kind, weight] of STEP_KINDS) {
    roll -= weight;
    if (roll < 0) return kind;
  }
  return "wait";
}

/** A distinctive secret value: anything that shows it was leaked, never a hash of it. */
const plant = (name: string) => `soak-${name}-${randomBytes(9).toString("hex")}`;

export class FaultSoak {
  readonly world: World;
  readonly counts: FaultCounts = {};
  readonly latency: LatencyBook = { maxMs: 0 };
  readonly allowances = new Map<number, number>();
  readonly learnedTiles = new Map<number, string>();
  readonly secrets = new Map<string, string>();
  readonly steps: string[] = [];
  readonly operatorLog: string[] = [];
  facts: StateFacts = { records: {} };
  /** Restarts left before the operator takes an allowance away (DRIFTLESS_ALLOW_CREATE). */
  allowance: { value: string; restartsLeft: number } | undefined;
  edits = 0;
  renames = 0;
  private readonly started = performance.now();

  sim!: Simulator;
  fake: FakeKubernetes | undefined;
  notify!: HttpTestServer;
  layout!: GitSyncLayout;
  daemon!: SoakDaemon;
  source!: StateSource;
  private root!: string;
  private secretsDir!: string;
  private kafkaPassword = plant("kafka-password");
  readonly contract: "minimal" | "full";

  constructor(readonly options: SoakOptions) {
    this.world = initialWorld(options.seed);
    this.contract = seededRandom(options.seed)() < 0.5 ? "minimal" : "full";
  }

  log(step: string): void {
    this.steps.push(`${String(this.steps.length).padStart(4)} +${this.elapsed().toFixed(1)}s ${step}`);
  }

  elapsed(): number {
    return (performance.now() - this.started) / 1000;
  }

  async setUp(): Promise<void> {
    const management = plant("management-secret");
    const observability = plant("observability-token");
    const fixture = defaultFixture();
    fixture.keys = fixture.keys?.map((k) =>
      k.id === ids.managementKeyId ? { ...k, secret: management } : k,
    );
    fixture.observabilityTokens = [observability];
    this.sim = await startSimulator({
      contract: this.contract,
      fixture,
      seed: this.options.seed,
      rateLimit: { management: false, observability: false },
      endpointReadyAfterMs: 0,
      recordLimit: 1_000_000,
    });
    this.root = await mkdtemp(join(tmpdir(), "driftless-soak-"));
    this.secretsDir = join(this.root, "secrets");
    await mkdir(this.secretsDir);
    await this.rotatePostgresPassword();
    this.notify = await createHttpTestServer();
    this.layout = await createGitSyncLayout(join(this.root, "git"), render(this.world));
    if (this.options.store === "kubernetes") {
      this.fake = await startFakeKubernetes();
      this.source = { store: "kubernetes", fake: this.fake, namespace: NAMESPACE };
    } else {
      this.source = { store: "file", dir: join(this.root, "state") };
    }
    const tokens = {
      "management key secret": management,
      "management Basic credentials": Buffer.from(`${ids.managementKeyId}:${management}`).toString("base64"),
      "observability token": observability,
      "webhook token": plant("webhook-token"),
      "status token": plant("status-token"),
      "notification key": plant("notify-secret"),
    };
    for (const [name, value] of Object.entries(tokens)) this.secrets.set(name, value);
    this.secrets.set("kafka password", this.kafkaPassword);
    this.daemon = new SoakDaemon(() => this.env(), tokens["status token"]);
  }

  private env(): Record<string, string> {
    const secret = (name: string) => this.secrets.get(name) ?? "";
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
      DRIFTLESS_SECRETS_DIR: this.secretsDir,
      ...store,
      DRIFTLESS_MANAGEMENT_URL: this.sim.managementUrl,
      DRIFTLESS_MANAGEMENT_KEY_ID: ids.managementKeyId,
      DRIFTLESS_MANAGEMENT_KEY_SECRET: secret("management key secret"),
      DRIFTLESS_OBSERVABILITY_URL: this.sim.observabilityUrl,
      DRIFTLESS_OBSERVABILITY_TOKEN: secret("observability token"),
      DRIFTLESS_RECONCILE_SCHEDULE: "*/2 * * * * *",
      // Poll rounds load the state while passes save; a Kubernetes load is 513 reads, so every 2 s there.
      DRIFTLESS_POLL_SCHEDULE: this.source.store === "file" ? "* * * * * *" : "*/2 * * * * *",
      DRIFTLESS_REASSERT_SCHEDULE: "off",
      DRIFTLESS_WEBHOOK_TOKEN: secret("webhook token"),
      DRIFTLESS_STATUS_TOKEN: secret("status token"),
      DRIFTLESS_NOTIFY_URL: this.notify.url,
      DRIFTLESS_NOTIFY_SECRET: secret("notification key"),
      DRIFTLESS_LOG_LEVEL: "debug",
      [KAFKA_PASSWORD_ENV]: this.kafkaPassword,
    };
  }

  /** Writes a new postgres password the way a mounted Secret changes: a whole new file renamed into place. */
  async rotatePostgresPassword(): Promise<string> {
    const value = plant("postgres-password");
    this.secrets.set(`postgres password ${this.secrets.size}`, value);
    const file = join(this.secretsDir, POSTGRES_PASSWORD_FILE);
    await writeFile(`${file}.new`, value);
    await rename(`${file}.new`, file);
    return value;
  }

  async tearDown(): Promise<void> {
    await this.daemon?.stop("SIGKILL").catch(() => undefined);
    await this.sim?.close();
    await this.fake?.close();
    await this.notify?.close();
    if (this.root) await rm(this.root, { recursive: true, force: true });
  }

  /** The random draws of step `n`: its own generator, so a step's draws never depend on the ones before. */
  randomOf(step: number): Random {
    return seededRandom((this.options.seed * 1_000_003 + step * 7919) >>> 0);
  }

  async run(): Promise<SoakReport> {
    await this.daemon.start();
    this.log("daemon started");
    await this.check();
    const faultEnd = performance.now() + this.options.seconds * 1000;
    let step = 1;
    for (; this.more(step, faultEnd); step++) {
      const random = this.randomOf(step);
      const kind = drawKind(random);
      this.log(await this.perform(kind, random));
      await this.check();
    }
    const faultSeconds = this.elapsed();
    await quietPhase(this);
    return this.report(step - 1, faultSeconds);
  }

  private more(step: number, faultEnd: number): boolean {
    if (this.options.steps !== undefined) return step <= this.options.steps;
    return performance.now() < faultEnd;
  }

  private async perform(kind: string, random: Random): Promise<string> {
    switch (kind) {
      case "edit":
        return this.edit(random);
      case "swap":
        await this.layout.publish(render(this.world));
        return `link swapped to ${this.layout.revision} (same manifests)`;
      case "webhook": {
        await this.layout.publish(render(this.world));
        const answer = await this.daemon.hook(this.secrets.get("webhook token") ?? "", this.layout.revision);
        return `link swapped to ${this.layout.revision}, webhook answered ${answer || "(no daemon)"}`;
      }
      case "kill":
        return this.kill(random);
      case "platform":
        return injectPlatformFault(this.sim, random, this.counts, this.latency);
      case "kubernetes":
        if (!this.fake) return this.wait(random);
        return injectKubernetesFault(this.fake, random, this.counts);
      case "operator":
        return operateOnUnknown(this, random);
      case "rotate":
        await this.rotatePostgresPassword();
        return "postgres password rotated (its file replaced)";
      case "plan":
        return this.planBeside();
      default:
        return this.wait(random);
    }
  }

  private async wait(random: Random): Promise<string> {
    const ms = between(random, 2, 20) * 100;
    await sleep(ms);
    return `waited ${ms} ms`;
  }

  private async edit(random: Random): Promise<string> {
    const done = editWorld(this.world, random, this.facts);
    this.edits += 1;
    this.renames += done.filter((d) => d.includes(" renamed to ")).length;
    await this.layout.publish(render(this.world));
    return `edit → ${this.layout.revision}: ${done.join("; ")}`;
  }

  private async kill(random: Random): Promise<string> {
    const afterMs = between(random, 0, 12) * 50;
    const graceful = random() < 0.15;
    const restartMs = between(random, 0, 8) * 100;
    await sleep(afterMs);
    await this.daemon.stop(graceful ? "SIGTERM" : "SIGKILL");
    await sleep(restartMs);
    const extra = this.allowanceEnv();
    await this.daemon.start(extra);
    return `${graceful ? "SIGTERM" : "SIGKILL"} after ${afterMs} ms, restarted ${restartMs} ms later${extra.DRIFTLESS_ALLOW_CREATE ? ` (still allowed: ${extra.DRIFTLESS_ALLOW_CREATE})` : ""}`;
  }

  /**
   * `driftless plan` beside the running daemon, on the same state (read-only, no lock), as a person
   * checking a change would: it must answer a plan (0 or 2) or say what fails (1), never write, and
   * print no secret.
   */
  private async planBeside(): Promise<string> {
    const { DRIFTLESS_LOG_LEVEL: _level, ...env } = this.env();
    const plan = await driftlessAsync(["plan", "--output", "json"], env);
    checkNoSecret("driftless plan's output", `${plan.stdout}\n${plan.stderr}`, this.secrets);
    if (plan.code === 0 || plan.code === 2) {
      const { summary } = JSON.parse(plan.stdout) as { summary: Record<string, number> };
      return `driftless plan beside the daemon: exit ${plan.code}, ${JSON.stringify(summary)}`;
    }
    if (plan.code === 1 && plan.stdout.startsWith("{"))
      return "driftless plan beside the daemon: exit 1 (a resource it cannot plan)";
    throw new Error(`driftless plan beside the daemon exited ${plan.code}: ${plan.stderr.slice(-2000)}`);
  }

  /** The operator's allowance for this start, while it is left set; counts the restart. */
  allowanceEnv(): Record<string, string> {
    const held = this.allowance;
    if (!held) return {};
    if (held.restartsLeft <= 0) {
      this.allowance = undefined;
      return {};
    }
    held.restartsLeft -= 1;
    return { DRIFTLESS_ALLOW_CREATE: held.value };
  }

  /** The invariants after a step; throws what broke. */
  async check(): Promise<void> {
    this.daemon.checkAlive();
    const state = await loadState(this.source);
    this.facts = factsOf(state);
    checkNoDuplicateCreate(this.sim, this.world, this.allowances);
    checkTileIds(this.sim, this.world, state, this.learnedTiles);
    checkNoSecret("the daemon's output", this.daemon.newOutput(), this.secrets);
    for (const [where, text] of await stateTexts(this.source)) checkNoSecret(where, text, this.secrets);
    if (this.daemon.running) {
      for (const [where, text] of await this.daemon.pages()) checkNoSecret(where, text, this.secrets);
    }
    for (const request of this.notify.requests) {
      checkNoSecret(`a notification (${request.url})`, request.body, this.secrets);
    }
  }

  private report(steps: number, faultSeconds: number): SoakReport {
    return {
      seed: this.options.seed,
      store: this.options.store,
      contract: this.contract,
      steps,
      faultSeconds: Math.round(faultSeconds),
      totalSeconds: Math.round(this.elapsed()),
      faults: this.counts,
      kills: this.daemon.kills,
      starts: this.daemon.starts,
      edits: this.edits,
      renames: this.renames,
      passes: this.daemon.passes(),
      operator: this.operatorLog,
      stepList: this.steps,
    };
  }

  /**
   * What a failure says: the seed, how to replay it, the steps, the daemon's last words; the whole step
   * list and every line the daemons wrote are kept in a file it names.
   */
  async failure(error: unknown): Promise<Error> {
    const { seed, store, testFile } = this.options;
    const replay = `SOAK_SEED=${seed} SOAK_STEPS=${Math.max(0, this.steps.length - 1)} npx vitest run ${testFile}`;
    const said = `fault soak failed: seed ${seed}, ${store} store, ${this.contract} contract, at step ${this.steps.length - 1}: ${(error as Error).message}`;
    const kept = join(tmpdir(), `driftless-soak-failure-${store}-${seed}.log`);
    const everything = [
      said,
      "steps:",
      ...this.steps,
      "the daemons' output:",
      this.daemon?.allOutput() ?? "",
    ];
    const where = await writeFile(kept, everything.join("\n")).then(
      () => `the whole step list and the daemons' output: ${kept}`,
      () => "",
    );
    return new Error(
      [
        said,
        `replay: npm run build && ${replay}`,
        where,
        "steps:",
        ...this.steps.slice(-150),
        "the daemon's last log lines:",
        this.daemon?.tail() ?? "",
      ].join("\n"),
      { cause: error },
    );
  }
}

/** Runs one soak from set-up to tear-down; throws the soak's failure (seed, steps, replay). */
export async function runFaultSoak(options: SoakOptions): Promise<SoakReport> {
  const soak = new FaultSoak(options);
  try {
    await soak.setUp();
    return await soak.run();
  } catch (error) {
    throw await soak.failure(error);
  } finally {
    await soak.tearDown();
  }
}
