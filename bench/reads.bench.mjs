// Reads under the default rate budget (DRIFTLESS_READS=on), beside the writes' latency in the same run:
// 1. a full round of reads of 1,000 and 10,000 resources of one management key, as the daemon's read
//    rounds pick them (daemon/drift-schedule.js: round-robin, at most DEFAULT_READ_CAPS per key per poll,
//    spread evenly over SPREAD of the poll period, at the budget's lowest priority, within what its read
//    headroom leaves): reads per poll round and the time until every resource was read once, beside the
//    bound the budget sets;
// 2. changes from git arriving meanwhile: the wait from the change to its request being sent, p50 /
//    p99, with reads on and with reads off (the same arrivals), and beside the same rounds sent at once
//    (four at a time: what the rounds did before they were spread, which kept changes waiting before the
//    read headroom);
// 3. bursts of 3, 6 and 9 changes at once (a commit that changes several resources of a key) during the
//    reads of 1,000 resources: the wait of each change, with reads on, with the reads of before the read
//    headroom (25 a round, taking any slot of the window), and with reads off.
// The budget is the daemon's own (platform/budget.js, MANAGEMENT_BUDGET with DAEMON_READ_HEADROOM) on a virtual clock: every timer
// the budget arms is run in order at its time, so hours of rounds take seconds and every figure is the
// same in every run. Each request's answer takes ANSWER_MS. The figure is the budget's part of the
// change → request latency (the daemon's own part is in daemon.bench.mjs: about 150 ms).
import { dist } from "./dist.mjs";

const { createBudget, DAEMON_READ_HEADROOM, MANAGEMENT_BUDGET: BUDGET } = await dist("platform/budget.js");
/** The daemon's management budget: its reads leave the read headroom to changes from git. */
const MANAGEMENT_BUDGET = { ...BUDGET, readHeadroom: DAEMON_READ_HEADROOM.management };
/** The reads' budget and caps of before the read headroom: any slot of the window, 25 a round. */
const BEFORE = {
  budget: BUDGET,
  caps: { management: 25, observability: 40 },
};
const { pickRound, DEFAULT_READ_CAPS } = await dist("daemon/drift-schedule.js");
const { seededRandom } = await dist("simulator/faults.js");

const ANSWER_MS = 150;
const POLL_MS = 60_000;
/** The part of the poll period a round's reads are spread over (daemon/daemon.js: spreadMs). */
const SPREAD = 0.8;
/** Reads made at once within a round (the read rounds' default concurrency). */
const READERS = 4;
/** One change from git on average this often, at seeded random times (a busy team). */
const CHANGE_EVERY_MS = 30_000;
const CHANGES = process.env.BENCH_QUICK ? 60 : 200;

/** A virtual clock: setTimeout and clearTimeout replaced by a queue run in time order. */
function virtualTime() {
  const clock = { now: 0 };
  /** @type {Array<{ at: number; seq: number; fn: () => void }>} */
  let timers = [];
  let seq = 0;
  const real = { setTimeout: globalThis.setTimeout, clearTimeout: globalThis.clearTimeout };
  /** @param {() => void} fn @param {number} [ms] */
  const set = (fn, ms = 0) => {
    const timer = { at: clock.now + Math.max(0, ms), seq: ++seq, fn };
    timers.push(timer);
    return timer;
  };
  /** @param {unknown} timer */
  const clear = (timer) => {
    timers = timers.filter((t) => t !== timer);
  };
  Object.assign(globalThis, { setTimeout: set, clearTimeout: clear });
  /** @param {number} ms */
  const sleep = (ms) => new Promise((resolve) => set(() => resolve(undefined), ms));
  /** Runs every timer in time order until none is left, letting promises settle in between. */
  const run = async () => {
    for (;;) {
      await new Promise((resolve) => setImmediate(resolve));
      if (timers.length === 0) return;
      timers.sort((a, b) => a.at - b.at || a.seq - b.seq);
      const next = /** @type {{ at: number; fn: () => void }} */ (timers.shift());
      clock.now = Math.max(clock.now, next.at);
      next.fn();
    }
  };
  const restore = () => Object.assign(globalThis, real);
  return { clock, sleep, run, restore };
}

