import { defineConfig } from "rolldown";

/**
 * Dependencies left out of the bundle, imported from node_modules as installed. Node hides the
 * deprecation warnings of code inside node_modules, and the Kubernetes client's own dependencies use
 * deprecated APIs (the punycode module, `new Buffer()`): bundled, they printed a warning on stderr at
 * every start with the Kubernetes state store or leader election (Node 24). The client is loaded only
 * then, so leaving it out costs the other commands nothing.
 */
const EXTERNAL = ["@kubernetes/client-node"];

/**
 * The build: the CLI and every module it imports, dependencies included (but EXTERNAL), bundled into
 * dist/cli.js and the chunks it loads on demand (each command imports what it needs when it runs): a
 * start reads a few files rather than a file per module, which took some 40 % of the CPU of a short
 * command such as `plan`. Types are checked by `npm run typecheck`, not here. Nothing is minified, so a
 * stack trace points at readable code. The benches' build (bench/build.mjs) and the tests' bundles of
 * one module (test/helpers/bundle.ts) take these options with entries and a folder of their own.
 */
export default defineConfig({
  input: { cli: "src/cli.ts" },
  platform: "node",
  external: EXTERNAL,
  output: { dir: "dist", format: "esm", cleanDir: true },
});
