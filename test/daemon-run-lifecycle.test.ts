import { createHmac, randomBytes } from "node:crypto";
import { writeFile } from "node:fs/promises";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import {
  apiKey,
  files,
  KEY_ROUTE,
  metricsOf,
  statusOf,
  until,
  useDaemonRun,
  WATCHES,
} from "./helpers/daemon-run.js";
import { createGitSyncLayout } from "./helpers/git-sync-layout.js";
import {
  createHttpTestServer,
  type HttpTestServer,
  type RecordedRequest,
} from "./helpers/http-test-server.js";
import { mskEndpoint } from "./helpers/manifests.js";

/**
 * `driftless run` as a real process: a deleted manifest shows as Unmanaged in /status and the metrics,
 * and what the daemon tells the outside: a signed webhook when a pass's result changes and at once on an
 * unknown create (retried when the receiver fails), and a GitHub commit status on the synced commit.
 * The receivers are local HTTP servers on 127.0.0.1, port 0. Needs dist/ built.
 */

const run = useDaemonRun();
const SECRET = "notify-secret-for-tests-1f2e";
const TOKEN = "ghp_token-for-tests-9a8b";
const ENDPOINT_ROUTE =
  "/v1/organizations/{organizationId}/services/{serviceId}/datapipesReversePrivateEndpoints";

const endpoint = mskEndpoint("orders-msk");

const broken = {
  "keys/ci-deployer.yaml": `${apiKey("never-sent")}  roles: [developer\n`,
  "watches.yaml": WATCHES,
};

let receiver: HttpTestServer;
beforeEach(async () => {
  receiver = await createHttpTestServer();
});
afterEach(() => receiver.close());

const events = () => receiver.requests.filter((r) => r.headers["x-driftless-event"]);
const signed = (r: RecordedRequest) =>
  r.headers["x-driftless-signature"] ===
  `sha256=${createHmac("sha256", SECRET).update(r.body).digest("hex")}`;

async function notifyEnv(): Promise<Record<string, string>> {
  const secretFile = join(run.root, "notify-secret");
  await writeFile(secretFile, `${SECRET}\n`);
  return {
    DRIFTLESS_NOTIFY_URL: `${receiver.url}/hooks/a-secret-path`,
    DRIFTLESS_NOTIFY_SECRET_FILE: secretFile,
  };
}

