import type { KeyPair } from "../credentials.js";
import type { SecretTarget } from "../manifests/specs/api-key.js";
import type { PlannedRequest } from "../plan/types.js";
import type { Priority } from "../platform/budget.js";
import type { Answer } from "../platform/client.js";
import type { Answers, RouteName } from "../platform/routes.js";
import type { Cause } from "../resources.js";
import { newKeyPair, targetName } from "../state/key-secrets.js";
import type { ResourceRecord } from "../state/store.js";
import type { EngineDeps, Pass } from "./types.js";
import {
  ensureMayWrite,
  isWriteRefusedError,
  refusalOf,
  type WriteContext,
  type Writer,
  writeSignal,
} from "./write-guard.js";

/**
 * What a pass does to the world, apart from deciding: apply sends to the platform and saves the state;
 * a dry run (plan, plan --base; dry-run.ts) answers its requests itself, as the platform would, and
 * keeps its records in memory. Everything else (decide.ts, resource.ts, pass.ts) is the same for both.
 */
export type Effects = {
  /** Writes a resource's record into the pass's state, in memory (undefined removes it). */
  record(id: string, record: ResourceRecord | undefined): void;
  /** Saves the state as it is now. Throws StateError. */
  save(): Promise<void>;
  /** Undefined when a write may go out now; else why it is not sent. */
  mayWrite(write: Writing): Promise<NotSent | undefined>;
  /** Sends `request`: the platform's answer. Throws as Sender does, or WriteRefusedError. */
  send<R extends RouteName>(
    request: PlannedRequest<R>,
    write: Writing & { priority: Priority },
  ): Promise<Answer<Answers[R]>>;
  /** With reads on: reads a live object or list before planning (read-first.ts). Absent with reads off. */
  read?<R extends RouteName>(request: PlannedRequest<R>): Promise<Answers[R]>;
  /**
   * The credential a create makes (an API key's id and secret): the pair `target` holds when it is the
   * one of this key's own earlier attempt (`pending`: the key id its intent names), else a new one
   * (`unwritten`: writeCredential puts it there). Refused when the target holds another key's pair.
   * Throws StateError when the target cannot be read.
   */
  credential?(
    target: SecretTarget,
    pending: string | undefined,
  ): Promise<{ pair: KeyPair; unwritten: boolean } | { refused: string }>;
  /** Writes a credential to its target. Throws StateError. */
  writeCredential?(target: SecretTarget, pair: KeyPair): Promise<void>;
};

/** One write: the resource it is of, and why the pass may no longer write, as far as it knows. */
export type Writing = { manifest: Writer; stopped(): string | undefined };

/** Why a write is not sent: the resource's cause, its message, and what the store said when it refused. */
export type NotSent = { cause: Cause; message: string; stopped?: string };

/** The effects that save: records changed since the last successful save, each with a count of its changes. */
export type ApplyEffects = Effects & {
  dirty: Map<string, number>;
  /** Marks a record changed in memory, so that the next successful save counts it as saved. */
  changed(id: string): void;
  /** Resolves once every save asked for so far is over (whether it succeeded or not). */
  saved(): Promise<void>;
};

/** Apply's effects: the platform through `deps.send`, the state through `deps.store`, both guarded. */
export function applyEffects(deps: EngineDeps, pass: Pass, signal: AbortSignal | undefined): ApplyEffects {
  const dirty = new Map<string, number>();
  const changed = (id: string) => dirty.set(id, (dirty.get(id) ?? 0) + 1);
  const saves = chainedSaves(deps, pass, dirty);
  const context = (write: Writing): WriteContext => ({ deps, state: pass.state, ...write });
  const { read } = deps;
  return {
    // A read that gates a write (a list to compute sets from, an unknown create to settle) goes with
    // the changes' priority: it stands where a request of the change would otherwise go.
    ...(read
      ? {
          read: async <R extends RouteName>(request: PlannedRequest<R>) =>
            (await read(request, { priority: "change", ...(signal ? { signal } : {}) })).result,
        }
      : {}),
    ...credentialEffects(deps),
    dirty,
    changed,
    saved: saves.saved,
    save: saves.save,
    record(id, record) {
      if (record) pass.state.resources[id] = record;
      else delete pass.state.resources[id];
      changed(id);
    },
    async mayWrite(write) {
      if (signal?.aborted)
        return { cause: "interrupted", message: "not sent: the pass was stopped (shutdown)" };
      if (!deps.send) return { cause: "no-sender", message: "not sent: no API client" };
      try {
        await ensureMayWrite(context(write));
        return undefined;
      } catch (error) {
        if (!isWriteRefusedError(error)) throw error;
        const { verdict: cause, message, stopped } = error;
        return stopped === undefined ? { cause, message } : { cause, message, stopped };
      }
    },
    async send(request, write) {
      if (!deps.send) throw new Error("no API client");
      const guarded = context(write);
      const writing = writeSignal(guarded, signal);
      try {
        // Asked again right before each attempt: retries too may wait long enough to lose the right to write.
        const guard = () => ensureMayWrite(guarded);
        return await deps.send(request, { priority: write.priority, signal: writing.signal, guard });
      } catch (error) {
        throw refusalOf(error, writing.signal) ?? error;
      } finally {
        writing.dispose();
      }
    },
  };
}

/** Apply's credentials: read, made and written through the engine's key secrets (state/key-secrets.ts). */
function credentialEffects({ keySecrets }: EngineDeps): Pick<Effects, "credential" | "writeCredential"> {
  if (!keySecrets) return {};
  return {
    async credential(target, pending) {
      const held = await keySecrets.read(target);
      if (!held) return { pair: newKeyPair(), unwritten: true };
      if (held.keyId === pending) return { pair: held, unwritten: false };
      return {
        refused: `not created: ${targetName(target)} already holds the id and secret of another key (its id ends ${held.keyId.slice(-4)}), and driftless never writes over one: choose another secretTarget, or remove that one if its key is gone`,
      };
    },
    writeCredential: (target, pair) => keySecrets.write(target, pair),
  };
}

/**
 * Saves chained one after the other, so two resources finishing together never write the state at once.
 * A save that succeeds counts the records changed before it as saved.
 */
function chainedSaves(
  { store, suspension }: EngineDeps,
  pass: Pass,
  dirty: Map<string, number>,
): { save(): Promise<void>; saved(): Promise<void> } {
  let saving: Promise<void> = Promise.resolve();
  const save = (): Promise<void> => {
    const next = saving.then(async () => {
      const changes = new Map(dirty);
      const token = suspension?.sync(pass.state);
      await store.save(pass.state);
      if (token !== undefined) suspension?.saved(token);
      for (const [id, count] of changes) if (dirty.get(id) === count) dirty.delete(id);
    });
    saving = next.catch(() => {});
    return next;
  };
  return { save, saved: () => saving };
}
