import { type Api, ConfigError } from "../errors.js";
import { HOSTILE_SHAPES, type HostileFault, type HostileShape, hostileText } from "./hostile-answers.js";

/**
 * A scripted misbehaviour of the platform, for the next `count` requests that match it:
 * - `status`: answer `status` (default 503) with `body` (default: the API's error shape) and `headers`;
 * - `latency`: wait `ms` (default 1000), or until `until` settles, then answer normally;
 * - `drop`: close the connection without an answer;
 * - `hang`: never answer (until the client gives up or the simulator closes).
 * A dropped or hanging request changes nothing, unless `applied`: then the platform does the work and
 * only the answer is lost, the unknown outcome a non-idempotent POST must survive.
 *
 * The hostile answers do the work and answer, but answer strangely: valid JSON that no sane platform
 * sends, the kind of answer a broken proxy, a platform bug or a console edit through another tool can
 * still produce. They rewrite the answered object (a management answer's `result`, an observability
 * answer's `data`, each entry of a list) of a 2xx answer; any other answer goes out unchanged:
 * - `deep`: `field` becomes a value nested `size` levels deep (default 6,000);
 * - `huge`: `field` becomes a list of `size` entries (default 20,000), made from its own entries;
 * - `reordered`: the members of every object come in another order, rotated one place further at each
 *   answer the fault rewrites (so the order changes from one answer to the next);
 * - `wrong-type`: `field` becomes a value of another type (a list an object, a string a number, ...).
 */
export type Fault = {
  api: Api;
  /** Matches any method when absent. */
  method?: string;
  /** A route template, e.g. "/v1/organizations/{organizationId}/keys/{keyId}"; any route when absent. */
  route?: string;
  kind: "status" | "latency" | "drop" | "hang" | HostileShape;
  status?: number;
  body?: unknown;
  headers?: Record<string, string>;
  /** How many matching requests it hits before it is spent (default 1; Infinity: never spent). */
  count?: number;
  ms?: number;
  /** latency: hold the request until this settles instead of for `ms` (a test releases it when it wants). */
  until?: Promise<unknown>;
  /** drop and hang: apply the request before losing its answer (default false). */
  applied?: boolean;
  /** Chance that a matching request is hit (default 1), drawn from the simulator's seeded generator. */
  probability?: number;
  /** deep, huge, wrong-type: the member rewritten, dotted from the answered object (`source.kafka.topics`). */
  field?: string;
  /** deep: levels of nesting (default 6,000); huge: entries of the list (default 20,000). */
  size?: number;
};

export const isHostile = (fault: Fault): fault is Fault & { kind: HostileShape } =>
  (HOSTILE_SHAPES as readonly string[]).includes(fault.kind);

/** A small seeded generator (mulberry32): the same seed hits the same requests in every run. */
export function seededRandom(seed: number): () => number {
  let a = seed >>> 0;
  return () => {
    a = (a + 0x6d2b79f5) >>> 0;
    let t = a;
    t = Math.imul(t ^ (t >>> 15), t | 1);
    t ^= t + Math.imul(t ^ (t >>> 7), t | 61);
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

/** The injected faults, first injected first matched. */
export function createFaultBook(random: () => number) {
  let faults: Array<Fault & { left: number; hits: number }> = [];
  return {
    /** Adds `fault`; throws ConfigError for a hostile answer that names no field to rewrite. */
    inject(fault: Fault): void {
      if (isHostile(fault) && fault.kind !== "reordered" && !fault.field) {
        throw new ConfigError(`a ${fault.kind} answer needs the field it rewrites (field: "name")`);
      }
      faults.push({ ...fault, left: fault.count ?? 1, hits: 0 });
    },
    clear(): void {
      faults = [];
    },
    /** The JSON text of a 2xx answer's `body` as the hostile answer `fault` (taken) rewrites it. */
    rewrite(fault: HostileFault & { hits: number }, body: unknown): string {
      return hostileText(body, fault, fault.hits);
    },
    /**
     * The fault that hits this request, if any, with how many requests it has hit, this one included;
     * hitting spends one of its count.
     */
    take(api: Api, method: string, route: string | undefined): (Fault & { hits: number }) | undefined {
      for (const fault of faults) {
        if (fault.api !== api || fault.left <= 0) continue;
        if (fault.method && fault.method.toUpperCase() !== method) continue;
        if (fault.route && fault.route !== route) continue;
        // Every matching request draws, so a seed fixes which requests are hit whatever else happens.
        if (fault.probability !== undefined && random() >= fault.probability) continue;
        fault.left--;
        fault.hits++;
        faults = faults.filter((f) => f.left > 0);
        return { ...fault };
      }
      return undefined;
    },
  };
}
export type FaultBook = ReturnType<typeof createFaultBook>;
