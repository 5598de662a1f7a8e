import type { V1Secret } from "@kubernetes/client-node";
import { describe, expect, it } from "vitest";
import { isStateError } from "../../src/errors.js";
import {
  conflictError,
  isOwnLostWrite,
  secretBody,
  WRITE_ID_ANNOTATION,
} from "../../src/state/secret-writer.js";

/** The Kubernetes store's Secret writes: conditional bodies named by a write id, and lost answers. */

const written = (writeId: string | undefined, resourceVersion = "42"): V1Secret => ({
  metadata: {
    name: "driftless-state-3",
    resourceVersion,
    ...(writeId ? { annotations: { [WRITE_ID_ANNOTATION]: writeId } } : {}),
  },
});

describe("a write's body", () => {
  it("rule: a write on a version replaces that version; one on no version creates", () => {
    const where = { namespace: "ns", name: "driftless-state-3" };

    const replace = secretBody(where, { k: "dg==" }, "41", "store-1");
    const create = secretBody(where, { k: "dg==" }, "", "store-2");

    expect(replace.metadata?.resourceVersion).toBe("41");
    expect(create.metadata?.resourceVersion).toBeUndefined();
  });

  it("rule: every write names itself in an annotation, and is labelled as driftless's state", () => {
    const body = secretBody({ namespace: "ns", name: "driftless-state" }, { k: "dg==" }, "41", "store-7");

    expect(body).toMatchObject({
      kind: "Secret",
      type: "Opaque",
      metadata: {
        name: "driftless-state",
        namespace: "ns",
        annotations: { [WRITE_ID_ANNOTATION]: "store-7" },
        labels: { "app.kubernetes.io/name": "driftless", "app.kubernetes.io/component": "state" },
      },
      data: { k: "dg==" },
    });
  });
});

describe("a conflict after a write whose answer was lost", () => {
  it("rule: it is with ourselves when the Secret's last write is one of ours that went unanswered", () => {
    expect(isOwnLostWrite(new Set(["store-1", "store-2"]), written("store-2"))).toBe(true);
  });

  it("rule: it is another writer's when the last write is anyone else's, or unnamed", () => {
    expect(isOwnLostWrite(new Set(["store-2"]), written("other-9"))).toBe(false);
    expect(isOwnLostWrite(new Set(["store-2"]), written(undefined))).toBe(false);
  });

  it("rule: it is another writer's when none of our writes to it went unanswered, or the Secret is gone", () => {
    expect(isOwnLostWrite(undefined, written("store-2"))).toBe(false);
    expect(isOwnLostWrite(new Set(["store-2"]), undefined)).toBe(false);
  });
});

describe("another writer's conflict", () => {
  it("rule: it names the Secret and the version this replica read, and asks about a second driftless", () => {
    const error = conflictError("ns/driftless-state-3", "41");

    expect(isStateError(error)).toBe(true);
    expect(error.message).toBe(
      "another writer changed the state: Secret ns/driftless-state-3 was not saved because it changed since this replica read it (resourceVersion 41); is a second driftless running without leader election? The next pass reloads it",
    );
  });

  it("rule: on a Secret this replica found none of, it says someone else created it", () => {
    expect(conflictError("ns/driftless-state", "").message).toContain(
      "because it was created by someone else after this replica found none;",
    );
  });
});
