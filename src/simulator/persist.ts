import { existsSync, mkdirSync, readFileSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import { ConfigError } from "../errors.js";
import { fixtureProblems } from "./fixture.js";
import { Fixture, type PlatformState } from "./model.js";

/**
 * Keeps the simulated platform in a JSON file between runs, so that one `apply` after another against
 * the built-in simulator meets the platform the first one left (a real platform does not forget).
 * Credentials never go to the file: key secrets and tokens always come from the fixture, and so do the
 * observability team's sources. A created key's hashes do go to the file (they prove a secret, they are
 * not one), and a webhook's headers are never kept at all.
 */

/** The saved platform of `file` with the fixture's credentials, or the fixture when there is no file yet. */
export function loadPersisted(file: string, fixture: Fixture): PlatformState {
  if (!existsSync(file)) return fixture;
  // An unreadable file, or one an older version wrote, is the simulator's own: say so, not "fixture".
  const refuse = (why: string, cause?: unknown) =>
    new ConfigError(`cannot read the simulator's saved state ${file} (${why}); delete it to start afresh`, {
      cause,
    });
  let saved: unknown;
  try {
    saved = JSON.parse(readFileSync(file, "utf8"));
  } catch (error) {
    throw refuse((error as Error).message, error);
  }
  const parsed = Fixture.safeParse(saved);
  if (!parsed.success) throw refuse(fixtureProblems(parsed.error));
  const state = parsed.data;
  const secrets = new Map(fixture.keys.map((k) => [k.id, k.secret]));
  for (const key of state.keys) {
    const secret = secrets.get(key.id);
    if (secret) key.secret = secret;
  }
  state.observabilityTokens = [...fixture.observabilityTokens];
  // The team and its sources and saved searches are set up outside the APIs driftless writes: the
  // fixture's, always.
  state.teamId = fixture.teamId;
  state.sources = fixture.sources;
  state.savedSearches = fixture.savedSearches;
  return state;
}

/** Writes the platform to `file` atomically (a temporary file, then a rename), without credentials. */
export function savePersisted(file: string, state: PlatformState): void {
  const withoutCredentials = {
    ...state,
    keys: state.keys.map(({ secret: _secret, ...key }) => key),
    observabilityTokens: [],
  };
  mkdirSync(dirname(file), { recursive: true });
  const temporary = `${file}.${process.pid}.tmp`;
  writeFileSync(temporary, `${JSON.stringify(withoutCredentials, null, 2)}\n`, { mode: 0o600 });
  renameSync(temporary, file);
}