/** @param {number[]} values @param {number} q */
const quantile = (values, q) => {
  const sorted = [...values].sort((a, b) => a - b);
  return sorted.length === 0 ? 0 : (sorted[Math.min(sorted.length - 1, Math.floor(q * sorted.length))] ?? 0);
};

/**
 * Reads of `resources` (0: reads off) in the daemon's rounds, every POLL_MS until each was read once,
 * while the changes arrive at `arrivals`. `spaced`: a round's reads start evenly over the poll period
 * instead of all at once (four at a time). `reads`: the budget and the caps (default the daemon's).
 * @param {number} resources @param {number[]} arrivals @param {boolean} spaced
 * @param {{ budget: import("../src/platform/budget.js").BudgetOptions; caps: typeof DEFAULT_READ_CAPS }} [reads]
 */
async function round(
  resources,
  arrivals,
  spaced,
  reads = { budget: MANAGEMENT_BUDGET, caps: DEFAULT_READ_CAPS },
) {
  const time = virtualTime();
  try {
    const budget = createBudget({ ...reads.budget, monotonic: () => time.clock.now });
    const readable = Array.from({ length: resources }, (_, i) => ({
      kind: "ApiKey",
      name: `r-${String(i).padStart(5, "0")}`,
      organization: "one-key",
    }));
    /** @type {number[]} */
    const readGrants = [];
    /** @type {number[]} */
    const changeWaits = [];
    let roundEnd = 0;
    const read = async () => {
      const release = await budget.acquire("read");
      readGrants.push(time.clock.now);
      await time.sleep(ANSWER_MS);
      release();
      if (readGrants.length === resources) roundEnd = time.clock.now;
    };
    /** One poll's reads: the round's pick, four at once or spaced over the period. @param {number} count */
    const poll = async (count) => {
      if (spaced) {
        await Promise.all(
          Array.from({ length: count }, (_, i) => time.sleep((i * SPREAD * POLL_MS) / count).then(read)),
        );
        return;
      }
      let next = 0;
      const worker = async () => {
        while (next < count) {
          next++;
          await read();
        }
      };
      await Promise.all(Array.from({ length: READERS }, worker));
    };
    const polls = async () => {
      /** @type {Map<string, string>} */
      let cursors = new Map();
      /** @type {Promise<void>[]} */
      const rounds = [];
      for (let picked = 0; picked < resources; ) {
        const pick = pickRound(readable, cursors, reads.caps);
        cursors = pick.cursors;
        const count = Math.min(pick.picked.length, resources - picked);
        picked += count;
        rounds.push(poll(count));
        await time.sleep(POLL_MS);
      }
      await Promise.all(rounds);
    };
    /** @param {number} at */
    const change = async (at) => {
      await time.sleep(at);
      const release = await budget.acquire("change");
      changeWaits.push(time.clock.now - at);
      await time.sleep(ANSWER_MS);
      release();
    };
    const work = [polls(), ...arrivals.map(change)];
    await time.run();
    await Promise.all(work);
    return { readGrants, changeWaits, roundEnd };
  } finally {
    time.restore();
  }
}

/** Reads granted in each poll interval of the round, as min / median. @param {number[]} grants @param {number} end */
function perPoll(grants, end) {
  const counts = Array.from({ length: Math.max(1, Math.floor(end / POLL_MS)) }, () => 0);
  for (const at of grants) {
    const index = Math.floor(at / POLL_MS);
    if (index < counts.length) counts[index] = (counts[index] ?? 0) + 1;
  }
  return { min: Math.min(...counts), median: quantile(counts, 0.5) };
}

/** @param {number} ms */
const duration = (ms) =>
  ms >= 3_600_000
    ? `${(ms / 3_600_000).toFixed(2)} h`
    : ms >= 60_000
      ? `${(ms / 60_000).toFixed(1)} min`
      : `${(ms / 1000).toFixed(2)} s`;

const random = seededRandom(22);
const { requests, windowMs } = MANAGEMENT_BUDGET;
/** A read holds its slot from its grant to `windowMs` after its answer, among the slots reads may take. */
const perRequestMs = (windowMs + ANSWER_MS) / (requests - (MANAGEMENT_BUDGET.readHeadroom ?? 0));

