import { createHmac } from "node:crypto";
import { inspect } from "node:util";

/**
 * A resolved secret inside a desired spec. The value is reachable only through `reveal()`, which the
 * request sender alone calls; serialised (JSON, logs, inspect) it shows a mask, so a plan that is printed,
 * logged or stored by mistake still cannot leak it.
 */
export class Secret {
  readonly #value: string;

  /** `hash` is the salted hash kept in the state (see hashSecret). */
  constructor(
    value: string,
    readonly hash: string,
  ) {
    this.#value = value;
  }

  reveal(): string {
    return this.#value;
  }

  toJSON(): string {
    return "(secret)";
  }

  toString(): string {
    return "(secret)";
  }

  [inspect.custom](): string {
    return "(secret)";
  }
}

export const isSecret = (value: unknown): value is Secret => value instanceof Secret;

/**
 * The form a secret takes in the state: an HMAC keyed by the store's salt, so equal secrets of two
 * installations do not hash alike and a precomputed table is of no use. The salt is kept in the same
 * state, so whoever reads the state can still test guesses of a secret against its hash: the state is
 * as sensitive as a weak form of the secrets and is protected as such.
 */
export function hashSecret(value: string, salt: string): string {
  return `hmac-sha256:${createHmac("sha256", salt).update(value).digest("hex")}`;
}
