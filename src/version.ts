import { createRequire } from "node:module";

/** The package version, for --version and the User-Agent. */
export const VERSION: string = createRequire(import.meta.url)("../package.json").version;