describe("driftless run: removals and notifications", () => {
  it("shows a deleted manifest as Unmanaged in /status and driftless_resources, and sends nothing for it", async () => {
    const d = await run.start();
    await d.waitForLog((l) => l.msg === "pass finished");
    const patches = run.keyPatches().length;

    const revision = await run.layout.publish({ "watches.yaml": WATCHES });
    const shown = await until(async () => {
      const body = await statusOf(d);
      return body.revision === revision ? body : undefined;
    });
    const metrics = await metricsOf(d);

    expect(shown.resources).toContainEqual(
      expect.objectContaining({
        kind: "ApiKey",
        name: "ci-deployer",
        status: "Unmanaged",
        lastError: expect.stringContaining("driftless forget ApiKey/ci-deployer"),
      }),
    );
    expect(metrics).toContain('driftless_resources{kind="ApiKey",status="Unmanaged"} 1');
    expect(run.keyPatches()).toHaveLength(patches);
  });

  it("posts a signed webhook when a pass's result changes, retries a failed delivery, and says nothing when it does not change", async () => {
    receiver.reply({ status: 500 });
    const d = await run.start(await notifyEnv());
    await d.waitForLog((l) => l.msg === "pass finished");

    const bad = await run.layout.publish(broken);
    await until(() => events().length >= 2);
    const good = await run.layout.publish(files("ci-deployer"));
    await until(() => events().length >= 3);
    await fetch(`${d.url}/hooks/sync/hook-token-for-tests`, { method: "POST" });
    await d.waitForLog((l) => l.msg === "pass finished" && l.trigger === "webhook");
    // A clean stop delivers whatever the passes queued: every event there will ever be is in.
    await d.stop("SIGTERM");

    const [failed, retried, recovered, ...more] = events();
    const failure = retried?.json as { event: string; ok: boolean; revision: string; manifestErrors: number };
    const back = recovered?.json as {
      ok: boolean;
      revision: string;
      notSynced: unknown[];
      counts: Record<string, number>;
    };
    expect(more).toEqual([]);
    expect(failed?.body).toBe(retried?.body);
    expect(failed?.headers["x-driftless-delivery"]).toBe(retried?.headers["x-driftless-delivery"]);
    expect(retried?.method).toBe("POST");
    expect(retried?.url).toBe("/hooks/a-secret-path");
    expect(retried?.headers["content-type"]).toBe("application/json");
    expect([failed, retried, recovered].every((r) => r && signed(r))).toBe(true);
    expect(failure).toMatchObject({ event: "pass", ok: false, revision: bad });
    expect(failure.manifestErrors).toBeGreaterThan(0);
    expect(back).toMatchObject({ ok: true, revision: good, notSynced: [] });
    expect(back.counts.Synced).toBe(3);
    expect(d.stderr()).not.toContain(SECRET);
    expect(d.stderr()).not.toContain("a-secret-path");
  });

  it("keeps a pass event within 64 KiB however many resources are not Synced: the most urgent first, and how many were left out", async () => {
    const d = await run.start(await notifyEnv());
    await d.waitForLog((l) => l.msg === "pass finished");
    run.simulator.inject({
      api: "management",
      method: "PATCH",
      route: KEY_ROUTE,
      kind: "status",
      status: 400,
    });
    // 2,000 manifests with a typo, each Invalid with its own message, after which the key is refused.
    const typos = Array.from(
      { length: 2_000 },
      (_, i) => `${apiKey(`typo-${i}`).replace("name: ci-deployer", `name: typo-${i}`)}  colour: blue\n`,
    ).join("---\n");

    const revision = await run.layout.publish({ ...files("refused"), "typos.yaml": typos });
    const event = await until(() =>
      events().find((r) => (r.json as { revision?: string } | undefined)?.revision === revision),
    );
    const body = event.json as {
      counts: Record<string, number>;
      notSynced: Array<{ kind: string; name: string; status: string; message?: string }>;
      notSyncedOmitted: number;
    };

    expect(signed(event)).toBe(true);
    expect(Buffer.byteLength(event.body)).toBeLessThanOrEqual(64 * 1024);
    expect(body.counts.Invalid).toBe(2_000);
    expect(body.counts.Failed).toBe(1);
    expect(body.notSynced[0]).toMatchObject({ kind: "ApiKey", name: "ci-deployer", status: "Failed" });
    expect(body.notSynced[1]).toMatchObject({
      status: "Invalid",
      message: expect.stringContaining("colour"),
    });
    expect(body.notSyncedOmitted).toBeGreaterThan(0);
    expect(body.notSynced.length + body.notSyncedOmitted).toBe(2_001);
  });

  it("goes on passing while the webhook receiver never answers", async () => {
    receiver.fallback = { hang: true };
    const d = await run.start(await notifyEnv());
    await d.waitForLog((l) => l.msg === "pass finished");

    await run.layout.publish(broken);
    await until(() => events().length >= 1);
    const good = await run.layout.publish(files("fixed-name"));
    const shown = await until(async () => {
      const body = await statusOf(d);
      return body.revision === good ? body : undefined;
    });

    expect(shown.resources).toContainEqual(
      expect.objectContaining({ kind: "ApiKey", name: "ci-deployer", status: "Synced" }),
    );
    expect(run.keyPatches().some((r) => (r.body as { name?: string }).name === "fixed-name")).toBe(true);
  });

  it("posts an unknown-create webhook as soon as an endpoint's create gets no answer", async () => {
    run.simulator.inject({ api: "management", method: "POST", route: ENDPOINT_ROUTE, kind: "drop" });
    const d = await run.start(await notifyEnv());
    await d.waitForLog((l) => l.msg === "pass finished");

    await run.layout.publish({ ...files("ci-deployer"), "endpoint.yaml": endpoint });
    await until(() => events().some((r) => r.headers["x-driftless-event"] === "unknown-create"));

    const unknown = events().find((r) => r.headers["x-driftless-event"] === "unknown-create");
    expect(unknown && signed(unknown)).toBe(true);
    expect(unknown?.json).toMatchObject({
      event: "unknown-create",
      resource: {
        kind: "ReversePrivateEndpoint",
        name: "orders-msk",
        status: "Unknown",
        message: expect.stringContaining("--allow-create ReversePrivateEndpoint/orders-msk"),
      },
    });
  });

  it("sets a GitHub commit status on the synced commit: success, then failure for a broken one", async () => {
    const tokenFile = join(run.root, "github-token");
    await writeFile(tokenFile, TOKEN);
    const layout = await createGitSyncLayout(join(run.root, "sha-git"), files("ci-deployer"), () =>
      randomBytes(20).toString("hex"),
    );
    const d = await run.start({
      DRIFTLESS_MANIFESTS: layout.link,
      DRIFTLESS_GITHUB_REPOSITORY: "acme/platform-config",
      DRIFTLESS_GITHUB_TOKEN_FILE: tokenFile,
      DRIFTLESS_GITHUB_API_URL: receiver.url,
      DRIFTLESS_GITHUB_TARGET_URL: "https://driftless.example.com/",
    });
    await d.waitForLog((l) => l.msg === "pass finished");
    const first = layout.revision;

    await until(() => receiver.requests.length >= 1);
    const bad = await layout.publish(broken);
    await until(() => receiver.requests.length >= 2);

    const [success, failure] = receiver.requests;
    expect(success?.method).toBe("POST");
    expect(success?.url).toBe(`/repos/acme/platform-config/statuses/${first}`);
    expect(success?.headers.authorization).toBe(`Bearer ${TOKEN}`);
    expect(success?.headers.accept).toBe("application/vnd.github+json");
    expect(success?.json).toEqual({
      state: "success",
      context: "driftless",
      description: "driftless: 3 Synced",
      target_url: "https://driftless.example.com/",
    });
    expect(failure?.url).toBe(`/repos/acme/platform-config/statuses/${bad}`);
    expect(failure?.json).toMatchObject({ state: "failure", context: "driftless" });
    const description = String((failure?.json as { description?: string } | undefined)?.description);
    expect(description).toMatch(/manifest problem/);
    expect(description.length).toBeLessThanOrEqual(140);
    expect(d.stderr()).not.toContain(TOKEN);
  });

  it("refuses to start with DRIFTLESS_NOTIFY_URL but no secret", async () => {
    const start = run.start({ DRIFTLESS_NOTIFY_URL: receiver.url });

    await expect(start).rejects.toThrow(/DRIFTLESS_NOTIFY_URL needs DRIFTLESS_NOTIFY_SECRET/);
  });
});
