// The comparison of a live object with its manifest (drift/compare.js) on lists that compare as sets:
// an API key's ipAccessList of 2,000 and 20,000 entries (a legal manifest holds about 20,000), the live
// list the same entries in reverse order with a field the answer adds. Each figure beside the target
// and beside two baselines from the same run: the floor (a hash of each entry's JSON text, the least
// a keyed comparison can cost) and the comparison of every entry with every other (what compare did
// before; run at 2,000 entries only, as 20,000 would take about a minute: the figure is scaled by 100).
import { dist } from "./dist.mjs";

const { walk } = await dist("drift/compare.js");

/** The longest one comparison may hold the event loop: well under a second, whatever the input. */
const TARGET_MS = 100;
const RUNS = 5;

/** @param {number} n */
function lists(n) {
  const want = Array.from({ length: n }, (_, i) => ({
    source: `10.${(i >> 8) & 255}.${i & 255}.0/24`,
    description: `runner ${i}`,
  }));
  const have = [...want].reverse().map((w) => ({ description: w.description, source: w.source, id: 7 }));
  return { want, have };
}

/** The median wall time of `RUNS` calls of `fn`, in ms. @param {() => unknown} fn */
function median(fn) {
  const times = [];
  for (let run = 0; run < RUNS; run++) {
    const started = performance.now();
    fn();
    times.push(performance.now() - started);
  }
  times.sort((a, b) => a - b);
  return times[Math.floor(RUNS / 2)] ?? 0;
}

/** What compare did before: each desired entry against every live one, and each live against every desired. */
function pairwise(
  /** @type {Array<Record<string, unknown>>} */ want,
  /** @type {Array<Record<string, unknown>>} */ have,
) {
  const matches = (/** @type {Record<string, unknown>} */ w, /** @type {Record<string, unknown>} */ h) =>
    Object.entries(w).every(([key, value]) => h[key] === undefined || h[key] === value);
  return (
    want.every((w) => have.some((h) => matches(w, h))) && have.every((h) => want.some((w) => matches(w, h)))
  );
}

/** A hash of each entry's JSON text: the floor. */
function floor(/** @type {unknown[]} */ want, /** @type {unknown[]} */ have) {
  const seen = new Set(want.map((w) => JSON.stringify(w)));
  return have.every((h) =>
    seen.has(
      JSON.stringify({
        source: /** @type {any} */ (h).source,
        description: /** @type {any} */ (h).description,
      }),
    ),
  );
}

/** An API key's ipAccessList as its kind compares it: as a set. @param {unknown[]} want @param {unknown} live */
const compare = (want, live) => walk({ ipAccessList: want }, live, { ipAccessList: { kind: "set" } });

console.log(
  `| entries | compare (keyed, now) | target | floor: a hash of each entry | every entry with every other (before) |`,
);
console.log("|---|---|---|---|---|");
const pairwiseAt2000 = (() => {
  const { want, have } = lists(2_000);
  return median(() => pairwise(want, have));
})();
for (const n of [2_000, 20_000]) {
  const { want, have } = lists(n);
  const fields = compare(want, { ipAccessList: have });
  if (fields.length !== 0) throw new Error(`the same ${n} entries in another order compared as different`);
  const keyed = median(() => compare(want, { ipAccessList: have }));
  const hashed = median(() => floor(want, have));
  const before =
    n === 2_000
      ? `${pairwiseAt2000.toFixed(0)} ms`
      : `~${((pairwiseAt2000 * 100) / 1000).toFixed(1)} s (2,000's × 100)`;
  const met = keyed < TARGET_MS ? "met" : "**missed**";
  console.log(
    `| ${n.toLocaleString("en")} | ${keyed.toFixed(1)} ms | < ${TARGET_MS} ms: ${met} | ${hashed.toFixed(1)} ms | ${before} |`,
  );
}
console.log(
  `median of ${RUNS} runs each; the live list is the desired one reversed, each entry with a member the answer adds.`,
);
