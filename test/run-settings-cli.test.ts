import { spawnSync } from "node:child_process";
import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { repo } from "./helpers/cli.js";

/**
 * `driftless run` checks every setting before it starts anything: a bad one is one line on stderr
 * naming its variable, exit 1, and no simulator started, no port bound, no watch begun and no pass
 * run (none of their log lines, no stack trace). Through the built CLI; the platform URLs, when set,
 * are a closed loopback port that nothing reaches.
 */

let root: string;
beforeEach(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-run-settings-"));
  await mkdir(join(root, "manifests"));
  await writeFile(join(root, "README.md"), "a repository holding more than its manifests\n");
  await writeFile(join(root, "README.md.empty"), "\n");
});
afterEach(async () => {
  await rm(root, { recursive: true, force: true });
});

/** `driftless run` in `root`, stopped after 60 s: one that started instead of refusing never ends. */
function run(env: Record<string, string>) {
  const result = spawnSync(process.execPath, [join(repo, "dist", "cli.js"), "run"], {
    encoding: "utf8",
    cwd: root,
    env: {
      PATH: process.env.PATH ?? "",
      HOME: root,
      DRIFTLESS_MANIFESTS: join(root, "manifests"),
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_LISTEN: "127.0.0.1:0",
      ...env,
    },
    timeout: 60_000,
  });
  return { code: result.status, stdout: result.stdout, stderr: result.stderr };
}

const PLATFORM = {
  DRIFTLESS_MANAGEMENT_URL: "http://127.0.0.1:9/management",
  DRIFTLESS_OBSERVABILITY_URL: "http://127.0.0.1:9/observability",
  DRIFTLESS_MANAGEMENT_KEY_ID: "key-id",
  DRIFTLESS_MANAGEMENT_KEY_SECRET: "key-secret",
  DRIFTLESS_OBSERVABILITY_TOKEN: "observability-token",
};

const cases: Array<[string, () => Record<string, string>, RegExp]> = [
  [
    "a manifests folder that does not exist",
    () => ({ DRIFTLESS_MANIFESTS: join(root, "manifets") }),
    /DRIFTLESS_MANIFESTS: .*manifets does not exist/,
  ],
  [
    "a manifests folder that is a file",
    () => ({ DRIFTLESS_MANIFESTS: join(root, "README.md") }),
    /DRIFTLESS_MANIFESTS: .*README\.md is not a folder/,
  ],
  [
    "a bad reconcile schedule",
    () => ({ DRIFTLESS_RECONCILE_SCHEDULE: "every minute" }),
    /DRIFTLESS_RECONCILE_SCHEDULE/,
  ],
  ["a bad poll schedule", () => ({ DRIFTLESS_POLL_SCHEDULE: "* * *" }), /DRIFTLESS_POLL_SCHEDULE/],
  [
    "a bad reassert schedule",
    () => ({ DRIFTLESS_REASSERT_SCHEDULE: "61 * * * *" }),
    /DRIFTLESS_REASSERT_SCHEDULE/,
  ],
  ["a bad listen address", () => ({ DRIFTLESS_LISTEN: "localhost" }), /DRIFTLESS_LISTEN must be host:port/],
  [
    "one platform URL without the other",
    () => ({ DRIFTLESS_MANAGEMENT_URL: PLATFORM.DRIFTLESS_MANAGEMENT_URL }),
    /DRIFTLESS_OBSERVABILITY_URL is unset/,
  ],
  [
    "the platform URLs without the management key",
    () => ({ ...PLATFORM, DRIFTLESS_MANAGEMENT_KEY_SECRET: "" }),
    /DRIFTLESS_MANAGEMENT_KEY_SECRET/,
  ],
  [
    "the platform URLs without the observability token",
    () => ({ ...PLATFORM, DRIFTLESS_OBSERVABILITY_TOKEN: "" }),
    /DRIFTLESS_OBSERVABILITY_TOKEN/,
  ],
  [
    "a state key file that does not exist",
    () => ({ DRIFTLESS_STATE_KEY_FILE: join(root, "no-key") }),
    /DRIFTLESS_STATE_KEY_FILE: .*no-key/,
  ],
  [
    "a state folder that is a file",
    () => ({ DRIFTLESS_STATE_DIR: join(root, "README.md") }),
    /DRIFTLESS_STATE_DIR/,
  ],
  [
    "the Kubernetes state store without a Kubernetes API",
    // The simulator asked for by name: without it, the missing URLs are refused first.
    () => ({
      DRIFTLESS_STATE_STORE: "kubernetes",
      DRIFTLESS_SIMULATOR: "builtin",
      KUBECONFIG: join(root, "no-kubeconfig"),
    }),
    /DRIFTLESS_STATE_STORE=kubernetes/,
  ],
  [
    "a status token file that does not exist (a Secret without its key)",
    () => ({ DRIFTLESS_STATUS_TOKEN_FILE: join(root, "status-token") }),
    /DRIFTLESS_STATUS_TOKEN_FILE: cannot read .*status-token/,
  ],
  [
    "an empty webhook token file, which no request could match",
    () => ({ DRIFTLESS_WEBHOOK_TOKEN_FILE: join(root, "README.md.empty") }),
    /DRIFTLESS_WEBHOOK_TOKEN_FILE: .*README\.md\.empty is empty/,
  ],
  [
    "a notification URL without its secret",
    () => ({ DRIFTLESS_NOTIFY_URL: "http://127.0.0.1:9/hook" }),
    /DRIFTLESS_NOTIFY_SECRET/,
  ],
];

describe("driftless run with a bad setting", () => {
  it.each(cases)("%s: one line naming it, exit 1, nothing started", (_, env, named) => {
    const result = run(env());

    expect(result.code, result.stdout + result.stderr).toBe(1);
    const lines = result.stderr.trimEnd().split("\n");
    expect(lines, result.stderr).toHaveLength(1);
    expect(lines[0]).toMatch(/^driftless: /);
    expect(lines[0]).toMatch(named);
    expect(result.stderr).not.toMatch(/\n\s+at |SIMULATOR|key-secret|observability-token/);
    for (const started of ["listening", "watching manifests", "pass", "simulator", "driftless run started"]) {
      expect(result.stdout).not.toContain(`"msg":"${started}`);
    }
  });
});
