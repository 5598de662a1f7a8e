import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { apiKey } from "../src/kinds/api-key.js";
import { dataPipe } from "../src/kinds/data-pipe.js";
import { isNone, type PlanContext } from "../src/kinds/kind.js";
import { hashSecret, Secret } from "../src/plan/secret.js";
import { revealed, stored } from "../src/plan/values.js";
import { viewOf } from "../src/plan/view.js";
import { keyHashes } from "../src/platform/management.js";
import { newKeyPair } from "../src/state/key-secrets.js";

/** The planner's secrets: only the sender reveals them; every other form masks them. */

const context: PlanContext = {
  reassert: false,
  now: new Date("2026-01-01T00:00:00Z"),
  ref: () => ({ state: "missing", reason: "none" }),
};

const secret = (value: string) => new Secret(value, hashSecret(value, "salt"));

describe("secret masking in plans", () => {
  const spec = {
    organizationId: "o",
    serviceId: "s",
    dataPipeId: "p",
    name: "pipe",
    source: { postgres: { credentials: { username: "u", password: secret("hunter2-canary") } } },
  };

  it("masks a secret in JSON, inspect, the plan view and the stored form, and reveals it only for the wire", () => {
    const plan = dataPipe.update.plan({ kind: "DataPipe", name: "p", spec, record: undefined, context });

    const shown = [
      JSON.stringify(plan),
      inspect(plan, { depth: 10 }),
      JSON.stringify(viewOf(plan, undefined)),
      JSON.stringify(stored(spec)),
      String(secret("hunter2-canary")),
    ].join("\n");

    expect(shown).not.toContain("hunter2-canary");
    expect(JSON.stringify(revealed(plan.write?.request.body))).toContain("hunter2-canary");
    expect(viewOf(plan, undefined).changes).toContainEqual({
      path: "source.postgres.credentials.password",
      to: "(changed)",
      op: "set",
    });
  });

  it("shows an unchanged secret as (unchanged) when its credentials object is sent for another member", () => {
    const applied = stored({ ...spec, name: "pipe" }) as Record<string, unknown>;
    const { organizationId: _o, serviceId: _s, dataPipeId: _p, ...fields } = applied;
    const record = { kind: "DataPipe", name: "p", applied: fields };
    const edited = {
      ...spec,
      source: { postgres: { credentials: { username: "u2", password: secret("hunter2-canary") } } },
    };

    const plan = dataPipe.update.plan({ kind: "DataPipe", name: "p", spec: edited, record, context });

    expect(viewOf(plan, record.applied).request?.body).toEqual({
      source: { postgres: { credentials: { username: "u2", password: "(unchanged)" } } },
    });
  });
});

describe("a created key in plans", () => {
  const spec = {
    organizationId: "o",
    name: "reporting",
    roles: ["query_endpoints" as const],
    secretTarget: { kubernetesSecret: "driftless-key-reporting" },
  };

  it("plans no id, secret or hash: the pair is made at apply, and only its hashes go on the wire", () => {
    const pair = newKeyPair();
    const { create } = apiKey;
    if (isNone(create)) throw new Error("an ApiKey is created");

    const plan = create.plan({ kind: "ApiKey", name: "reporting", spec, record: undefined, context });
    const wire = revealed(plan.credential?.write(pair).request.body);

    const shown = [
      JSON.stringify(plan),
      inspect(plan, { depth: 10 }),
      JSON.stringify(viewOf(plan, undefined)),
    ].join("\n");
    const hashes = keyHashes(pair.keyId, pair.keySecret);
    for (const value of [pair.keyId, pair.keySecret, hashes.keyIdHash, hashes.keySecretHash])
      expect(shown).not.toContain(value);
    expect(viewOf(plan, undefined).changes).toContainEqual({
      path: "hashData",
      to: {
        keyIdHash: "(made when the key is created)",
        keyIdSuffix: "(made when the key is created)",
        keySecretHash: "(made when the key is created)",
      },
      op: "set",
    });
    expect(wire).toMatchObject({ name: "reporting", hashData: hashes });
    expect(JSON.stringify(wire)).not.toContain(pair.keySecret);
    expect(JSON.stringify(wire)).not.toContain(pair.keyId);
  });
});
