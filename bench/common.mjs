// What the benches share: running the built CLI with a wall clock, and seeding the state a converged
// apply leaves.
import { spawn } from "node:child_process";
import { join } from "node:path";
import { fileURLToPath } from "node:url";
import { dist } from "./dist.mjs";

const repo = fileURLToPath(new URL("..", import.meta.url));
const { createReconciler } = await dist("reconcile/engine.js");
const { ROUTES } = await dist("platform/routes.js");
const { createFileStore } = await dist("state/file-store.js");
const { createLogger } = await dist("telemetry/logger.js");
const CLI = join(repo, "dist", "cli.js");
const { defaultIds } = await dist("simulator/index.js");

/**
 * The settings that point driftless at `simulator`, with the simulator's own credentials.
 * @param {import("../src/simulator/index.js").Simulator} simulator
 */
export const platformEnv = (simulator) => ({
  DRIFTLESS_MANAGEMENT_URL: simulator.managementUrl,
  DRIFTLESS_MANAGEMENT_KEY_ID: defaultIds.managementKeyId,
  DRIFTLESS_MANAGEMENT_KEY_SECRET: defaultIds.managementKeySecret,
  DRIFTLESS_OBSERVABILITY_URL: simulator.observabilityUrl,
  DRIFTLESS_OBSERVABILITY_TOKEN: defaultIds.observabilityToken,
});

/**
 * Runs the built CLI with `args` in a clean environment (PATH and `env` only); resolves with its exit
 * code, output and wall time in ms.
 * @param {string[]} args
 * @param {Record<string, string>} [env]
 * @param {string} [cwd]
 * @returns {Promise<{ code: number | null; stdout: string; stderr: string; ms: number }>}
 */
export function runCli(args, env = {}, cwd = undefined) {
  return new Promise((resolve) => {
    const started = performance.now();
    const child = spawn(process.execPath, [CLI, ...args], {
      ...(cwd ? { cwd } : {}),
      env: { PATH: process.env.PATH ?? "", ...env },
      stdio: ["ignore", "pipe", "pipe"],
    });
    let stdout = "";
    let stderr = "";
    child.stdout.on("data", (c) => (stdout += c));
    child.stderr.on("data", (c) => (stderr += c));
    child.on("close", (code) => resolve({ code, stdout, stderr, ms: performance.now() - started }));
  });
}

/**
 * Starts `driftless run` of `cli` (default this checkout's build), `nodeArgs` before it, in a clean
 * environment (PATH, a listen address on any port, info logs, and `env`). `url` resolves once it logs
 * where it listens, and rejects with its error lines if it exits first; `passes()` counts its finished
 * passes; `stop()` ends it (at once if it already exited).
 */
/**
 * @param {Record<string, string>} env
 * @param {{ cli?: string; nodeArgs?: string[] }} [options]
 */
export function startRun(env, { cli = CLI, nodeArgs = [] } = {}) {
  const child = spawn(process.execPath, [...nodeArgs, cli, "run"], {
    env: { PATH: process.env.PATH, DRIFTLESS_LISTEN: "127.0.0.1:0", DRIFTLESS_LOG_LEVEL: "info", ...env },
    stdio: ["ignore", "ignore", "pipe"],
  });
  let passes = 0;
  let failures = "";
  /** @type {Promise<string>} */
  const url = new Promise((resolve, reject) => {
    let partial = "";
    child.stderr.setEncoding("utf8");
    child.stderr.on("data", (chunk) => {
      const lines = (partial + chunk).split("\n");
      partial = lines.pop() ?? "";
      for (const line of lines) {
        if (line.includes('"msg":"listening"')) resolve(`http://${JSON.parse(line).address}`);
        if (line.includes('"msg":"pass finished"')) passes++;
        if (line.includes('"level":50')) failures += `${line}\n`;
      }
    });
    child.once("exit", (code) => reject(new Error(`driftless run exited with ${code}: ${failures}`)));
  });
  const stop = async () => {
    // A child that already exited (a bad NODE_OPTIONS) fires no second exit event.
    if (child.exitCode !== null || child.signalCode !== null) return;
    child.kill("SIGTERM");
    await new Promise((resolve) => child.once("exit", resolve));
  };
  return { child, url, passes: () => passes, stop };
}

/**
 * The state a converged apply of a folder of manifests leaves: the real engine, an instant in-memory
 * platform that answers each request with its body (and tile ids), and one save at the end.
 */

/**
 * Applies `manifests` once and saves the state in `stateDir`; throws when a resource is not Synced.
 * @param {string} manifests
 * @param {string} stateDir
 */
export async function seedState(manifests, stateDir) {
  const file = createFileStore(stateDir);
  // The engine saves after every write; a seed of 10,000 writes keeps the last state and saves it once.
  /** @type {import("../src/state/store.js").State | undefined} */
  let latest;
  /** @type {import("../src/state/store.js").StateStore} */
  const store = {
    load: () => file.load(),
    save: async (state) => {
      latest = state;
    },
    ensureWritable: async () => {},
    close: async () => {},
  };
  /** @type {import("../src/reconcile/send.js").Sender} */
  const send = async (request) => {
    // Any kind's request: the answer is its body with the ids the platform would give.
    const body = /** @type {Record<string, unknown>} */ (request.body);
    const params = /** @type {Record<string, string | undefined>} */ (request.params);
    const tiles = Array.isArray(body.tiles)
      ? body.tiles.map((t, i) => ({ ...t, id: t.id ?? `tile-${i}` }))
      : undefined;
    const answer = { id: params.id ?? "x", ...body, ...(tiles ? { tiles } : {}) };
    return { result: ROUTES[request.route].answer.parse(answer) };
  };
  const reconciler = createReconciler({
    manifests,
    store,
    send,
    secrets: { env: {}, secretsDir: manifests },
    logger: createLogger("silent"),
    concurrency: 64,
  });
  const result = await reconciler.pass({ trigger: "cli" });
  if (latest === undefined) throw new Error("seeding saved nothing: the manifests folder holds no resource");
  await file.save(latest);
  await file.close();
  if (!result.ok)
    throw new Error(`seeding failed: ${JSON.stringify(result.statuses.find((s) => s.status !== "Synced"))}`);
}