console.log(
  `management budget: ${requests} requests per ${windowMs / 1000} s window (counted to the answer), of which reads take at most ${requests - (MANAGEMENT_BUDGET.readHeadroom ?? 0)}; answers in ${ANSWER_MS} ms; read rounds every ${POLL_MS / 1000} s of at most ${DEFAULT_READ_CAPS.management} reads per management key`,
);
console.log(
  "| resources | reads | reads per poll round (min / median) | every resource read once | change → request p50 / p99 | same changes, reads off |",
);
console.log("|---|---|---|---|---|---|");
for (const resources of [1_000, 10_000]) {
  // The changes arrive at one per CHANGE_EVERY_MS on average, from the first round on.
  /** @type {number[]} */
  const arrivals = [];
  let at = 0;
  for (let i = 0; i < CHANGES; i++) {
    at += -Math.log(1 - random()) * CHANGE_EVERY_MS;
    arrivals.push(Math.round(at));
  }
  /** @param {number[]} waits */
  const waits = (waits) => `${Math.round(quantile(waits, 0.5))} / ${Math.round(quantile(waits, 0.99))} ms`;
  const off = await round(0, arrivals, false);
  const budgetBound = { perPoll: POLL_MS / perRequestMs, round: resources * perRequestMs };
  const capBound = Math.ceil(resources / DEFAULT_READ_CAPS.management) * POLL_MS;
  console.log(
    `| ${resources.toLocaleString("en")} | bound: the budget alone / the rounds' cap | ≤ ${budgetBound.perPoll.toFixed(1)} / ${DEFAULT_READ_CAPS.management} | ≥ ${duration(budgetBound.round)} / ${duration(capBound)} | | |`,
  );
  for (const spaced of [true, false]) {
    const on = await round(resources, arrivals, spaced);
    // Only the changes that arrived while reads were being made.
    const during = (/** @type {number[]} */ w) => w.filter((_, i) => (arrivals[i] ?? 0) < on.roundEnd);
    const polls = perPoll(on.readGrants, on.roundEnd);
    const label = spaced
      ? "the daemon's rounds, reads spread over 48 s of each minute"
      : "the same rounds sent at once, 4 at a time";
    console.log(
      `| ${resources.toLocaleString("en")} | ${label} | ${polls.min} / ${polls.median} | ${duration(on.roundEnd)} | ${waits(during(on.changeWaits))} | ${waits(during(off.changeWaits))} |`,
    );
  }
}
console.log(
  `${CHANGES} changes from git per run, one per ${CHANGE_EVERY_MS / 1000} s on average (seeded); the waits are those of the changes that arrived while reads were being made, and of the same changes with reads off.`,
);

// Bursts: BURSTS commits at seeded times over the reads of 1,000 resources, each changing `size` resources.
const BURSTS = process.env.BENCH_QUICK ? 10 : 30;
const BURST_EVERY_MS = 120_000;
console.log("");
console.log(
  "| burst of changes | change → request p50 / p99, reads on | reads on, as before the read headroom (any slot, 25 a round) | reads off |",
);
console.log("|---|---|---|---|");
for (const size of [3, 6, 9]) {
  /** @type {number[]} */
  const arrivals = [];
  let at = 0;
  for (let i = 0; i < BURSTS; i++) {
    at += Math.round(-Math.log(1 - random()) * BURST_EVERY_MS);
    for (let change = 0; change < size; change++) arrivals.push(at);
  }
  /** @param {number[]} w */
  const waits = (w) => `${Math.round(quantile(w, 0.5))} / ${Math.round(quantile(w, 0.99))} ms`;
  const now = await round(1_000, arrivals, true);
  const before = await round(1_000, arrivals, true, BEFORE);
  const off = await round(0, arrivals, true);
  console.log(
    `| ${size} at once | ${waits(now.changeWaits)} | ${waits(before.changeWaits)} | ${waits(off.changeWaits)} |`,
  );
}
console.log(
  `${BURSTS} bursts per size, one per ${BURST_EVERY_MS / 60_000} min on average (seeded), while 1,000 resources are read: reads hold at most ${requests - (MANAGEMENT_BUDGET.readHeadroom ?? 0)} of the window, so a burst of up to ${MANAGEMENT_BUDGET.readHeadroom ?? 0} alone in its window is sent at once; bursts closer together than a window share the rest, and then wait more than with reads off.`,
);
