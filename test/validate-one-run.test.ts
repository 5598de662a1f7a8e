import { mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterEach, beforeEach, describe, expect, it } from "vitest";
import { defaultIds as ids } from "../src/simulator/index.js";
import { driftless } from "./helpers/cli.js";
import { mskEndpoint } from "./helpers/manifests.js";

/**
 * `driftless validate` through the built CLI: every problem of a folder in one run (the checks between
 * manifests beside the field errors of the same manifest), a summary whose counts are those of
 * `-o json`, and "did you mean" for a misspelt kind or driftless annotation.
 */

let dir: string;
beforeEach(async () => {
  dir = await mkdtemp(join(tmpdir(), "driftless-one-run-"));
});
afterEach(async () => {
  await rm(dir, { recursive: true, force: true });
});

const write = (files: Record<string, string>) =>
  Promise.all(Object.entries(files).map(([file, text]) => writeFile(join(dir, file), text)));

/** A tile in flow style, at `x` and `w` (numbers unless a test breaks them). */
const tile = (key: string, x = "0", w = "3") =>
  `    - {key: ${key}, name: ${key}, x: ${x}, y: 0, w: ${w}, h: 3, series: []}\n`;

const dashboard = (name: string, tiles: string) => `apiVersion: driftless/v1
kind: Dashboard
metadata:
  name: ${name}
spec:
  dashboardId: 65f1a2b3c4d5e6f708192a3b
  name: Overview
  tiles:
${tiles}`;

const watch = (name: string, spec: string) => `apiVersion: driftless/v1
kind: AlertWatch
metadata:
  name: ${name}
spec:
${spec}`;

const backups = (name: string) => `apiVersion: driftless/v1
kind: BackupWatch
metadata:
  name: ${name}
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  maxAge: 26h
`;

const pipe = (name: string, extra: string) => `apiVersion: driftless/v1
kind: DataPipe
metadata:
  name: ${name}
spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  dataPipeId: 1f2e3d4c-5b6a-4798-8a9b-0c1d2e3f4a5b
${extra}`;

const key = (kind: string, name: string, annotations = "") => `apiVersion: driftless/v1
kind: ${kind}
metadata:
  name: ${name}
${annotations}spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
`;

