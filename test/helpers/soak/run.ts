import { writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { setTimeout as sleep } from "node:timers/promises";
import { seededRandom } from "../../../src/simulator/faults.js";
import type { State } from "../../../src/state/store.js";
import { SoakDaemon } from "./daemon.js";
import { between, type Random, type StateFacts } from "./edits.js";
import type { FaultCounts, LatencyBook } from "./faults.js";
import {
  checkFailures,
  checkNoSecret,
  checkTileIds,
  factsOf,
  forgotten,
  heldObjects,
  loadState,
  stateTexts,
} from "./invariants.js";
import {
  checkCreates,
  checkDeletes,
  checkKeyTargets,
  keyPairs,
  type Life,
  PlatformLedger,
} from "./lifecycle.js";
import { quietPhase } from "./quiet.js";
import { type Contract, SoakRig, type SoakStore } from "./rig.js";
import { performStep } from "./steps.js";
import { initialWorld, owned, type World } from "./world.js";

/**
 * The fault soak: the built daemon against the simulator (and, for the Kubernetes store, the fake
 * Kubernetes API) while seeded random steps (steps.ts) kill it (now and then between a create's POST
 * and its save), inject the platform's and the API server's faults, swap git-sync's link (now and then
 * to a checkout that comes up empty), edit the manifests (objects to create added and removed, renames
 * included), rotate a secret, run `driftless plan` beside it and play the operator who settles an
 * Unknown create; after every step the invariants are checked (invariants.ts, lifecycle.ts), and a
 * last quiet phase checks that every resource ends Synced or says why (quiet.ts). A failure throws
 * with the seed, the steps so far and how to replay them.
 */

export type { SoakStore } from "./rig.js";

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
  contract: Contract;
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
  unknownWithoutCreate: number;
  stepList: string[];
};

export class FaultSoak {
  readonly world: World;
  readonly contract: Contract;
  readonly counts: FaultCounts = {};
  readonly latency: LatencyBook = { maxMs: 0 };
  /** Allowances to create again the operator gave, by the identity of the object (lifecycle.ts). */
  readonly allowances = new Map<string, number>();
  /** Since when the state says an object's policy keeps it (orphan), by identity: no delete after that. */
  readonly keptSince = new Map<string, number>();
  /** The operator's `driftless apply --allow-deletes` runs, each a driftless that may delete. */
  readonly operatorRuns: Life[] = [];
  /** The first id the state saved for each tile, by tile number. */
  readonly learnedTiles = new Map<number, string>();
  readonly steps: string[] = [];
  readonly operatorLog: string[] = [];
  /** What the last load of the state held. */
  facts: StateFacts = { records: {} };
  /** The operator's DRIFTLESS_ALLOW_CREATE, and how many more starts keep it. */
  allowance: { value: string; restartsLeft: number } | undefined;
  edits = 0;
  renames = 0;
  /** Unknown endpoints the operator met whose create never reached the platform (see operator.ts). */
  unknownWithoutCreate = 0;
  rig!: SoakRig;
  daemon!: SoakDaemon;
  ledger!: PlatformLedger;
  /** The quiet phase: its daemons delete with the defaults (DRIFTLESS_PRUNE on, the default guard). */
  quiet = false;
  private readonly started = performance.now();

  constructor(readonly options: SoakOptions) {
    this.contract = seededRandom(options.seed)() < 0.5 ? "minimal" : "full";
    // Keys, pipes and dashboards are created through the published contract only.
    this.world = initialWorld(options.seed, this.contract === "full");
  }

  async setUp(): Promise<void> {
    this.rig = await SoakRig.create(this.world, this.options.store, this.contract, this.options.seed);
    this.ledger = new PlatformLedger(this.rig.sim);
    this.daemon = new SoakDaemon(
      () => ({ ...this.rig.env(), ...this.deleteSettings() }),
      this.rig.secret("status token"),
    );
  }

  /**
   * The delete settings of the next start, drawn anew at each (an operator may change them between
   * two): a guard of 2 to 8 deletes a pass, and one start in seven with DRIFTLESS_PRUNE=off.
   */
  private deleteSettings(): Record<string, string> {
    if (this.quiet) return {};
    const random = this.randomOf(-1000 - this.daemon.starts);
    const maxDeletes = String(between(random, 2, 8));
    return random() < 1 / 7
      ? { DRIFTLESS_MAX_DELETES: maxDeletes, DRIFTLESS_PRUNE: "off" }
      : { DRIFTLESS_MAX_DELETES: maxDeletes };
  }

