/**
 * The error family. Each error carries the context a user needs to act on it; the edges (a resource's
 * status, the CLI) catch and print them. Wrap causes with `{ cause }`.
 */
export class DriftlessError extends Error {
  override name = "DriftlessError";
}

/** A setting (flag, environment variable, credential file) is missing or malformed. */
export class ConfigError extends DriftlessError {
  override name = "ConfigError";
}

/** Where in a manifest a problem is: 1-based line and column. */
export type Position = { file: string; line: number; col: number };

/** A manifest problem: the file position, the resource (`Kind/name`) and the field path, when known. */
export class ManifestError extends DriftlessError {
  override name = "ManifestError";
  constructor(
    message: string,
    readonly position: Position,
    readonly resource?: string,
    readonly field?: string,
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

export type Api = "management" | "observability";

/** A platform API answered with an error, or could not be reached. */
export class ApiError extends DriftlessError {
  override name = "ApiError";
  constructor(
    message: string,
    readonly context: {
      api: Api;
      method: string;
      route: string;
      status?: number;
      requestId?: string;
      /** True when repeating the same request later may succeed (429, 5xx, 408, 425, 409, network). */
      retryable: boolean;
    },
    options?: ErrorOptions,
  ) {
    super(message, options);
  }
}

/**
 * A non-idempotent request (creating a reverse private endpoint) may or may not have taken effect.
 * Never retried on its own: an operator decides.
 */
export class UnknownOutcomeError extends DriftlessError {
  override name = "UnknownOutcomeError";
}

/** The manifests folder changed under every read of a pass (git-sync swapped it): start again later. */
export class SupersededError extends DriftlessError {
  override name = "SupersededError";
}

/** The state store cannot be read, written or locked. */
export class StateError extends DriftlessError {
  override name = "StateError";
}

export const isDriftlessError = (e: unknown): e is DriftlessError => e instanceof DriftlessError;
export const isConfigError = (e: unknown): e is ConfigError => e instanceof ConfigError;
export const isManifestError = (e: unknown): e is ManifestError => e instanceof ManifestError;
export const isApiError = (e: unknown): e is ApiError => e instanceof ApiError;
export const isUnknownOutcomeError = (e: unknown): e is UnknownOutcomeError =>
  e instanceof UnknownOutcomeError;
export const isSupersededError = (e: unknown): e is SupersededError => e instanceof SupersededError;
export const isStateError = (e: unknown): e is StateError => e instanceof StateError;

/** The message of anything thrown, for status and logs. */
export function messageOf(e: unknown): string {
  return e instanceof Error ? e.message : String(e);
}

/**
 * The `code` of a system error (`ENOENT`, `EACCES`, `ECONNRESET`, ...) or of any error that carries a
 * string code (undici's `UND_ERR_*`); undefined for anything else.
 */
export function errnoOf(e: unknown): string | undefined {
  if (typeof e !== "object" || e === null || !("code" in e)) return undefined;
  return typeof e.code === "string" ? e.code : undefined;
}

/** What `e` was caused by (`{ cause }`), when it says. */
export function causeOf(e: unknown): unknown {
  return typeof e === "object" && e !== null && "cause" in e ? e.cause : undefined;
}