describe("driftless validate finds every problem in one run", () => {
  it("reports a manifest's references and duplicate keys beside its field errors", async () => {
    await write({
      "dashboard.yaml": dashboard("overview", tile("errors") + tile("errors", "left")),
      "watch.yaml": watch(
        "lag",
        "  alertId: 65f1a2b3c4d5e6f708192a51\n  dashboard: overview\n  tile: latency\n  muted: true\n",
      ),
      "pipe.yaml": pipe(
        "orders",
        "  name: 7\n  source:\n    kafka:\n      reversePrivateEndpoints: [orders-msk]\n",
      ),
    });

    const result = driftless(["validate", dir]);

    expect(result.code).toBe(1);
    expect(result.stdout.split("\n")).toEqual([
      "dashboard.yaml:10:13  Dashboard/overview  spec.tiles[1].key: tile key errors is used twice in this dashboard",
      "dashboard.yaml:10:38  Dashboard/overview  spec.tiles[1].x: must be an integer between 0 and 1000",
      "pipe.yaml:9:9  DataPipe/orders  spec.name: must be a string: put it in quotes, YAML read it as a number",
      "pipe.yaml:12:33  DataPipe/orders  spec.source.kafka.reversePrivateEndpoints[0]: no ReversePrivateEndpoint named orders-msk",
      "watch.yaml:8:9  AlertWatch/lag  spec.tile: Dashboard/overview has no tile with key latency",
      "watch.yaml:9:3  AlertWatch/lag  spec.muted: unknown field (not in the API's request body)",
      "6 problems in 3 manifests; 0 of 3 manifests valid",
      "",
    ]);
  });

  it("does not call a manifest missing when it is there but invalid: the manifest naming it is not the problem", async () => {
    await write({
      "dashboard.yaml": dashboard("overview", tile("errors", "0", "0")),
      "watch.yaml": watch(
        "lag",
        "  alertId: 65f1a2b3c4d5e6f708192a51\n  dashboard: overview\n  tile: errors\n",
      ),
      "typo.yaml": watch(
        "typo",
        "  alertId: 65f1a2b3c4d5e6f708192a52\n  dashboard: overview\n  tile: eror\n",
      ),
      "endpoint.yaml": mskEndpoint("orders-msk", { authentication: "SASL_PLAIN" as "SASL_IAM" }),
      "pipe.yaml": pipe("orders", "  source:\n    kafka:\n      reversePrivateEndpoints: [orders-msk]\n"),
    });

    const result = driftless(["validate", dir]);

    expect(result.stdout.split("\n")).toEqual([
      "dashboard.yaml:9:50  Dashboard/overview  spec.tiles[0].w: must be an integer between 1 and 1000",
      "endpoint.yaml:11:22  ReversePrivateEndpoint/orders-msk  spec.mskAuthentication: must be SASL_IAM or SASL_SCRAM",
      "typo.yaml:8:9  AlertWatch/typo  spec.tile: Dashboard/overview has no tile with key eror",
      "3 problems in 3 manifests; 2 of 5 manifests valid",
      "",
    ]);
  });

  it("counts documents as -o json lists them, a manifest named twice included", async () => {
    await write({
      "a.yaml": `${backups("backups")}---\n${watch("ingest", "  alertId: 65f1a2b3c4d5e6f708192a53\n")}`,
      "b.yaml": `${backups("backups")}---\n${watch("lag", "  alertId: 65f1a2b3c4d5e6f708192a51\n  dashboard: nope\n  tile: x\n  muted: 1\n")}`,
    });

    const text = driftless(["validate", dir]);
    const json = JSON.parse(driftless(["validate", "-o", "json", dir]).stdout);

    expect(text.stdout.split("\n").slice(0, -2)).toEqual([
      "b.yaml:4:9  BackupWatch/backups  metadata.name: the name is already used by a.yaml:1",
      "b.yaml:16:14  AlertWatch/lag  spec.dashboard: no Dashboard named nope",
      "b.yaml:18:3  AlertWatch/lag  spec.muted: unknown field (not in the API's request body)",
    ]);
    expect(text.stdout.split("\n").at(-2)).toBe("3 problems in 2 manifests; 2 of 4 manifests valid");
    expect(json.manifests.map((m: { name: string; file: string }) => `${m.file} ${m.name}`)).toEqual([
      "a.yaml backups",
      "a.yaml ingest",
    ]);
    expect(json.summary).toEqual({ problems: 3, manifests: 4, valid: 2, invalid: 2, files: 0 });
  });

  it("counts a manifest with an unreadable secret as invalid in both outputs", async () => {
    await write({
      "pipe.yaml": pipe(
        "orders",
        "  source:\n    kafka:\n      credentials: {username: u, password: {fromEnv: ORDERS_PASSWORD}}\n",
      ),
      "watch.yaml": backups("backups"),
    });
    const args = ["validate", "--resolve-secrets", dir];

    const text = driftless(args);
    const json = JSON.parse(driftless([...args, "-o", "json"]).stdout);

    expect(text.stdout.split("\n").at(-2)).toBe("1 problem in 1 manifest; 1 of 2 manifests valid");
    expect(json.manifests.map((m: { name: string }) => m.name)).toEqual(["backups"]);
    expect(json.summary).toEqual({ problems: 1, manifests: 2, valid: 1, invalid: 1, files: 0 });
  });

  it("suggests the kind and the driftless annotation a typo was meant to be", async () => {
    await write({
      "keys.yaml": `${key("APIKey", "ci")}---\n${key("ApiKey", "deployer", '  annotations:\n    driftless/suspnd: "true"\n')}`,
    });

    const result = driftless(["validate", dir]);

    expect(result.stdout.split("\n")).toEqual([
      "keys.yaml:2:7  APIKey/ci  kind: must be one of Organization, ApiKey, DataPipe, ReversePrivateEndpoint, Dashboard, Alert, AlertWatch, BackupWatch; did you mean ApiKey?",
      "keys.yaml:14:23  ApiKey/deployer  metadata.annotations.driftless/suspnd: unknown driftless annotation; did you mean driftless/suspend? (known: driftless/suspend, driftless/previous-name, driftless/drift, driftless/deletion-policy)",
      "2 problems in 2 manifests; 0 of 2 manifests valid",
      "",
    ]);
  });
});
