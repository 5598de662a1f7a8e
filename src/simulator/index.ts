import { randomUUID } from "node:crypto";
import type { IncomingMessage, ServerResponse } from "node:http";
import { type Api, ConfigError } from "../errors.js";
import { type ContractIssue, contractCheck, dottedPath } from "../platform/contracts.js";
import type { Contract, RouteName } from "../platform/routes.js";
import type { Logger } from "../telemetry/logger.js";
import { missedBackups, newBackup } from "./backups.js";
import { type ConsoleTarget, consoleEdit, serveConsole } from "./console.js";
import { defaultFixture } from "./default-fixture.js";
import { createFaultBook, type Fault, seededRandom } from "./faults.js";
import { loadFixture, parseFixture } from "./fixture.js";
import { type ApiServerOptions, type RecordedRequest, startApiServer } from "./http.js";
import {
  authenticateKey,
  managementErrorBody,
  managementHandlers,
  type TableMappingOrder,
} from "./management.js";
import type { Backup, BackupStatus, FixtureInput, PlatformState, ReverseEndpoint } from "./model.js";
import { authenticateToken, observabilityErrorBody, observabilityHandlers } from "./observability.js";
import { loadPersisted, savePersisted } from "./persist.js";
import { createRateLimiter, type RateLimit } from "./rate-limit.js";

/**
 * A simulator of the platform's two APIs, for demos, tests and the embedded default when no API URL
 * is configured. It is not a client of anything: nothing outside cli, commands and tests imports it.
 */

export { CONSOLE_COLLECTIONS, ConsoleEditError, type ConsoleTarget } from "./console.js";
export { defaultFixture, defaultIds } from "./default-fixture.js";
export type { Fault } from "./faults.js";
export { loadFixture } from "./fixture.js";
export type { RecordedRequest } from "./http.js";
export type { TableMappingOrder } from "./management.js";
export type * from "./model.js";
export type { RateLimit } from "./rate-limit.js";

/** An alert's state changes to `state` `afterMs` after the simulator starts. */
export type AlertStep = { alertId: string; afterMs: number; state: string };

export type SimulatorOptions = {
  /**
   * The contract served (docs/platform-apis.md#the-two-contracts): `minimal`, the seven endpoints
   * driftless must always work with, strict about their fields; `full`, the published contract: its
   * validation (contracts/full/), its reads and its answer shapes. Default minimal.
   */
  contract?: Contract;
  /** In which order a pipe PATCH's table mappings take effect; default remove-first. */
  tableMappingOrder?: TableMappingOrder;
  /** Address to bind; default 127.0.0.1. */
  host?: string;
  /** Default 0: any free port. */
  managementPort?: number;
  /** Default 0: any free port. */
  observabilityPort?: number;
  /** The initial platform, as data or a YAML file path; default the built-in defaultFixture(). */
  fixture?: FixtureInput | string;
  /** Seed of the faults' `probability` draws; default 1. */
  seed?: number;
  /** Per key (management, default 10 per 10 s) and per token (observability, default 100 per 60 s); false: off. */
  rateLimit?: { management?: RateLimit | false; observability?: RateLimit | false };
  /** The clock of the rate limits' windows, in ms since the epoch; default Date.now. */
  now?: () => number;
  /** How long a new reverse private endpoint stays `Provisioning` before `Ready`; default 5000, 0: at once. */
  endpointReadyAfterMs?: number;
  /** Scripted alert state changes, e.g. OK → ALERT → OK. */
  alertScript?: AlertStep[];
  /** Every service gets a new backup this often, as on the platform; default 8 hours, 0: never. */
  backupEveryMs?: number;
  /**
   * A JSON file that keeps the platform between runs: loaded at start when it exists (instead of the
   * fixture, whose credentials still apply), saved after every change the simulator makes (a write
   * request, an endpoint turning Ready, a backup, an alert state). Not on close: a run that only read
   * must not overwrite what another run saved meanwhile. Never holds a credential. Default: nothing
   * is kept.
   */
  stateFile?: string;
  /** Receives one debug line per request (never headers or bodies) and handler failures. */
  logger?: Logger;
  /** How many of the newest requests `requests` keeps; default 10,000. */
  recordLimit?: number;
};

