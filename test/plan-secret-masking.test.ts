import { inspect } from "node:util";
import { describe, expect, it } from "vitest";
import { dataPipe } from "../src/kinds/data-pipe.js";
import type { PlanContext } from "../src/kinds/kind.js";
import { hashSecret, Secret } from "../src/plan/secret.js";
import { revealed, stored } from "../src/plan/values.js";
import { viewOf } from "../src/plan/view.js";

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
