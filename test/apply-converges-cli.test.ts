import { mkdtemp, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, expect, it } from "vitest";
import { driftless } from "./helpers/cli.js";

/** A CI job reads apply's exit code: the first apply of the examples converges in one run. */

let stateDir: string | undefined;
afterEach(async () => {
  if (stateDir) await rm(stateDir, { recursive: true, force: true });
});

it("applies examples/ against the built-in simulator in one run: exit 0, the pipe given its new endpoint's id", async () => {
  stateDir = await mkdtemp(join(tmpdir(), "driftless-converge-"));
  const env = {
    DRIFTLESS_STATE_DIR: stateDir,
    DRIFTLESS_SECRETS_DIR: "examples/secrets",
    EXAMPLE_KAFKA_PASSWORD: "demo-kafka-password",
  };

  const first = driftless(["apply", "examples", "--output", "json"], env);
  const second = driftless(["apply", "examples", "--output", "json"], env);

  expect(first.code, first.stderr).toBe(0);
  const report = JSON.parse(first.stdout);
  expect(report.ok).toBe(true);
  const pipePatch = report.sent.find(
    (s: { kind: string; request?: { body?: { source?: { kafka?: unknown } } } }) =>
      s.kind === "DataPipe" && s.request?.body?.source?.kafka,
  );
  expect(JSON.stringify(pipePatch?.request.body)).toMatch(/reversePrivateEndpointIds":\["[0-9a-f-]{36}"/);
  expect(second.code).toBe(0);
  expect(JSON.parse(second.stdout).sent).toEqual([]);
});
