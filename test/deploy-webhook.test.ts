import { spawnSync } from "node:child_process";
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, describe, expect, it } from "vitest";
import { parseAllDocuments } from "yaml";
import { type DaemonProcess, startDaemonProcess } from "./helpers/daemon-process.js";

/**
 * git-sync's webhook as the example overlay configures it, sent the way git-sync v4 sends it (its
 * `--webhook-method`, default POST, with a `Gitsync-Hash` header, the URL after Kubernetes expanded
 * `$(VAR)`), to a driftless started with the overlay's settings: the answer must be the status
 * git-sync counts as success, or git-sync retries forever and no pass starts early.
 */

const repo = fileURLToPath(new URL("..", import.meta.url));

type Container = {
  name: string;
  args?: string[];
  env?: { name: string; value?: string }[];
  envFrom?: { configMapRef?: { name: string } }[];
};
type Doc = { kind: string; metadata: { name: string }; data?: Record<string, string>; spec?: unknown };

const rendered = spawnSync("kubectl", ["kustomize", join(repo, "deploy/overlays/example")], {
  encoding: "utf8",
});
const docs = parseAllDocuments(rendered.stdout).map((doc) => doc.toJS() as Doc);
const deployment = docs.find((doc) => doc.kind === "Deployment") as Doc & {
  spec: { template: { spec: { containers: Container[] } } };
};
const containers = deployment.spec.template.spec.containers;
const gitSync = containers.find((c) => c.name === "git-sync") as Container;
const driftless = containers.find((c) => c.name === "driftless") as Container;
const flag = (name: string) => gitSync.args?.find((a) => a.startsWith(`--${name}=`))?.slice(name.length + 3);
/** driftless's settings: its ConfigMaps (as kustomize named them), then its own env. */
const settings: Record<string, string | undefined> = Object.assign(
  {},
  ...docs
    .filter((doc) => doc.kind === "ConfigMap")
    .filter((doc) => driftless.envFrom?.some((source) => source.configMapRef?.name === doc.metadata.name))
    .map((doc) => doc.data),
  Object.fromEntries((driftless.env ?? []).map((e) => [e.name, e.value])),
);

describe("git-sync's webhook in the example overlay", () => {
  const work = mkdtempSync(join(tmpdir(), "driftless-webhook-"));
  const token = "0f3c9a7e5b1d4c2a8e6f0b9d7c5a3e1f";
  let daemon: DaemonProcess | undefined;

  afterAll(async () => {
    await daemon?.stop();
    rmSync(work, { recursive: true, force: true });
  });

  it("reaches driftless's listening port and is answered with git-sync's success status", async () => {
    const url = flag("webhook-url") ?? "";
    const [, host, port] = /^http:\/\/([^/:]+):(\d+)\//.exec(url) ?? [];
    const listenPort = /:(\d+)$/.exec(settings.DRIFTLESS_LISTEN ?? "")?.[1];
    // The token file as the credentials Secret mounts it for driftless.
    writeFileSync(join(work, "webhook-token"), token);
    mkdirSync(join(work, "manifests"));
    daemon = await startDaemonProcess({
      DRIFTLESS_STATE_DIR: join(work, "state"),
      // No manifests: the pass the webhook starts is quick, and it is the pass that matters here.
      DRIFTLESS_MANIFESTS: join(work, "manifests"),
      DRIFTLESS_WEBHOOK_TOKEN_FILE: join(work, "webhook-token"),
    });
    // Kubernetes expands $(VAR) from git-sync's own env; the port becomes the one this test listens on.
    const sent = url
      .replace(/\$\((\w+)\)/g, () => token)
      .replace(`${host}:${port}`, new URL(daemon.url).host);
    const send = (target: string) =>
      fetch(target, { method: flag("webhook-method") ?? "POST", headers: { "Gitsync-Hash": "1a2b3c4d" } });

    const accepted = await send(sent);
    const refused = await send(sent.replace(token, "not-the-token"));
    const pass = await daemon.waitForLog((line) => line.trigger === "webhook");

    expect(rendered.status).toBe(0);
    expect(settings.DRIFTLESS_WEBHOOK_TOKEN_FILE).toBeDefined();
    expect(host).toBe("127.0.0.1");
    expect(port).toBe(listenPort);
    expect(accepted.status).toBe(Number(flag("webhook-success-status") ?? 200));
    expect(refused.status).not.toBe(accepted.status);
    expect(pass.trigger).toBe("webhook");
  });
});
