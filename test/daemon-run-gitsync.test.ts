import { describe, expect, it } from "vitest";
import {
  apiKey,
  files,
  metricsOf,
  passesFinished,
  statusOf,
  until,
  useDaemonRun,
  WATCHES,
  WEBHOOK_TOKEN,
} from "./helpers/daemon-run.js";

/**
 * `driftless run` as a real process on a git-sync layout, against the simulator in this process: what
 * reaches the platform when revisions land, by watch and by webhook, and when one is broken.
 * Needs dist/ built (npm test builds first).
 */

const run = useDaemonRun();

describe("driftless run on a git-sync layout", () => {
  it("sends the change of a new revision after git-sync swaps the link and deletes the old worktree", async () => {
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");
    const old = run.layout.revision;

    const revision = await run.layout.publish(files("ci-deployer-renamed"));

    const patch = await until(() =>
      run.keyPatches().find((r) => (r.body as { name?: string }).name === "ci-deployer-renamed"),
    );
    const shown = await until(async () => {
      const body = await statusOf(d);
      return body.revision === revision ? body : undefined;
    });
    const metrics = await metricsOf(d);
    expect(patch.body).toEqual({ name: "ci-deployer-renamed" });
    expect(shown.resources).toContainEqual(
      expect.objectContaining({ kind: "ApiKey", name: "ci-deployer", status: "Synced", lastError: null }),
    );
    expect(metrics).toContain(`driftless_source_revision_info{revision="${revision}"} 1`);
    expect(metrics).not.toContain(`revision="${old}"`);
  });

  it("starts a pass on POST /hooks/sync with the right token only", async () => {
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");
    const passes = passesFinished(d);

    // That a refused hook starts no pass is shown in-process (daemon-triggers); here, what crosses HTTP.
    const wrong = await fetch(`${d.url}/hooks/sync/not-the-token`, { method: "POST" });
    const right = await fetch(`${d.url}/hooks/sync/${WEBHOOK_TOKEN}`, { method: "POST" });
    await d.waitForLog((l) => l.msg === "pass finished" && l.trigger === "webhook");

    expect(wrong.status).toBe(401);
    expect(d.logs.some((l) => l.msg === "webhook rejected: wrong token")).toBe(true);
    expect(right.status).toBe(202);
    expect(passesFinished(d)).toBe(passes + 1);
    expect(d.stderr()).not.toContain(WEBHOOK_TOKEN);
  });

  it("leaves everything as it was on a broken commit, shows the errors, and applies the next good one", async () => {
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");
    const patchesBefore = run.keyPatches().length;

    const broken = await run.layout.publish({
      "keys/ci-deployer.yaml": `${apiKey("should-never-be-sent")}  roles: [developer\n`,
      "watches.yaml": WATCHES,
    });
    const afterBroken = await until(async () => {
      const body = await statusOf(d);
      return body.revision === broken ? body : undefined;
    });
    const metricsBroken = await metricsOf(d);
    const patchesAfterBroken = run.keyPatches().length;
    await run.layout.publish(files("fixed-name"));
    const fixed = await until(() =>
      run.keyPatches().find((r) => (r.body as { name?: string }).name === "fixed-name"),
    );

    expect(patchesAfterBroken).toBe(patchesBefore);
    expect(metricsBroken).toMatch(/^driftless_manifest_errors [1-9]\d*$/m);
    expect(afterBroken.resources).toContainEqual(
      expect.objectContaining({ kind: "ApiKey", status: "Invalid" }),
    );
    expect(fixed.body).toEqual({ name: "fixed-name" });
    expect(
      run.simulator.requests.some((r) => JSON.stringify(r.body ?? "").includes("should-never-be-sent")),
    ).toBe(false);
  });

  it("names the revision when the git-sync link is above the manifests folder: status and metric", async () => {
    const nested = (name: string) =>
      Object.fromEntries(Object.entries(files(name)).map(([path, text]) => [`manifests/${path}`, text]));
    await run.layout.publish(nested("ci-deployer"));
    const d = await run.start({ DRIFTLESS_MANIFESTS: `${run.layout.link}/manifests` });
    await d.waitForLog((l) => l.msg === "pass finished");

    const revision = await run.layout.publish(nested("ci-deployer-renamed"));

    const shown = await until(async () => {
      const body = await statusOf(d);
      return body.revision === revision ? body : undefined;
    });
    const metrics = await metricsOf(d);
    expect(shown.resources).toContainEqual(expect.objectContaining({ kind: "ApiKey", status: "Synced" }));
    expect(metrics).toContain(`driftless_source_revision_info{revision="${revision}"} 1`);
  });
});
