import type { SuspensionSwitch } from "../reconcile/types.js";
import type { State, Suspended } from "../state/store.js";

/**
 * The daemon's `driftless suspend` / `resume`. The switch takes effect at once in memory (the engine
 * asks before every attempt of a write, and writes waiting for the rate budget or a retry stop waiting:
 * writesStopped); the pass loop saves it into the state, the only writer of the state, so
 * that a restart or a new leader stays suspended. Until the first pass, the state's value is unknown.
 */
export class Suspension implements SuspensionSwitch {
  private value: Suspended | undefined;
  private known = false;
  /** Changes asked for, and changes saved: a change is pending while asked > savedUpTo. */
  private asked = 0;
  private savedUpTo = 0;
  private waiters: Array<{ token: number; resolve: (saved: boolean) => void }> = [];
  /** Aborted while suspended: writes waiting for the rate budget or a retry stop waiting. */
  private stop = new AbortController();
  /** Writes started and not over yet, and who waits for there to be none. */
  private inFlight = 0;
  private idle: Array<() => void> = [];

  /** `onChange` hears every new value (the driftless_suspended gauge). */
  constructor(private readonly onChange: (value: Suspended | undefined) => void = () => {}) {}

  /** The suspension now; undefined when not suspended (or not known yet: see `known`). */
  get current(): Suspended | undefined {
    return this.value;
  }

  /** False until a pass has read the state (or a change was asked for). */
  get isKnown(): boolean {
    return this.known;
  }

  /** Suspends every write from now; suspending again keeps the first time and takes the new reason. */
  suspend(reason: string | undefined, now: Date): Suspended {
    const since = this.value?.since ?? now.toISOString();
    return this.set({ since, ...(reason ? { reason } : {}) }) as Suspended;
  }

  /** Lets writes go again. */
  resume(): void {
    this.set(undefined);
  }

  /**
   * Resolves true once the last change asked for is in a saved state, false after `timeoutMs` (the
   * state store is failing, or no pass ran) or when this replica stops leading.
   */
  whenSaved(timeoutMs: number): Promise<boolean> {
    const token = this.asked;
    if (this.savedUpTo >= token) return Promise.resolve(true);
    return new Promise((resolve) => {
      const waiter = { token, resolve };
      this.waiters.push(waiter);
      const timer = setTimeout(() => {
        this.waiters = this.waiters.filter((w) => w !== waiter);
        resolve(false);
      }, timeoutMs);
      waiter.resolve = (saved) => {
        clearTimeout(timer);
        resolve(saved);
      };
    });
  }

  saved(token: number): void {
    this.savedUpTo = Math.max(this.savedUpTo, token);
    const done = this.waiters.filter((waiter) => waiter.token <= this.savedUpTo);
    this.waiters = this.waiters.filter((waiter) => waiter.token > this.savedUpTo);
    for (const waiter of done) waiter.resolve(true);
  }

  sync(state: State): number {
    if (this.pending()) {
      if (this.value) state.suspended = { ...this.value };
      else delete state.suspended;
      return this.asked;
    }
    this.known = true;
    if (!sameSuspension(this.value, state.suspended)) {
      this.value = state.suspended ? { ...state.suspended } : undefined;
      this.changed();
    }
    return this.savedUpTo;
  }

  pending(): boolean {
    return this.asked > this.savedUpTo;
  }

  writesStopped(): AbortSignal {
    return this.stop.signal;
  }

  writing(): () => void {
    this.inFlight++;
    let over = false;
    return () => {
      if (over) return;
      over = true;
      this.inFlight--;
      if (this.inFlight === 0) for (const resolve of this.idle.splice(0)) resolve();
    };
  }

  /**
   * Resolves true once no write is under way (a suspend drops the waiting ones at once; one already
   * sent runs to its answer), false after `timeoutMs`.
   */
  whenWritesDone(timeoutMs: number): Promise<boolean> {
    if (this.inFlight === 0) return Promise.resolve(true);
    return new Promise((resolve) => {
      const done = () => {
        clearTimeout(timer);
        resolve(true);
      };
      const timer = setTimeout(() => {
        this.idle = this.idle.filter((waiter) => waiter !== done);
        resolve(false);
      }, timeoutMs);
      this.idle.push(done);
    });
  }

  /** Forgets everything: a replica that stops leading learns the state again when it leads again. */
  forget(): void {
    // A change not saved yet is dropped: the new leader's state decides.
    this.savedUpTo = this.asked;
    this.known = false;
    this.value = undefined;
    this.changed();
    for (const waiter of this.waiters.splice(0)) waiter.resolve(false);
  }

  private set(value: Suspended | undefined): Suspended | undefined {
    this.value = value;
    this.known = true;
    this.asked++;
    this.changed();
    return value;
  }

  /** Tells `onChange`, and stops the writes that wait once suspended (a fresh signal once resumed). */
  private changed(): void {
    if (this.value) this.stop.abort();
    else if (this.stop.signal.aborted) this.stop = new AbortController();
    this.onChange(this.value);
  }
}

function sameSuspension(a: Suspended | undefined, b: Suspended | undefined): boolean {
  return a?.since === b?.since && a?.reason === b?.reason;
}
