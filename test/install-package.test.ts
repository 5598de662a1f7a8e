import { execFileSync, spawnSync } from "node:child_process";
import { chmod, mkdir, mkdtemp, readFile, realpath, rm, symlink } from "node:fs/promises";
import { tmpdir } from "node:os";
import { dirname, join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { driftless, repo } from "./helpers/cli.js";
import { freshClone } from "./helpers/fresh-clone.js";

/**
 * The package a user installs: what `npm pack` makes of a fresh clone (no dist/ yet), installed the
 * way `npm install --global` lays it out, answers as `driftless`. The clone is the repository's files
 * as git would check them out (tracked and new, never the ignored dist/ or node_modules/). Tests reach
 * no registry, so the installed package's dependencies are links to the repository's own copies of
 * its `dependencies` (never its devDependencies): a program that imports a development-only package
 * fails here as it would for a user.
 */

type PackedFile = { path: string };
type Packed = { filename: string; files: PackedFile[] };

let root: string;
let packed: Packed;
let installed: string;

const VERSION = JSON.parse(await readFile(join(repo, "package.json"), "utf8")).version as string;

/** What `npm install --global --prefix <prefix> <tarball>` lays out, dependencies linked (see above). */
async function install(tarball: string, prefix: string): Promise<string> {
  const home = join(prefix, "lib", "node_modules", "driftless");
  await mkdir(home, { recursive: true });
  execFileSync("tar", ["-xzf", tarball, "-C", home, "--strip-components=1"]);
  const manifest = JSON.parse(await readFile(join(home, "package.json"), "utf8"));
  for (const name of Object.keys(manifest.dependencies ?? {})) {
    const link = join(home, "node_modules", name);
    await mkdir(dirname(link), { recursive: true });
    await symlink(join(repo, "node_modules", name), link);
  }
  const bin = join(prefix, "bin");
  await mkdir(bin);
  const target = join(home, manifest.bin.driftless);
  await chmod(target, 0o755);
  await symlink(target, join(bin, "driftless"));
  return bin;
}

beforeAll(async () => {
  root = await mkdtemp(join(tmpdir(), "driftless-install-"));
  const clone = join(root, "clone");
  await freshClone(clone);
  const out = execFileSync("npm", ["pack", "--json", "--pack-destination", root], {
    cwd: clone,
    encoding: "utf8",
    stdio: ["ignore", "pipe", "pipe"],
    env: { ...process.env, npm_config_update_notifier: "false", npm_config_loglevel: "error" },
  });
  // prepack's build prints tsc's output first: the JSON is the last thing written.
  packed = (JSON.parse(out.slice(out.indexOf("\n[") + 1)) as Packed[])[0] as Packed;
  installed = await install(join(root, packed.filename), join(root, "prefix"));
}, 120_000);

afterAll(async () => {
  if (root) await rm(root, { recursive: true, force: true });
});

describe("npm pack on a fresh clone", () => {
  it("builds the program into the package, with its bin and the contracts", () => {
    const paths = packed.files.map((file) => file.path);
    expect(paths).toContain("dist/cli.js");
    expect(paths).toContain("package.json");
    expect(paths.some((path) => path.startsWith("contracts/"))).toBe(true);
    expect(paths.some((path) => path.startsWith("src/") || path.startsWith("test/"))).toBe(false);
    expect(packed.filename).toBe(`driftless-${VERSION}.tgz`);
  });

  it("installs a driftless that answers --version with the package's version", () => {
    const result = spawnSync("driftless", ["--version"], {
      encoding: "utf8",
      env: { PATH: `${installed}:${process.env.PATH ?? ""}` },
    });
    expect(result.stderr).toBe("");
    expect(result.stdout).toBe(`${VERSION}\n`);
    expect(result.status).toBe(0);
  });

  it("installs a driftless that validates manifests", () => {
    const result = spawnSync("driftless", ["validate", join(repo, "examples")], {
      encoding: "utf8",
      env: { PATH: `${installed}:${process.env.PATH ?? ""}` },
    });
    expect(result.stderr).toBe("");
    expect(result.status).toBe(0);
  });

  // Node hides these deprecation warnings for code inside node_modules only: in the bundle they would
  // print on stderr at start (the punycode module's from Node 22 on, so a Node 20 run cannot see it).
  it("bundles no code that Node warns about outside node_modules: the punycode module, new Buffer()", async () => {
    const home = dirname(dirname(await realpath(join(installed, "driftless"))));
    const files = packed.files.map((file) => file.path).filter((path) => path.startsWith("dist/"));

    const warned = [];
    for (const file of files) {
      const text = await readFile(join(home, file), "utf8");
      if (/require\("punycode"\)|new Buffer\(/.test(text)) warned.push(file);
    }

    expect(files.length).toBeGreaterThan(1);
    expect(warned).toEqual([]);
  });
});

describe("driftless --version", () => {
  it("prints the package version and exits 0", () => {
    const result = driftless(["--version"]);
    expect(result).toEqual({ code: 0, stdout: `${VERSION}\n`, stderr: "" });
  });
});