export type Simulator = {
  contract: Contract;
  managementUrl: string;
  observabilityUrl: string;
  /** The first management key with a secret and the first observability token of the fixture. */
  credentials: { managementKeyId: string; managementKeySecret: string; observabilityToken: string };
  /** The newest requests (up to `recordLimit`) in arrival order, both APIs; cleared in place by clearRequests(). */
  requests: RecordedRequest[];
  clearRequests(): void;
  inject(fault: Fault): void;
  clearFaults(): void;
  /** The live platform: change it to simulate an edit made in the web console. */
  state: PlatformState;
  /**
   * Adds a backup of a service and returns it: finished at `finishedAt` (default now) with `status`
   * (default done; the minimal contract does not answer it).
   */
  addBackup(serviceId: string, finishedAt?: Date, status?: BackupStatus): Backup;
  /**
   * An edit made in the platform's console, behind driftless's back: merges `patch` into the object
   * `target` names (console.ts) and returns it. Throws ConsoleEditError when it names nothing.
   */
  consoleEdit(target: ConsoleTarget, patch: Record<string, unknown>): Record<string, unknown>;
  /** Sets an alert's state as the platform would; throws ConfigError for an unknown alert. */
  setAlertState(alertId: string, state: string): void;
  /** Stops both servers, cutting open connections, and every timer. */
  close(): Promise<void>;
};

const DEFAULT_BACKUP_EVERY_MS = 8 * 3_600_000;
/** A long-running simulator must not keep every request forever. */
const DEFAULT_RECORD_LIMIT = 10_000;

export const DEFAULT_RATE_LIMITS = {
  management: { requests: 10, windowMs: 10_000 },
  observability: { requests: 100, windowMs: 60_000 },
} as const;

function initialState({ fixture, stateFile }: SimulatorOptions): PlatformState {
  const initial =
    typeof fixture === "string"
      ? loadFixture(fixture)
      : parseFixture(fixture ?? defaultFixture(), "given to startSimulator");
  return stateFile ? loadPersisted(stateFile, initial) : initial;
}

/** Starts both APIs; throws ConfigError for a bad fixture or an address it cannot listen on. */
export async function startSimulator(options: SimulatorOptions = {}): Promise<Simulator> {
  const host = options.host ?? "127.0.0.1";
  const world = createWorld(options);
  checkAlertScript(world.state, options.alertScript);
  const requests: RecordedRequest[] = [];
  const faults = createFaultBook(seededRandom(options.seed ?? 1));
  const contract = options.contract ?? "minimal";
  const shared: Shared = {
    contract,
    faults,
    requests,
    recordLimit: options.recordLimit ?? DEFAULT_RECORD_LIMIT,
    onHandled: (method: string) => {
      if (method !== "GET") world.save();
    },
    console: (request: IncomingMessage, response: ServerResponse, path: string) =>
      serveConsole(world.state, request, response, path, world.save),
    logger: options.logger,
  };
  const management = await startManagement(world, options, shared, host);
  const observability = await startObservability(world, options, shared, host).catch(async (error) => {
    await management.close();
    throw error;
  });
  scheduleEvents(world, options);

  const { state } = world;
  const key = state.keys.find((k) => k.secret);
  return {
    contract,
    managementUrl: management.url,
    observabilityUrl: observability.url,
    credentials: {
      managementKeyId: key?.id ?? "",
      managementKeySecret: key?.secret ?? "",
      observabilityToken: state.observabilityTokens[0] ?? "",
    },
    requests,
    clearRequests: () => {
      requests.length = 0;
    },
    inject: (fault) => faults.inject(fault),
    clearFaults: () => faults.clear(),
    state,
    addBackup: world.addBackup,
    setAlertState: world.setAlertState,
    consoleEdit: (target, patch) => {
      const edited = consoleEdit(state, target, patch);
      world.save();
      return edited;
    },
    close: async () => {
      world.close();
      await Promise.all([management.close(), observability.close()]);
    },
  };
}

type Shared = {
  contract: Contract;
  console: ApiServerOptions<Api, unknown>["console"];
  faults: ReturnType<typeof createFaultBook>;
  requests: RecordedRequest[];
  recordLimit: number;
  onHandled(method: string): void;
  logger: Logger | undefined;
};

/** The management API: Basic auth against the fixture's keys, a rate limit per key. */
function startManagement(world: World, options: SimulatorOptions, shared: Shared, host: string) {
  const { state } = world;
  return startApiServer(
    {
      api: "management",
      handlers: managementHandlers({
        state,
        contract: shared.contract,
        tableMappingOrder: options.tableMappingOrder ?? "remove-first",
        initialEndpointStatus: () => (world.readyAfterMs <= 0 ? "Ready" : "Provisioning"),
        onEndpointCreated: (endpoint) => {
          if (world.readyAfterMs > 0) world.becomeReady(endpoint);
        },
      }),
      authenticate: (authorization) => authenticateKey(state, authorization),
      callerId: (key) => key.id,
      limiter: createRateLimiter(
        options.rateLimit?.management ?? DEFAULT_RATE_LIMITS.management,
        options.now,
      ),
      errorBody: managementErrorBody,
      check: requestCheck("management", shared.contract),
      newRequestId: randomUUID,
      ...shared,
    },
    host,
    options.managementPort ?? 0,
  );
}

