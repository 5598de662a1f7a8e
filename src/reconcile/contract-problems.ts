import { kindOf } from "../kinds/index.js";
import { isNone } from "../kinds/kind.js";
import type { ManifestSet } from "../manifests/load.js";
import { type FieldPath, formatPath, type Manifest, positionOf } from "../manifests/manifest.js";
import type { Problem } from "../manifests/problem.js";
import { Secret } from "../plan/secret.js";
import type { PlannedRequest } from "../plan/types.js";
import { revealed } from "../plan/values.js";
import { type ContractCheck, type ContractIssue, contractCheck } from "../platform/contracts.js";
import type { Contract, RouteName } from "../platform/routes.js";
import { resourceId } from "../resources.js";
import { STATE_VERSION, type State } from "../state/store.js";
import { createLogger } from "../telemetry/logger.js";
import { desiredWith } from "./desired.js";
import { dryEffects } from "./dry-run.js";
import { passOf, runPhases } from "./pass.js";

/**
 * `validate --contract`: what of the manifests the contract's documents refuse, found before merge.
 * The requests are the ones a first apply would send to an empty platform: apply's own pass, dry
 * (dry-run.ts), from no record, with a stand-in for every secret and every id the platform would assign
 * (validate reads no secret and knows no server id). Each is checked against contracts/<contract>/ as
 * the simulator checks it, and each problem placed at the manifest field it comes from (the kind's
 * specPath). A watch's poll is checked too. What only the platform knows (whether a sourceId names one
 * of the team's sources) is not checked.
 */

/** A value of the right type where validate cannot know the real one: a secret, an assigned id. */
const STAND_IN = "00000000-0000-4000-8000-000000000000";

/** A request a first apply would send, checked: its manifest and what the contract refuses of it. */
type Checked = { manifest: Manifest; issues: ContractIssue[] };

/** The requests a first apply of `set` sends, each checked as it is sent. */
async function firstApply(set: ManifestSet, check: ContractCheck): Promise<Checked[]> {
  const empty: State = { version: STATE_VERSION, salt: "-", resources: {} };
  const pass = passOf({ ...set, problems: [] }, empty, new Date());
  const dry = dryEffects(pass.state, { idOf: () => STAND_IN });
  const checked: Checked[] = [];
  const stand = new Secret("secret", "secret");
  const byId = new Map(set.manifests.map((manifest) => [resourceId(manifest), manifest]));
  await runPhases({
    pass,
    effects: {
      ...dry,
      send: (request, write) => {
        const manifest = byId.get(resourceId(write.manifest));
        if (manifest) checked.push({ manifest, issues: issuesOf(check, request) });
        return dry.send(request, write);
      },
    },
    log: createLogger("silent"),
    options: { trigger: "cli" },
    deps: {},
    now: pass.startedAt,
    clock: () => pass.startedAt,
    memory: { refusals: new Map(), unsaved: new Map() },
    desired: (manifest) => desiredWith(manifest, () => stand),
  });
  return checked;
}

/** Each watch's poll, checked. */
function polls(manifests: readonly Manifest[], check: ContractCheck): Checked[] {
  return manifests.flatMap((manifest) => {
    const request = pollOf(manifest);
    return request ? [{ manifest, issues: issuesOf(check, request) }] : [];
  });
}

function pollOf(manifest: Manifest): PlannedRequest | undefined {
  const poll = kindOf(manifest.kind).poll;
  return isNone(poll) ? undefined : poll.request(manifest.spec);
}

/** What the contract refuses of `set`'s requests, each placed at its manifest's field. */
export async function contractProblems(set: ManifestSet, contract: Contract): Promise<Problem[]> {
  const check = contractCheck(contract);
  const checked = [...(await firstApply(set, check)), ...polls(set.manifests, check)];
  return checked.flatMap(({ manifest, issues }) =>
    issues.map((issue) => problemOf(manifest, issue, contract)),
  );
}

/** What `check` refuses of a request, its secrets revealed (stand-ins here). */
function issuesOf<R extends RouteName>(check: ContractCheck, { route, params, body }: PlannedRequest<R>) {
  return check.request(route, params, revealed(body));
}

function problemOf(manifest: Manifest, issue: ContractIssue, contract: Contract): Problem {
  const path: FieldPath = ["spec", ...specPath(manifest, issue.path)];
  return {
    ...positionOf(manifest, path),
    resource: resourceId(manifest),
    field: formatPath(path),
    message: `${issue.message} (${contract === "full" ? "the published" : "the minimal"} contract)`,
  };
}

/** Where in its manifest's spec a request path comes from, as its kind says. */
function specPath(manifest: Manifest, path: FieldPath): FieldPath {
  return kindOf(manifest.kind).specPath(path, manifest.spec);
}
