import { existsSync } from "node:fs";
import { createRequire } from "node:module";

/**
 * The package's root folder (package.json, contracts/): the nearest folder above this module that holds
 * a package.json, wherever a build puts the module (src/ in the tests, a chunk of dist/ when installed).
 * Importing this module throws when there is none: a broken install.
 */
export const PACKAGE_ROOT = packageRoot(new URL(".", import.meta.url));

/** The package version, for --version and the User-Agent. */
export const VERSION: string = createRequire(PACKAGE_ROOT)("./package.json").version;

function packageRoot(from: URL): URL {
  for (let folder = from; ; folder = new URL("..", folder)) {
    if (existsSync(new URL("package.json", folder))) return folder;
    if (folder.pathname === "/") throw new Error(`no package.json above ${from.pathname}`);
  }
}