  /** Every driftless that may have sent a delete, in the order they started. */
  lives(): Life[] {
    return [...this.daemon.lives, ...this.operatorRuns].sort((a, b) => a.startedAt - b.startedAt);
  }

  async tearDown(): Promise<void> {
    await this.daemon?.stop("SIGKILL").catch(() => undefined);
    await this.rig?.close();
  }

  log(step: string): void {
    this.steps.push(`${String(this.steps.length).padStart(4)} +${this.elapsed().toFixed(1)}s ${step}`);
  }

  elapsed(): number {
    return (performance.now() - this.started) / 1000;
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
      this.log(await performStep(this, this.randomOf(step)));
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

  /** The operator's allowance for this start, while it is left set; counts the start. */
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
    const { sim, secrets, source, notify } = this.rig;
    this.daemon.checkAlive();
    const output = this.daemon.newOutput();
    // Each key's target is written before its create: read after the platform's keys, it holds them all.
    const keys = [...sim.state.keys];
    const pairs = await keyPairs(this.rig.keySecretsDir);
    for (const pair of pairs) secrets.set(`secret of the created key in ${pair.file}`, pair.keySecret);
    const state = await this.loadRemembering();
    this.facts = factsOf(state);
    this.noteKept();
    checkCreates(sim, this.ledger, owned(this.world), this.allowances, this.contract === "full");
    checkDeletes(sim.requests, this.ledger, this.lives(), this.keptSince);
    checkKeyTargets(keys, pairs);
    checkTileIds(sim, this.world, state, this.learnedTiles);
    checkNoSecret("the daemon's output", output, secrets);
    checkFailures(this.daemon.newLogLines());
    for (const [where, text] of await stateTexts(source)) checkNoSecret(where, text, secrets);
    if (this.daemon.running) {
      for (const [where, text] of await this.daemon.pages()) checkNoSecret(where, text, secrets);
    }
    for (const request of notify.requests) {
      checkNoSecret(`a notification (${request.url})`, request.body, secrets);
    }
  }

  /**
   * Notes the objects whose policy the state says keeps them: annotated orphan from their first
   * manifest, or (an endpoint an operator adopted by id) from the first load whose record says orphan.
   */
  private noteKept(): void {
    for (const o of owned(this.world)) {
      if (this.keptSince.has(o.identity)) continue;
      if (o.orphan) this.keptSince.set(o.identity, 0);
      else if (o.names.some((name) => this.facts.records[`${o.kind}/${name}`]?.deletionPolicy === "orphan"))
        this.keptSince.set(o.identity, Date.now());
    }
  }

  /**
   * The state, loaded after the platform was read, that must remember every endpoint the platform
   * holds and every tile id learned (invariants.ts, forgotten): a load that misses one is made again
   * twice, 300 ms apart, and a miss in all three is a broken invariant.
   */
  private async loadRemembering(): Promise<State> {
    let problems: string[] = [];
    for (let attempt = 1; attempt <= 3; attempt++) {
      const held = heldObjects(this.ledger, this.world);
      const state = await loadState(this.rig.source);
      problems = forgotten(held, this.world, state, this.learnedTiles);
      if (problems.length === 0) return state;
      await sleep(300);
    }
    throw new Error(`the state forgot what it must keep, in three loads: ${problems.join("; ")}`);
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
      unknownWithoutCreate: this.unknownWithoutCreate,
      stepList: this.steps,
    };
  }

  /**
   * What a failure says: the seed, how to replay it, the steps, the daemon's last words; the whole step
   * list and every line the daemons wrote are kept in a file it names.
   */
  async failure(error: unknown): Promise<Error> {
    const { seed, store, testFile } = this.options;
    const step = Math.max(0, this.steps.length - 1);
    const said = `fault soak failed: seed ${seed}, ${store} store, ${this.contract} contract, at step ${step}: ${(error as Error).message}`;
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
        `replay: npm run build && SOAK_SEED=${seed} SOAK_STEPS=${step} npx vitest run ${testFile}`,
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
