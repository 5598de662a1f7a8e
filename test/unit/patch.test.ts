import { describe, expect, it } from "vitest";
import { diffPatch, patchPlan } from "../../src/plan/patch.js";
import { hashSecret, Secret } from "../../src/plan/secret.js";

/** Patch diffing: the smallest PATCH body from the last applied state to the desired one. */

const secret = (value: string) => new Secret(value, hashSecret(value, "salt"));
const plain = { reassert: false };

describe("diffPatch", () => {
  it("rule: a field equal to the last applied value is not sent", () => {
    const patch = diffPatch({ name: "Acme", region: "eu" }, { name: "Acme", region: "us" }, plain);

    expect(patch.body).toEqual({ region: "eu" });
    expect(patch.changes).toEqual([{ path: "region", from: "us", to: "eu", op: "set" }]);
  });

  it("rule: nested objects are descended into and only their changed members sent", () => {
    const patch = diffPatch(
      { settings: { retention: 30, tier: "gold" } },
      { settings: { retention: 7, tier: "gold" } },
      plain,
    );

    expect(patch.body).toEqual({ settings: { retention: 30 } });
    expect(patch.changes).toEqual([{ path: "settings.retention", from: 7, to: 30, op: "set" }]);
  });

  it("rule: a list is sent whole when any item differs", () => {
    const patch = diffPatch({ roles: ["admin", "dev"] }, { roles: ["admin"] }, plain);

    expect(patch.body).toEqual({ roles: ["admin", "dev"] });
  });

  it("rule: a field never sent before has no `from`", () => {
    const patch = diffPatch({ name: "Acme" }, undefined, plain);

    expect(patch.changes).toEqual([{ path: "name", to: "Acme", op: "set" }]);
  });

  it("rule: a field that left the manifest is not sent (a PATCH cannot unset it)", () => {
    const patch = diffPatch({ name: "Acme" }, { name: "Acme", description: "old" }, plain);

    expect(patch).toEqual({ body: {}, changes: [] });
  });

  it("rule: an atomic object is sent whole when any member changes, listed member by member", () => {
    const patch = diffPatch(
      { source: { credentials: { username: "u", region: "eu" } } },
      { source: { credentials: { username: "u", region: "us" } } },
      { reassert: false, atomic: ["source.credentials"] },
    );

    expect(patch.body).toEqual({ source: { credentials: { username: "u", region: "eu" } } });
    expect(patch.changes).toEqual([{ path: "source.credentials.region", from: "us", to: "eu", op: "set" }]);
  });

  it("rule: a secret is compared by its hash and shown masked, never by value", () => {
    const password = secret("hunter2");

    const changed = diffPatch({ password }, { password: hashSecret("old", "salt") }, plain);
    const unchanged = diffPatch({ password }, { password: password.hash }, plain);

    expect(changed.body).toEqual({ password });
    expect(changed.changes).toEqual([{ path: "password", to: "(changed)", op: "set" }]);
    expect(JSON.stringify(changed.changes)).not.toContain("hunter2");
    expect(unchanged.body).toEqual({});
  });

  it("rule: re-assertion re-sends unchanged fields, but never an unchanged secret on its own", () => {
    const password = secret("hunter2");

    const patch = diffPatch(
      { name: "Acme", password },
      { name: "Acme", password: password.hash },
      { reassert: true },
    );

    expect(patch.body).toEqual({ name: "Acme" });
    expect(patch.changes).toEqual([]);
  });
});

describe("patchPlan", () => {
  const resource = { kind: "Organization" as const, name: "acme" };
  const write = (body: { name?: string }) => ({
    request: { route: "updateOrganization" as const, params: { organizationId: "o" }, body },
    record: () => ({ kind: "Organization", name: "acme" }),
  });

  it("rule: an empty body is in sync and sends nothing", () => {
    const plan = patchPlan(resource, [], write({}));

    expect(plan).toMatchObject({ outcome: "none", reason: "in sync" });
    expect(plan.write).toBeUndefined();
  });

  it("rule: a body is sent as planned, counted in the reason", () => {
    const changes = [{ path: "name", to: "Acme", op: "set" as const }];

    const plan = patchPlan(resource, changes, write({ name: "Acme" }));

    expect(plan).toMatchObject({
      outcome: "send",
      reason: "1 change(s)",
      write: {
        request: { route: "updateOrganization", params: { organizationId: "o" }, body: { name: "Acme" } },
      },
    });
  });

  it("rule: a request that first learns a live list says so", () => {
    const plan = patchPlan(resource, [], write({ name: "Acme" }), "then the list");

    expect(plan).toMatchObject({ reason: "first contact", followUp: "then the list" });
  });
});
