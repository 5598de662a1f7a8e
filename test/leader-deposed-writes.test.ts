import { mkdir, mkdtemp, readdir, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Writable } from "node:stream";
import { afterEach, describe, expect, it } from "vitest";
import { leaderOnlyStore } from "../src/leader/leader-only-store.js";
import { createReconciler } from "../src/reconcile/engine.js";
import type { Sender } from "../src/reconcile/send.js";
import { createFileStore } from "../src/state/file-store.js";
import { createLogger } from "../src/telemetry/logger.js";
import { answerOf } from "./helpers/answers.js";
import { apiKey } from "./helpers/daemon-run.js";
import { switchableLeadership } from "./helpers/switchable-leadership.js";

/**
 * A leader that loses its Lease while a request is in flight: the request runs to its answer (it cannot
 * be called back), but the pass must not write the state any more, since the new leader owns it now.
 */

const roots: string[] = [];
afterEach(async () => {
  await Promise.all(roots.splice(0).map((root) => rm(root, { recursive: true, force: true })));
});

describe("a leader deposed during a pass", () => {
  it("does not write the state once it has lost the lease, even when its in-flight request succeeds", async () => {
    const root = await mkdtemp(join(tmpdir(), "driftless-deposed-"));
    roots.push(root);
    const manifests = join(root, "manifests");
    await mkdir(manifests);
    await writeFile(join(manifests, "key.yaml"), apiKey("renamed-by-git"));
    const leadership = switchableLeadership(true);
    const store = createFileStore(join(root, "state"));
    let answer = (_value: unknown) => {};
    let sent = () => {};
    const requestSent = new Promise<void>((resolve) => {
      sent = resolve;
    });
    const send: Sender = (request) => {
      sent();
      return new Promise((resolve) => {
        answer = () =>
          resolve({ result: answerOf(request, { id: "key", ...request.body }), requestId: "req-1" });
      });
    };
    const reconciler = createReconciler({
      manifests,
      store: leaderOnlyStore(store, leadership),
      send,
      secrets: { env: {}, secretsDir: join(root, "secrets") },
      logger: createLogger("silent", new Writable({ write: (_c, _e, done) => done() })),
    });

    const pass = reconciler.pass({ trigger: "cli" });
    await requestSent;
    leadership.set(false);
    answer(undefined);
    const result = await pass;
    await store.close();

    expect(result.statuses).toMatchObject([{ kind: "ApiKey", name: "ci-deployer", status: "Failed" }]);
    expect(result.statuses[0]?.message).toMatch(/no longer the leader/);
    expect(await readdir(join(root, "state"))).not.toContain("state.json");
  });
});
