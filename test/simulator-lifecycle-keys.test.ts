import { mkdtemp, readFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { keyHashes } from "../src/platform/management.js";
import { defaultIds as ids, startSimulator } from "../src/simulator/index.js";
import { basic, org, useFullSimulator } from "./helpers/simulator-http.js";

/**
 * The published contract's API key lifecycle in the simulator's full mode: a key made with hashData
 * authenticates with the id and secret its caller made (so a test can prove that a secret driftless
 * wrote works), secrets are answered once or never, and the calling key cannot delete itself.
 */

const platform = useFullSimulator();
const keys = `${org}/keys`;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A key id and secret as a caller makes them. */
const made = { keyId: "DRIFTLESSKEYID7Q2X", keySecret: "a-secret-only-the-caller-knows" };
const create = (extra: Record<string, unknown> = {}) => ({
  name: "deployer",
  roles: ["developer"],
  hashData: keyHashes(made.keyId, made.keySecret),
  ...extra,
});

describe("an API key made with hashData", () => {
  it("authenticates afterwards with the id and secret its caller made, and no answer carries either", async () => {
    await platform.start();

    const created = await platform.management("POST", keys, create());
    const key = created.json.result.key;
    const read = await platform.management(
      "GET",
      `${keys}/${key.id}`,
      undefined,
      basic(made.keyId, made.keySecret),
    );
    const wrong = await platform.management(
      "GET",
      `${keys}/${key.id}`,
      undefined,
      basic(made.keyId, "guess"),
    );

    expect(created.status).toBe(200);
    expect(created.requestIssues).toEqual([]);
    expect(created.answerIssues).toEqual([]);
    expect(Object.keys(created.json.result)).toEqual(["key"]);
    expect(key).toMatchObject({
      name: "deployer",
      roles: ["developer"],
      state: "enabled",
      keySuffix: "7Q2X",
    });
    expect(key.id).toMatch(UUID);
    expect(key.id).not.toBe(made.keyId);
    expect(read.status).toBe(200);
    expect(read.json.result).toEqual({ ...key, usedAt: expect.any(String) });
    expect(wrong.status).toBe(401);
    expect(JSON.stringify([created.json, read.json])).not.toContain(made.keySecret);
  });

  it("refuses hashes that are not the base64 of a SHA-256 digest, and hashData without all three fields", async () => {
    await platform.start();
    const hex = (value: string) =>
      Buffer.from(keyHashes(made.keyId, value).keySecretHash, "base64").toString("hex");

    const inHex = await platform.management(
      "POST",
      keys,
      create({ hashData: { ...keyHashes(made.keyId, made.keySecret), keySecretHash: hex(made.keySecret) } }),
    );
    const partial = await platform.management(
      "POST",
      keys,
      create({ hashData: { keyIdHash: keyHashes(made.keyId, "").keyIdHash, keyIdSuffix: "7Q2X" } }),
    );

    expect(inHex.status).toBe(400);
    expect(inHex.json.error).toBe("BAD_REQUEST: hashData.keySecretHash: must match ^[A-Za-z0-9+/]{43}=$");
    expect(partial.status).toBe(400);
    expect(partial.requestIssues).toEqual([]);
    expect(partial.json.error).toBe(
      "BAD_REQUEST: hashData: keyIdHash, keyIdSuffix and keySecretHash go together",
    );
  });

  it("refuses a second key with the same key id, and a key without a role", async () => {
    await platform.start();
    await platform.management("POST", keys, create());

    const again = await platform.management("POST", keys, create({ name: "again" }));
    const roleless = await platform.management("POST", keys, create({ roles: [] }));

    expect([again.status, roleless.status]).toEqual([400, 400]);
    expect([again.requestIssues, roleless.requestIssues]).toEqual([[], []]);
    expect(again.json.error).toBe("BAD_REQUEST: hashData.keyIdHash: a key with this key id exists");
    expect(roleless.json.error).toBe("BAD_REQUEST: roles: a key needs at least one role");
  });
});

describe("an API key made without hashData", () => {
  it("answers its keyId and keySecret once, which authenticate; reads and the list never carry them", async () => {
    await platform.start();

    const created = await platform.management("POST", keys, { name: "by hand", roles: ["admin"] });
    const { key, keyId, keySecret } = created.json.result;
    const asIt = basic(keyId, keySecret);
    const read = await platform.management("GET", `${keys}/${key.id}`, undefined, asIt);
    const list = await platform.management("GET", keys, undefined, asIt);

    expect(created.answerIssues).toEqual([]);
    expect(keyId).toMatch(/^[0-9A-F]{20}$/);
    expect(keySecret).toEqual(expect.any(String));
    expect(key.keySuffix).toBe(keyId.slice(-4));
    expect(read.status).toBe(200);
    expect(list.answerIssues).toEqual([]);
    expect(list.json.result.map((k: { id: string }) => k.id)).toEqual([
      ids.managementKeyId,
      ids.ciDeployerKeyId,
      key.id,
    ]);
    expect(JSON.stringify([read.json, list.json])).not.toContain(keySecret);
    expect(JSON.stringify(list.json)).not.toMatch(/secret|Hash/i);
  });
});

describe("deleting an API key", () => {
  it("refuses the key that authenticates the request; another key goes, answered without a result", async () => {
    await platform.start();
    const created = await platform.management("POST", keys, create());
    const { id } = created.json.result.key;
    const asMade = basic(made.keyId, made.keySecret);

    const itself = await platform.management("DELETE", `${keys}/${id}`, undefined, asMade);
    const other = await platform.management("DELETE", `${keys}/${id}`);
    const afterwards = await platform.management("GET", `${keys}/${ids.ciDeployerKeyId}`, undefined, asMade);
    const again = await platform.management("DELETE", `${keys}/${id}`);

    expect(itself.status).toBe(400);
    expect(itself.json.error).toBe(
      "BAD_REQUEST: the key that authenticates this request cannot delete itself",
    );
    expect(other.status).toBe(200);
    expect(Object.keys(other.json).sort()).toEqual(["requestId", "status"]);
    expect(other.answerIssues).toEqual([]);
    expect(afterwards.status).toBe(401);
    expect(again.status).toBe(404);
    expect(again.json.error).toMatch(/^NOT_FOUND: key .* does not exist/);
  });
});

describe("a created key in the state file", () => {
  it("keeps its hashes, never its secret, and still authenticates after a restart", async () => {
    const stateFile = join(await mkdtemp(join(tmpdir(), "driftless-sim-keys-")), "platform.json");
    const first = await platform.start({ stateFile });
    const created = await platform.management("POST", keys, create());
    await first.close();

    const second = await startSimulator({ contract: "full", stateFile, rateLimit: { management: false } });
    const read = await fetch(`${second.managementUrl}${keys}/${created.json.result.key.id}`, {
      headers: { authorization: basic(made.keyId, made.keySecret) },
    });
    await second.close();
    const saved = await readFile(stateFile, "utf8");

    expect(read.status).toBe(200);
    expect(saved).toContain(keyHashes(made.keyId, made.keySecret).keySecretHash);
    expect(saved).not.toContain(made.keySecret);
  });
});
