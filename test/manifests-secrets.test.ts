import { mkdir, mkdtemp, rm, symlink, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { validateCommand } from "../src/commands/validate.js";
import { Config } from "../src/config.js";
import { isDriftlessError } from "../src/errors.js";
import { loadManifests } from "../src/manifests/load.js";
import { resolveSecret, secretFields } from "../src/manifests/secrets.js";

let dir: string;
let secretsDir: string;

beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-secrets-"));
  secretsDir = join(dir, "secrets");
  await mkdir(secretsDir);
});

afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

/** The message resolveSecret throws, or "resolved: <value>". */
async function outcome(
  ref: Parameters<typeof resolveSecret>[0],
  env: Record<string, string> = {},
  folder = secretsDir,
) {
  try {
    return `resolved: ${await resolveSecret(ref, { env, secretsDir: folder })}`;
  } catch (error) {
    expect(isDriftlessError(error)).toBe(true);
    return (error as Error).message;
  }
}

describe("resolving a secret reference", () => {
  it("reads an environment variable, never a DRIFTLESS_* one", async () => {
    const env = { KAFKA_PASSWORD: "p4ss", DRIFTLESS_MANAGEMENT_KEY_SECRET: "root" };

    expect(await outcome({ fromEnv: "KAFKA_PASSWORD" }, env)).toBe("resolved: p4ss");
    expect(await outcome({ fromEnv: "DRIFTLESS_MANAGEMENT_KEY_SECRET" }, env)).toBe(
      "secret fromEnv DRIFTLESS_MANAGEMENT_KEY_SECRET: DRIFTLESS_* variables may not be read",
    );
    expect(await outcome({ fromEnv: "MISSING" }, env)).toBe(
      "secret fromEnv MISSING: the variable is not set or empty",
    );
  });

  it("reads a file inside the secrets folder, without its trailing newline", async () => {
    await mkdir(join(secretsDir, "db"));
    await writeFile(join(secretsDir, "db", "password"), "s3cret\n");

    expect(await outcome({ fromFile: "db/password" })).toBe("resolved: s3cret");
    expect(await outcome({ fromFile: "db/missing" })).toBe(
      `secret fromFile db/missing: no such file in the secrets folder ${secretsDir} (DRIFTLESS_SECRETS_DIR)`,
    );
    expect(await outcome({ fromFile: "db/password" }, {}, join(dir, "nowhere"))).toBe(
      `secret fromFile db/password: the secrets folder ${join(dir, "nowhere")} cannot be read: set DRIFTLESS_SECRETS_DIR (--secrets-dir) to the folder that holds the secret files`,
    );
  });

  it("never reads outside the secrets folder: no '..', no absolute path, no symlink out", async () => {
    await writeFile(join(dir, "outside"), "pod-credential");
    await symlink(join(dir, "outside"), join(secretsDir, "escape"));
    await mkdir(join(secretsDir, "sub"));

    expect(await outcome({ fromFile: "../outside" })).toBe(
      "secret fromFile ../outside: must be a path inside the secrets folder, without '..'",
    );
    expect(await outcome({ fromFile: join(dir, "outside") })).toMatch(
      /must be a path inside the secrets folder/,
    );
    expect(await outcome({ fromFile: "escape" })).toBe(
      `secret fromFile escape: a symlink leads outside the secrets folder ${secretsDir} (DRIFTLESS_SECRETS_DIR)`,
    );
    expect(await outcome({ fromFile: "." })).toBe(
      "secret fromFile .: names the secrets folder itself, not a file in it",
    );
  });
});

describe("listing the secret references of a spec", () => {
  it("gives each reference with its field path, for the engine to resolve and hash", async () => {
    const set = await loadManifests(join(import.meta.dirname, "..", "examples"));
    const pipe = set.manifests.find((m) => m.name === "events-from-s3");

    const fields = secretFields(pipe?.spec);

    expect(fields).toEqual([
      {
        path: ["spec", "source", "objectStorage", "accessKey", "accessKeyId"],
        ref: { fromFile: "s3-access-key-id" },
      },
      {
        path: ["spec", "source", "objectStorage", "accessKey", "secretKey"],
        ref: { fromFile: "s3-secret-key" },
      },
    ]);
  });
});

describe("validate --resolve-secrets", () => {
  it("reports each secret that cannot be read at its line, and never prints a value", async () => {
    const manifests = join(dir, "manifests");
    await mkdir(manifests);
    await writeFile(join(dir, "outside"), "pod-credential");
    await symlink(join(dir, "outside"), join(secretsDir, "escape"));
    await writeFile(join(secretsDir, "secret-key"), "never-printed");
    await writeFile(
      join(manifests, "pipe.yaml"),
      [
        "apiVersion: driftless/v1",
        "kind: DataPipe",
        "metadata: {name: clicks}",
        "spec:",
        "  organizationId: 9a1c5e2f-3b4d-4c6e-8f70-1a2b3c4d5e6f",
        "  serviceId: 2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7",
        "  dataPipeId: 3b4c5d6e-7f8a-4b9c-8d1e-2f3a4b5c6d7e",
        "  name: clicks",
        "  source:",
        "    kinesis:",
        "      accessKey:",
        "        accessKeyId: {fromEnv: KINESIS_KEY_ID}",
        "        secretKey: {fromFile: escape}",
        "",
      ].join("\n"),
    );
    const out: string[] = [];
    const io = { out: (t: string) => out.push(t), err: (t: string) => out.push(t), env: {} };

    const code = await validateCommand(
      Config.parse({ manifests, secretsDir }),
      { output: "text", resolveSecrets: true },
      io,
    );

    expect(code).toBe(1);
    expect(out).toEqual([
      "pipe.yaml:12:22  DataPipe/clicks  spec.source.kinesis.accessKey.accessKeyId: secret fromEnv KINESIS_KEY_ID: the variable is not set or empty",
      `pipe.yaml:13:20  DataPipe/clicks  spec.source.kinesis.accessKey.secretKey: secret fromFile escape: a symlink leads outside the secrets folder ${secretsDir} (DRIFTLESS_SECRETS_DIR)`,
      "2 problems in 1 manifest; 0 of 1 manifest valid",
    ]);
    expect(out.join("\n")).not.toContain("pod-credential");
  });
});
