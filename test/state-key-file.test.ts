import { mkdtemp, readFile, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { hashSecret } from "../src/plan/secret.js";
import { driftless } from "./helpers/cli.js";

/** DRIFTLESS_STATE_KEY_FILE keeps the key of the secret hashes out of the state the hashes are in. */

let root: string | undefined;
afterEach(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

it("hashes secrets with the key file's key, not the salt stored in the state", async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-state-key-"));
  const keyFile = join(root, "state.key");
  await writeFile(keyFile, "a-key-kept-outside-the-state\n");
  const env = {
    DRIFTLESS_STATE_DIR: join(root, "state"),
    DRIFTLESS_SECRETS_DIR: "examples/secrets",
    EXAMPLE_KAFKA_PASSWORD: "demo-kafka-password",
    DRIFTLESS_STATE_KEY_FILE: keyFile,
  };

  const applied = driftless(["apply", "examples"], env);

  expect(applied.code, applied.stderr).toBe(0);
  const text = await readFile(join(root, "state", "state.json"), "utf8");
  const { salt } = JSON.parse(text) as { salt: string };
  expect(text).toContain(hashSecret("demo-kafka-password", "a-key-kept-outside-the-state"));
  expect(text).not.toContain(hashSecret("demo-kafka-password", salt));
  expect(driftless(["plan", "examples"], env).code).toBe(0);
}, 60_000);
