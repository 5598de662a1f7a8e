import { mkdtemp, readdir, rm } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { createFileStore } from "../src/state/file-store.js";
import { shardName } from "../src/state/kubernetes-store.js";
import type { State } from "../src/state/store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { driftlessAsync } from "./helpers/cli.js";
import { type FakeKubernetes, startFakeKubernetes } from "./helpers/fake-kubernetes.js";
import { realisticState } from "./helpers/realistic-state.js";
import { stateInSecrets } from "./helpers/state-secrets.js";

/**
 * `driftless copy-state`: the move from one replica to HA (the file store into the Kubernetes store)
 * and back, through the built CLI against the fake Kubernetes API, as an operator runs it from a
 * workstation with a kubeconfig.
 */

const NAMESPACE = "driftless";
const logger = createLogger("silent");
let fake: FakeKubernetes;
let root: string;

beforeEach(async () => {
  fake = await startFakeKubernetes();
  root = await mkdtemp(join(tmpdir(), "driftless-copy-state-"));
});
afterEach(async () => {
  await fake.close();
  await rm(root, { recursive: true, force: true });
});

/** A file store in `dir` holding `state`, saved in two steps: a snapshot and a journal line after it. */
async function fileState(dir: string, state: State): Promise<void> {
  const store = createFileStore(dir, { logger });
  const [first, ...rest] = Object.keys(state.resources);
  await store.load();
  await store.save({ ...state, resources: first ? { [first]: state.resources[first] } : {} } as State);
  await store.save(state);
  // Left without its close, which would fold the journal into the snapshot: as a stopped pod leaves it.
  expect(rest.length).toBeGreaterThan(0);
}

/** What the file store in `dir` holds now. */
async function loadFile(dir: string): Promise<State> {
  const store = createFileStore(dir, { logger, readOnly: true });
  try {
    return await store.load();
  } finally {
    await store.close();
  }
}

const copy = (args: string[]) =>
  driftlessAsync(["copy-state", ...args], {
    KUBECONFIG: fake.kubeconfigPath,
    DRIFTLESS_NAMESPACE: NAMESPACE,
  });

/** The empty Lease and state Secrets the HA overlay creates ahead (deploy/components/ha). */
function createdAhead(): void {
  for (const name of [
    "driftless-state",
    ...Array.from({ length: 512 }, (_, i) => shardName("driftless-state", i)),
  ])
    fake.put("secrets", NAMESPACE, { metadata: { name }, type: "Opaque" });
}

describe("driftless copy-state", () => {
  it("copies a file state, journal included, into the Kubernetes store the HA overlay created, and back", async () => {
    const state = realisticState(40);
    await fileState(join(root, "one-replica"), state);
    const files = await readdir(join(root, "one-replica"));
    createdAhead();

    const into = await copy(["--to", "kubernetes", "--state-dir", join(root, "one-replica")]);
    const back = await copy(["--to", "file", "--state-dir", join(root, "back")]);

    expect(files).toEqual(expect.arrayContaining(["state.json", "state.journal"]));
    expect(into.stderr).toBe("");
    expect(into.code).toBe(0);
    expect(into.stdout).toBe(
      `Copied the state of 40 resources from the file store in ${join(root, "one-replica")} into the Kubernetes store in namespace ${NAMESPACE} (Secret driftless-state and its shards), and read it back the same. The file store is left as it was.\n`,
    );
    expect(stateInSecrets(fake, NAMESPACE)).toEqual(state);
    // The HA Role grants no create: every Secret was there.
    expect(fake.requests.filter((request) => request.method === "POST")).toEqual([]);
    expect(back.code, back.stderr).toBe(0);
    expect(await loadFile(join(root, "back"))).toEqual(state);
  });

  it("refuses to write over a store that holds records, unless --overwrite, and then replaces them", async () => {
    await fileState(join(root, "one-replica"), realisticState(3));
    const other = { ...realisticState(5), salt: "another-salt" };
    await fileState(join(root, "other"), other);
    await copy(["--to", "kubernetes", "--state-dir", join(root, "other")]);
    const writesBefore = fake.requests.filter((request) => request.method !== "GET").length;

    const refused = await copy(["--to", "kubernetes", "--state-dir", join(root, "one-replica")]);
    const writesAfter = fake.requests.filter((request) => request.method !== "GET").length;
    const overwritten = await copy([
      "--to",
      "kubernetes",
      "--state-dir",
      join(root, "one-replica"),
      "--overwrite",
    ]);

    expect(refused.code).toBe(1);
    expect(refused.stdout).toBe("");
    expect(refused.stderr).toBe(
      `driftless: the Kubernetes store in namespace ${NAMESPACE} already holds the state of 5 resources: nothing was copied. Is a driftless already running on it? To replace it, give --overwrite\n`,
    );
    expect(writesAfter).toBe(writesBefore);
    expect(overwritten.code, overwritten.stderr).toBe(0);
    expect(stateInSecrets(fake, NAMESPACE)).toEqual(realisticState(3));
  });

  it("refuses a source that holds no records: a mistyped folder or namespace copies nothing", async () => {
    const empty = await copy(["--to", "kubernetes", "--state-dir", join(root, "no-such-folder")]);
    const back = await copy(["--to", "file", "--state-dir", join(root, "back")]);

    expect(empty.code).toBe(1);
    expect(empty.stderr).toBe(
      `driftless: the file store in ${join(root, "no-such-folder")} holds no resource records: nothing to copy (check DRIFTLESS_STATE_DIR, --state-dir)\n`,
    );
    expect(back.code).toBe(1);
    expect(back.stderr).toBe(
      `driftless: the Kubernetes store in namespace ${NAMESPACE} holds no resource records: nothing to copy (check DRIFTLESS_NAMESPACE, --namespace)\n`,
    );
    expect(fake.requests.filter((request) => request.method !== "GET")).toEqual([]);
  });
});
