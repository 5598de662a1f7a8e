import { createHash, timingSafeEqual } from "node:crypto";
import type { IncomingMessage } from "node:http";

export const HOOK_PATH = "/hooks/sync";

/**
 * The token a `POST /hooks/sync` request carries: `Authorization: Bearer <token>`, or the last path
 * segment of `/hooks/sync/<token>` (git-sync's `--webhook-url` cannot send headers).
 */
export function presentedToken(request: IncomingMessage, path: string): string | undefined {
  const bearer = bearerToken(request);
  if (bearer) return bearer;
  const segment = path.slice(HOOK_PATH.length + 1);
  if (!segment || segment.includes("/")) return undefined;
  try {
    return decodeURIComponent(segment);
  } catch {
    return undefined;
  }
}

/** The token of an `Authorization: Bearer <token>` header, or undefined. */
export function bearerToken(request: IncomingMessage): string | undefined {
  return request.headers.authorization?.match(/^Bearer\s+(.+)$/i)?.[1]?.trim() || undefined;
}

/**
 * True when `presented` equals `expected`. Both are hashed first so that the comparison takes the same
 * time whatever the lengths and contents (timingSafeEqual needs equal lengths).
 */
export function tokenMatches(presented: string | undefined, expected: string): boolean {
  if (presented === undefined) return false;
  const digest = (value: string) => createHash("sha256").update(value).digest();
  return timingSafeEqual(digest(presented), digest(expected));
}

/** True for the hook's paths: `/hooks/sync` and `/hooks/sync/<token>`. */
export const isHookPath = (path: string) => path === HOOK_PATH || path.startsWith(`${HOOK_PATH}/`);
