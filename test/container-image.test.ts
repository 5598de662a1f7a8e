import { type ChildProcess, spawn, spawnSync } from "node:child_process";
import { cpSync, existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { parse } from "yaml";
import { until } from "./helpers/wait.js";

/**
 * No Docker engine runs here, so this performs the Dockerfile's production steps in a clean folder
 * standing in for the image's /app: the `deps` stage's commands verbatim (production dependencies
 * from the lockfile), the runtime stage's copies, then the image's ENTRYPOINT and CMD. Needs the
 * built dist/ (`npm run build`; `npm test` builds).
 */

const repo = fileURLToPath(new URL("..", import.meta.url));

type Instruction = { op: string; args: string };
type Stage = { from: string; name?: string; instructions: Instruction[] };

/** The Dockerfile's stages: comments dropped, continuation lines joined. */
function dockerfileStages(text: string): Stage[] {
  const logical = text
    .replace(/\\\n/g, " ")
    .split("\n")
    .map((line) => line.trim())
    .filter((line) => line && !line.startsWith("#"));
  const stages: Stage[] = [];
  for (const line of logical) {
    const [op = "", ...rest] = line.split(/\s+/);
    const args = rest.join(" ");
    if (op.toUpperCase() === "FROM") {
      const [from = "", , name] = args.split(/\s+/);
      stages.push({ from, name, instructions: [] });
      continue;
    }
    stages.at(-1)?.instructions.push({ op: op.toUpperCase(), args });
  }
  return stages;
}

const stages = dockerfileStages(readFileSync(join(repo, "Dockerfile"), "utf8"));
const deps = stages.find((stage) => stage.name === "deps");
const runtime = stages.at(-1);
const execForm = (op: string) =>
  JSON.parse(runtime?.instructions.find((i) => i.op === op)?.args ?? "[]") as string[];
/** The image's command line with /app standing for the folder under test, tini left out (not here). */
function imageCommand(app: string, cmd: string[] = execForm("CMD")): string[] {
  const entrypoint = execForm("ENTRYPOINT");
  const afterInit = entrypoint.slice(entrypoint.indexOf("--") + 1);
  return [...afterInit, ...cmd].map((arg) => arg.replace(/^\/app\//, `${app}/`));
}

function filesUnder(dir: string): string[] {
  return readdirSync(dir, { recursive: true, encoding: "utf8" }).sort();
}

describe("the container image's recipe", () => {
  let work: string;
  let app: string;
  let install: ReturnType<typeof spawnSync>;

  // A real production install: on a loaded machine it takes far longer than the default 30 s.
  beforeAll(() => {
    work = mkdtempSync(join(tmpdir(), "driftless-image-"));
    app = join(work, "app");
    mkdirSync(app);
    // The deps stage: its COPY of the manifest and lockfile, then its RUN lines as written.
    for (const instruction of deps?.instructions ?? []) {
      if (instruction.op === "COPY") {
        for (const file of instruction.args.split(/\s+/).slice(0, -1))
          cpSync(join(repo, file), join(app, file));
      }
      if (instruction.op === "RUN") {
        install = spawnSync("sh", ["-c", instruction.args], {
          cwd: app,
          // The npm cache stands in for the registry where it can.
          env: { ...process.env, npm_config_prefer_offline: "true" },
          encoding: "utf8",
        });
        if (install.status !== 0) break;
      }
    }
    // The runtime stage's copies: the compiled CLI, the contracts and package.json (its "type": "module").
    cpSync(join(repo, "dist"), join(app, "dist"), { recursive: true });
    cpSync(join(repo, "contracts"), join(app, "contracts"), { recursive: true });
    cpSync(join(repo, "package.json"), join(app, "package.json"));
  }, 180_000);

  afterAll(() => {
    rmSync(work, { recursive: true, force: true });
  });

  it("builds on a pinned Node 24 image, runs as a non-root numeric user, starts `driftless run`", () => {
    const bases = stages.map((stage) => stage.from);
    const nodeVersion = /^ARG NODE_VERSION=(\S+)$/m.exec(readFileSync(join(repo, "Dockerfile"), "utf8"))?.[1];
    const user = runtime?.instructions.findLast((i) => i.op === "USER")?.args;

    expect(nodeVersion).toMatch(/^24\.\d+\.\d+$/);
    expect(bases).toEqual(bases.map(() => expect.stringMatching(/^node:\$\{NODE_VERSION\}-bookworm-slim$/)));
    expect(user).toMatch(/^[1-9]\d*:[1-9]\d*$/);
    expect(execForm("ENTRYPOINT")).toEqual(["/usr/bin/tini", "--", "node", "/app/dist/cli.js"]);
    expect(execForm("CMD")).toEqual(["run"]);
  });

  it("declares in each stage the build arguments its instructions use (an ARG before FROM is only for FROM)", () => {
    const undeclared = stages.flatMap((stage) => {
      const declared = new Set(
        stage.instructions
          .filter((i) => i.op === "ARG" || i.op === "ENV")
          .flatMap((i) => [...i.args.matchAll(/(?:^|\s)(\w+)=/g), ...i.args.matchAll(/^(\w+)$/g)])
          .map((match) => match[1]),
      );
      return stage.instructions
        .filter((i) => i.op !== "RUN")
        .flatMap((i) => [...i.args.matchAll(/\$\{?(\w+)/g)].map((match) => match[1] ?? ""))
        .filter((name) => !declared.has(name))
        .map((name) => `${stage.name ?? stage.from}: ${name}`);
    });

    expect(undeclared).toEqual([]);
  });

  it("lets through .dockerignore every file the Dockerfile copies from the build context", () => {
    const ignore = readFileSync(join(repo, ".dockerignore"), "utf8").split("\n");
    const letThrough = new Set(ignore.filter((line) => line.startsWith("!")).map((line) => line.slice(1)));
    const copied = stages
      .flatMap((stage) => stage.instructions)
      .filter((i) => i.op === "COPY" && !i.args.startsWith("--from="))
      .flatMap((i) => i.args.split(/\s+/).slice(0, -1));

    expect(ignore).toContain("*");
    expect(copied.filter((source) => !letThrough.has(source))).toEqual([]);
    expect(copied.filter((source) => !existsSync(join(repo, source)))).toEqual([]);
  });

  it("installs production dependencies only, from the lockfile", () => {
    const installed = () => readdirSync(join(app, "node_modules"));

    expect(install.stderr).not.toMatch(/npm error/);
    expect(install.status).toBe(0);
    expect(installed()).toEqual(expect.arrayContaining(["pino", "prom-client", "zod", "commander"]));
    expect(installed()).not.toContain("typescript");
    expect(installed()).not.toContain("vitest");
  });

  it("prints the CLI's help", () => {
    expect(install.status, "the production install failed: see the test above").toBe(0);
    const [command = "node", ...args] = imageCommand(app, ["--help"]);

    const help = spawnSync(command, args, { cwd: app, encoding: "utf8", env: { PATH: process.env.PATH } });

    expect(help.status).toBe(0);
    expect(help.stdout).toMatch(/Usage: driftless/);
    expect(help.stdout).toMatch(/\brun\b/);
  });

  it("runs the daemon against the built-in simulator with the pod's memory settings, answers /healthz and /metrics, stops cleanly on SIGTERM", async () => {
    expect(install.status, "the production install failed: see the test above").toBe(0);
    const state = join(work, "state");
    const tmp = join(work, "tmp");
    mkdirSync(state);
    mkdirSync(tmp);
    const before = filesUnder(app);
    const [command = "node", ...args] = imageCommand(app);
    const daemon = startLogged(command, args, {
      PATH: process.env.PATH ?? "",
      NODE_ENV: "production",
      NODE_OPTIONS: containerEnv("NODE_OPTIONS"),
      HOME: tmp,
      TMPDIR: tmp,
      DRIFTLESS_STATE_DIR: state,
      DRIFTLESS_LISTEN: "127.0.0.1:0",
      DRIFTLESS_MANIFESTS: join(repo, "examples"),
      DRIFTLESS_SECRETS_DIR: join(repo, "examples", "secrets"),
      EXAMPLE_KAFKA_PASSWORD: "demo-kafka-password",
    });

    try {
      const address = await daemon.address;
      const health = await until(() =>
        fetch(`http://${address}/healthz`).then(
          (response) => (response.status === 200 ? response.status : undefined),
          () => undefined,
        ),
      );
      const metrics = await (await fetch(`http://${address}/metrics`)).text();
      const code = await daemon.stop();
      // Resident memory that V8 does not count as heap: code, buffers, the runtime's own.
      const outsideHeap = residentBytes(metrics) - gauge(metrics, "driftless_nodejs_heap_size_total_bytes");

      expect(health).toBe(200);
      expect(metrics).toMatch(/^driftless_reconcile_total\{result="success"\} \d+/m);
      expect(residentBytes(metrics)).toBeLessThan(memoryLimitBytes());
      // The heap may grow to its limit before V8 gives up; the kernel's limit must not come first.
      expect(outsideHeap).toBeGreaterThan(0);
      expect(heapLimitBytes(containerEnv("NODE_OPTIONS")) + outsideHeap).toBeLessThan(memoryLimitBytes());
      expect(code).toBe(0);
      // Read-only root: nothing was written beside the code, only to the state and temp volumes.
      expect(filesUnder(app)).toEqual(before);
      // The dashboard and the alerts chart what a real scrape of the daemon shows.
      expect(monitoredNames().filter((name) => !exposedNames(metrics).has(name))).toEqual([]);
    } finally {
      daemon.kill();
    }
  });
});

type Logged = { address: Promise<string>; stop(): Promise<number | null>; kill(): void };

/** Starts the daemon; `address` resolves from its `listening` log line (it listens on port 0). */
function startLogged(command: string, args: string[], env: Record<string, string>): Logged {
  const child: ChildProcess = spawn(command, args, { env, stdio: ["ignore", "ignore", "pipe"] });
  let stderr = "";
  const exited = new Promise<number | null>((resolve) => child.once("exit", (code) => resolve(code)));
  const address = new Promise<string>((resolve, reject) => {
    child.stderr?.setEncoding("utf8");
    child.stderr?.on("data", (chunk: string) => {
      stderr += chunk;
      const line = /^\{.*"msg":"listening".*\}$/m.exec(stderr)?.[0];
      if (line) resolve(String((JSON.parse(line) as { address: unknown }).address));
    });
    void exited.then((code) => reject(new Error(`daemon exited with ${code} before listening:\n${stderr}`)));
    setTimeout(() => reject(new Error(`daemon did not listen within 15 s:\n${stderr}`)), 15_000).unref();
  });
  return {
    address,
    async stop() {
      child.kill("SIGTERM");
      return exited;
    },
    kill() {
      if (child.exitCode === null && child.signalCode === null) child.kill("SIGKILL");
    },
  };
}

function gauge(exposition: string, name: string): number {
  return Number(new RegExp(`^${name} (\\S+)$`, "m").exec(exposition)?.[1] ?? Number.NaN);
}

function residentBytes(exposition: string): number {
  return gauge(exposition, "driftless_process_resident_memory_bytes");
}

type Container = {
  name: string;
  env?: { name: string; value?: string }[];
  resources?: { limits?: { memory?: string } };
};

/** The driftless container of deploy/base/deployment.yaml. */
function driftlessContainer(): Container | undefined {
  const deployment = parse(readFileSync(join(repo, "deploy/base/deployment.yaml"), "utf8"));
  const containers: Container[] = deployment.spec.template.spec.containers;
  return containers.find((c) => c.name === "driftless");
}

/** A variable the driftless container sets itself, or "". */
function containerEnv(name: string): string {
  return driftlessContainer()?.env?.find((e) => e.name === name)?.value ?? "";
}

/** V8's whole heap limit (old and young generations) under these NODE_OPTIONS, in bytes. */
function heapLimitBytes(nodeOptions: string): number {
  const script = "process.stdout.write(String(require('node:v8').getHeapStatistics().heap_size_limit))";
  const run = spawnSync(process.execPath, ["-e", script], {
    env: { PATH: process.env.PATH, NODE_OPTIONS: nodeOptions },
    encoding: "utf8",
  });
  return Number(run.stdout);
}

/** The driftless container's memory limit in deploy/base/deployment.yaml, in bytes. */
function memoryLimitBytes(): number {
  const limit = driftlessContainer()?.resources?.limits?.memory ?? "";
  const [, amount = "", unit = ""] = /^(\d+)(Mi|Gi)$/.exec(limit) ?? [];
  return Number(amount) * (unit === "Gi" ? 2 ** 30 : 2 ** 20);
}

/** Every series name an exposition can hold: its families, with a histogram's three suffixes. */
function exposedNames(exposition: string): Set<string> {
  const names = new Set<string>();
  for (const [, name = "", type] of exposition.matchAll(/^# TYPE (\S+) (\S+)$/gm)) {
    const suffixes =
      type === "histogram"
        ? ["_bucket", "_sum", "_count"]
        : type === "summary"
          ? ["", "_sum", "_count"]
          : [""];
    for (const suffix of suffixes) names.add(`${name}${suffix}`);
  }
  return names;
}

/** The driftless_* names the Grafana dashboard and the PrometheusRule query. */
function monitoredNames(): string[] {
  const texts = [
    readFileSync(join(repo, "deploy/base/grafana-dashboard.json"), "utf8"),
    readFileSync(join(repo, "deploy/base/prometheusrule.yaml"), "utf8"),
  ];
  return [...new Set(texts.flatMap((text) => text.match(/\bdriftless_[a-z0-9_]+/g) ?? []))].sort();
}
