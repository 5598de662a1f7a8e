// `npm start`: builds driftless, then runs the daemon on examples/ against the built-in simulator, the
// README's quick start. The build speaks only when it fails, so that the daemon's first line, the
// address of its status page, is the first thing shown after npm's own header. DRIFTLESS_LISTEN may
// choose another address (default 127.0.0.1:9464); the other settings are the quick start's.
import { spawnSync } from "node:child_process";
import { dirname, join } from "node:path";
import { fileURLToPath, pathToFileURL } from "node:url";

const repo = fileURLToPath(new URL("..", import.meta.url));

// The rolldown CLI in a process of its own: its output is kept, and its module never loads in the daemon.
const rolldown = join(dirname(fileURLToPath(import.meta.resolve("rolldown/package.json"))), "bin", "cli.mjs");
const build = spawnSync(process.execPath, [rolldown, "-c", "rolldown.config.ts"], {
  cwd: repo,
  encoding: "utf8",
});
if (build.status !== 0) {
  process.stderr.write(`${build.stdout ?? ""}${build.stderr ?? ""}${build.error?.message ?? ""}\n`);
  process.stderr.write("npm start: the build failed (above)\n");
  process.exit(build.status ?? 1);
}

Object.assign(process.env, {
  DRIFTLESS_LISTEN: process.env.DRIFTLESS_LISTEN || "127.0.0.1:9464",
  DRIFTLESS_SIMULATOR: "builtin",
  DRIFTLESS_MANIFESTS: join(repo, "examples"),
  DRIFTLESS_SECRETS_DIR: join(repo, "examples", "secrets"),
  EXAMPLE_KAFKA_PASSWORD: "demo-kafka-password",
});
// The daemon in this process: Ctrl-C reaches it directly, and it stops as it always does.
process.argv = [process.argv[0] ?? process.execPath, join(repo, "dist", "cli.js"), "run"];
await import(pathToFileURL(join(repo, "dist", "cli.js")).href);
