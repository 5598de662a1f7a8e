import { ApiError, isApiError } from "../errors.js";
import type { LiveRead } from "../kinds/kind.js";
import type { Priority } from "../platform/budget.js";
import type { Read } from "../platform/client.js";

/**
 * Reading a live object with the read its kind names (kinds/: a GET, or a list and the entry that is
 * the object). Only the published contract serves these routes (DRIFTLESS_READS=on says the platform
 * does).
 */

/** A read's answer: the live object, or `undefined` when the platform has no such object. */
export type LiveAnswer = { live: object | undefined; requestId?: string };

export type ReadOptions = {
  signal?: AbortSignal;
  /** The budget priority; default "read", the lowest: changes from git never wait for a read. */
  priority?: Priority;
};

/**
 * Sends `read` and picks the live object from its answer. Throws what the request threw (the caller
 * reports it as a failed read of that resource); a 404 or 405 is one of those, with what it may mean:
 * the object is gone, or the platform does not serve the reads.
 */
export async function readLive(read: Read, live: LiveRead, options: ReadOptions = {}): Promise<LiveAnswer> {
  const call = {
    priority: options.priority ?? "read",
    ...(options.signal ? { signal: options.signal } : {}),
  };
  try {
    const answer = await read(live.request, call);
    return { live: live.live(answer.result), ...(answer.requestId ? { requestId: answer.requestId } : {}) };
  } catch (error) {
    // 405: a platform that serves the seven endpoints only has no GET on these paths.
    if (isApiError(error) && (error.context.status === 404 || error.context.status === 405)) {
      const reason = `${error.message}: the object is gone, or the platform does not serve the published contract's reads (DRIFTLESS_READS=on needs them)`;
      throw new ApiError(reason, error.context, { cause: error });
    }
    throw error;
  }
}
