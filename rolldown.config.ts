import { defineConfig } from "rolldown";

/**
 * The build: the CLI and every module it imports, dependencies included, bundled into dist/cli.js and
 * the chunks it loads on demand (each command imports what it needs when it runs): a start reads a few
 * files rather than a file per module, which took some 40 % of the CPU of a short command such as `plan`.
 * Types are checked by `npm run typecheck`, not here. Nothing is minified, so a stack trace points
 * at readable code; no source maps (they would triple dist/, the Kubernetes client's alone 12 MB).
 */
export default defineConfig({
  input: { cli: "src/cli.ts" },
  platform: "node",
  output: { dir: "dist", format: "esm", cleanDir: true },
});
