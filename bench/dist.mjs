// The benches' one way into the build: each module typed by the source it is built from.
import { existsSync } from "node:fs";
import { join } from "node:path";
import { fileURLToPath } from "node:url";

const repo = fileURLToPath(new URL("..", import.meta.url));

/**
 * The modules of the build that the benches import, each typed by the source it is built from, so that
 * `npm run typecheck` checks every name and field a bench uses against the code it measures.
 * @typedef {{
 *   "commands/platform.js": typeof import("../src/commands/platform.js"),
 *   "config.js": typeof import("../src/config.js"),
 *   "daemon/daemon.js": typeof import("../src/daemon/daemon.js"),
 *   "daemon/drift-schedule.js": typeof import("../src/daemon/drift-schedule.js"),
 *   "drift/compare.js": typeof import("../src/drift/compare.js"),
 *   "leader/leadership.js": typeof import("../src/leader/leadership.js"),
 *   "manifests/load.js": typeof import("../src/manifests/load.js"),
 *   "platform/budget.js": typeof import("../src/platform/budget.js"),
 *   "platform/routes.js": typeof import("../src/platform/routes.js"),
 *   "reconcile/engine.js": typeof import("../src/reconcile/engine.js"),
 *   "simulator/default-fixture.js": typeof import("../src/simulator/default-fixture.js"),
 *   "simulator/faults.js": typeof import("../src/simulator/faults.js"),
 *   "simulator/index.js": typeof import("../src/simulator/index.js"),
 *   "state/file-store.js": typeof import("../src/state/file-store.js"),
 *   "state/kubernetes-store.js": typeof import("../src/state/kubernetes-store.js"),
 *   "state/state-format.js": typeof import("../src/state/state-format.js"),
 *   "telemetry/logger.js": typeof import("../src/telemetry/logger.js"),
 *   "telemetry/metrics.js": typeof import("../src/telemetry/metrics.js"),
 * }} DistModules
 */

/**
 * The modules of DistModules, for bench/build.mjs to build.
 * @type {(keyof DistModules)[]}
 */
export const MODULES = [
  "commands/platform.js",
  "config.js",
  "daemon/daemon.js",
  "daemon/drift-schedule.js",
  "drift/compare.js",
  "leader/leadership.js",
  "manifests/load.js",
  "platform/budget.js",
  "platform/routes.js",
  "reconcile/engine.js",
  "simulator/default-fixture.js",
  "simulator/faults.js",
  "simulator/index.js",
  "state/file-store.js",
  "state/kubernetes-store.js",
  "state/state-format.js",
  "telemetry/logger.js",
  "telemetry/metrics.js",
];

/** Where bench/build.mjs puts the modules, in a checkout. */
export const BUILD = join("bench", ".build");

/**
 * Imports `path` from the modules bench/build.mjs built in `root` (default this checkout's: `npm run
 * bench` builds them first), or from `root`/dist for a checkout of before the bundled build, whose dist/
 * held one file per module. Imported at run time, so that a bench can measure another checkout's build.
 * @template {keyof DistModules} P
 * @param {P} path
 * @param {string} [root]
 * @returns {Promise<DistModules[P]>}
 */
export const dist = (path, root = repo) => {
  const built = join(root, BUILD, path);
  return import(existsSync(built) ? built : join(root, "dist", path));
};