/** The observability API: Bearer auth against the fixture's tokens, a rate limit per token. */
function startObservability(world: World, options: SimulatorOptions, shared: Shared, host: string) {
  const { state } = world;
  return startApiServer(
    {
      api: "observability",
      handlers: observabilityHandlers({ state, contract: shared.contract }),
      authenticate: (authorization) => authenticateToken(state, authorization),
      callerId: (token) => token,
      limiter: createRateLimiter(
        options.rateLimit?.observability ?? DEFAULT_RATE_LIMITS.observability,
        options.now,
      ),
      errorBody: observabilityErrorBody,
      check: requestCheck("observability", shared.contract),
      newRequestId: () => undefined,
      ...shared,
    },
    host,
    options.observabilityPort ?? 0,
  );
}

/**
 * The `full` mode's check of every request against the published contract's documents, in the words
 * of each API's 400 answer; the `minimal` mode checks bodies in its handlers (requests.ts).
 */
function requestCheck(api: Api, contract: Contract) {
  if (contract === "minimal") return undefined;
  const check = contractCheck("full");
  return (route: RouteName, params: Record<string, string>, body: unknown, query: Record<string, string>) => {
    const issues = check.request(route, params, body, query);
    if (issues.length === 0) return undefined;
    const inQuery = issues.filter((issue) => issue.path[0] === "query");
    const listed = (some: ContractIssue[]) =>
      some.map((issue) => `${dottedPath(issue.path)}: ${issue.message}`).join("; ");
    if (api === "management") return listed(issues);
    // The observability API validates the query string apart, and names its fields without a prefix.
    if (inQuery.length > 0)
      return `Query validation failed: ${listed(inQuery.map((issue) => ({ ...issue, path: issue.path.slice(1) })))}`;
    return `Body validation failed: ${listed(issues)}`;
  };
}

/** The live platform and what changes it over time: saving, timers, endpoints, backups, alert states. */
function createWorld(options: SimulatorOptions) {
  const state = initialState(options);
  let closed = false;
  const save = () => {
    // After close, a request that was still waiting out a latency fault must not write a stale file.
    if (!options.stateFile || closed) return;
    try {
      savePersisted(options.stateFile, state);
    } catch (error) {
      // The platform answered already; a state file that cannot be written only costs the next run.
      options.logger?.error({ err: error, file: options.stateFile }, "simulator cannot save its state");
    }
  };
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, run: () => void, every = false) => {
    const timer = every ? setInterval(run, ms) : setTimeout(run, ms);
    timer.unref();
    timers.add(timer);
  };
  const readyAfterMs = options.endpointReadyAfterMs ?? 5000;
  return {
    state,
    save,
    later,
    readyAfterMs,
    setAlertState(alertId: string, value: string) {
      const alert = state.alerts.find((a) => a.id === alertId);
      if (!alert) throw new ConfigError(`the simulator has no alert ${alertId}`);
      alert.state = value;
      alert.updatedAt = new Date().toISOString();
      save();
    },
    addBackup(serviceId: string, finishedAt = new Date(), status?: BackupStatus): Backup {
      const backup = newBackup(serviceId, finishedAt, status ? { status } : {});
      state.backups.unshift(backup);
      save();
      return backup;
    },
    becomeReady(endpoint: ReverseEndpoint) {
      later(readyAfterMs, () => {
        endpoint.status = "Ready";
        save();
      });
    },
    close() {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      closed = true;
    },
  };
}
type World = ReturnType<typeof createWorld>;

function checkAlertScript(state: PlatformState, script: readonly AlertStep[] = []): void {
  const unknown = script.find((step) => !state.alerts.some((a) => a.id === step.alertId));
  if (unknown) {
    throw new ConfigError(`the alert script names alert ${unknown.alertId}, which the fixture does not have`);
  }
}

/** The alert script, endpoints left provisioning by a saved state, and the backup schedule. */
function scheduleEvents(world: World, options: SimulatorOptions): void {
  const { state } = world;
  for (const step of options.alertScript ?? []) {
    // A dashboard PUT may have deleted the alert by then; a script step for it is then moot.
    world.later(step.afterMs, () => {
      if (state.alerts.some((a) => a.id === step.alertId)) world.setAlertState(step.alertId, step.state);
    });
  }
  // Endpoints a saved state left provisioning get there in this run.
  for (const endpoint of state.endpoints) if (endpoint.status !== "Ready") world.becomeReady(endpoint);
  const backupEvery = options.backupEveryMs ?? DEFAULT_BACKUP_EVERY_MS;
  if (backupEvery <= 0) return;
  // A saved platform kept backing up while no simulator ran it; a watch must not find it stale.
  if (options.stateFile) state.backups.unshift(...missedBackups(state.backups, backupEvery, Date.now()));
  world.later(
    backupEvery,
    () => {
      for (const service of state.services) world.addBackup(service.id);
    },
    true,
  );
}
