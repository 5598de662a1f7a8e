import { mkdir, mkdtemp, rm, writeFile } from "node:fs/promises";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { runCli } from "./common.mjs";
import { dist } from "./dist.mjs";

const { startSimulator, defaultFixture, defaultIds: ids } = await dist("simulator/index.js");
const { MANAGEMENT_BUDGET } = await dist("platform/budget.js");

const CHANGED = process.env.BENCH_QUICK ? 36 : 72;
const RATE = MANAGEMENT_BUDGET.requests / (MANAGEMENT_BUDGET.windowMs / 1000);
/** @param {number} i @param {string} tag */
const uuid = (i, tag) => `${tag}-0000-4000-8000-${String(i).padStart(12, "0")}`;
const created = "2025-01-01T00:00:00Z";

/**
 * The default fixture plus `organizations` - 1 more, each with a driftless key and `perOrg` keys to rename.
 * @param {number} organizations
 * @param {number} perOrg
 */
function fixtureOf(organizations, perOrg) {
  const fixture = defaultFixture();
  const fixtureOrganizations = fixture.organizations ?? [];
  fixture.organizations = fixtureOrganizations;
  const keys = fixture.keys ?? [];
  fixture.keys = keys;
  /** @type {Array<{ id: string; keyId: string; secret: string; targets: string[] }>} */
  const orgs = [];
  for (let o = 0; o < organizations; o++) {
    /** @type {string[]} */
    const targets = [];
    const org =
      o === 0
        ? { id: ids.organizationId, keyId: ids.managementKeyId, secret: ids.managementKeySecret, targets }
        : { id: uuid(o, "0b0b0b0b"), keyId: uuid(o, "0c0c0c0c"), secret: `bench-secret-${o}`, targets };
    if (o > 0) {
      fixtureOrganizations.push({
        id: org.id,
        name: `org ${o}`,
        createdAt: created,
        privateEndpoints: [],
        byocConfig: [],
      });
      keys.push({
        id: org.keyId,
        organizationId: org.id,
        name: "driftless",
        roles: ["admin"],
        keySuffix: "0000",
        createdAt: created,
        secret: org.secret,
      });
    }
    for (let i = 0; i < perOrg; i++) {
      const id = uuid(o * 1000 + i, "0e0e0e0e");
      keys.push({
        id,
        organizationId: org.id,
        name: `key-${i}`,
        roles: ["developer"],
        keySuffix: "0000",
        createdAt: created,
      });
      targets.push(id);
    }
    orgs.push(org);
  }
  return { fixture, orgs };
}

/**
 * The CLI with driftless's own logs quiet.
 * @param {string[]} args
 * @param {Record<string, string>} env
 */
const cli = (args, env) => runCli(args, { DRIFTLESS_LOG_LEVEL: "error", ...env });

/** @param {number} keys */
async function applyWithKeys(keys) {
  const root = await mkdtemp(join(tmpdir(), "driftless-bench-orgs-"));
  const manifests = join(root, "manifests");
  const credentials = join(root, "credentials");
  await mkdir(manifests);
  await mkdir(credentials);
  const { fixture, orgs } = fixtureOf(keys, CHANGED / keys);
  // Interleaved, so that the engine's few resources in flight belong to different organizations.
  for (let i = 0; i < CHANGED; i++) {
    const org = orgs[i % keys];
    const keyId = org?.targets[Math.floor(i / keys)];
    if (!org || !keyId) throw new Error(`no organization or key for change ${i}`);
    await writeFile(
      join(manifests, `k${String(i).padStart(4, "0")}.yaml`),
      `apiVersion: driftless/v1\nkind: ApiKey\nmetadata:\n  name: k-${i}\nspec:\n  organizationId: ${org.id}\n  keyId: ${keyId}\n  name: key-${i}-renamed\n`,
    );
  }
  for (const org of orgs) {
    await writeFile(join(credentials, `${org.id}.key-id`), org.keyId);
    await writeFile(join(credentials, `${org.id}.key-secret`), org.secret);
  }
  const sim = await startSimulator({ fixture });
  try {
    const apply = await cli(["apply"], {
      DRIFTLESS_MANIFESTS: manifests,
      DRIFTLESS_STATE_DIR: join(root, "state"),
      DRIFTLESS_SECRETS_DIR: root,
      DRIFTLESS_MANAGEMENT_URL: sim.managementUrl,
      DRIFTLESS_MANAGEMENT_CREDENTIALS_DIR: credentials,
      DRIFTLESS_OBSERVABILITY_URL: sim.observabilityUrl,
      DRIFTLESS_OBSERVABILITY_TOKEN: sim.credentials.observabilityToken,
    });
    if (apply.code !== 0) console.log(`  apply exited ${apply.code}: ${apply.stderr.slice(-300)}`);
    return {
      seconds: apply.ms / 1000,
      requests: sim.requests.length,
      limited: sim.requests.filter((r) => r.status === 429).length,
    };
  } finally {
    await sim.close();
    await rm(root, { recursive: true, force: true });
  }
}

/**
 * The least time the budget allows for `n` requests on one key, in seconds.
 * @param {number} n
 */
const boundOf = (n) => (Math.floor((n - 1) / MANAGEMENT_BUDGET.requests) * MANAGEMENT_BUDGET.windowMs) / 1000;

const single = boundOf(CHANGED);
console.log(
  `${CHANGED} changed API keys; budget ${MANAGEMENT_BUDGET.requests} per ${MANAGEMENT_BUDGET.windowMs / 1000} s per key (${RATE.toFixed(1)}/s); single-key bound ${single.toFixed(1)} s`,
);
let oneKey;
for (const keys of [1, 2, 4]) {
  const { seconds, requests, limited } = await applyWithKeys(keys);
  oneKey ??= seconds;
  const bound = boundOf(Math.ceil(CHANGED / keys));
  console.log(
    `  ${keys} key(s): apply ${seconds.toFixed(1)} s, ${(CHANGED / seconds).toFixed(2)} changes/s  vs single-key bound ${single.toFixed(1)} s, ${keys}-key bound ${bound.toFixed(1)} s (+${(seconds - bound).toFixed(1)} s); ${(oneKey / seconds).toFixed(2)}× the 1-key throughput; ${requests} requests, ${limited} 429s (target 0)`,
  );
}
