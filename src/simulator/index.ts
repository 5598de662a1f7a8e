import { randomUUID } from "node:crypto";
import { ConfigError } from "../errors.js";
import type { Logger } from "../telemetry/logger.js";
import { missedBackups, newBackup } from "./backups.js";
import { defaultFixture } from "./default-fixture.js";
import { createFaultBook, type Fault, seededRandom } from "./faults.js";
import { loadFixture, parseFixture } from "./fixture.js";
import { type RecordedRequest, startApiServer } from "./http.js";
import { authenticateKey, managementErrorBody, managementHandlers } from "./management.js";
import type { Backup, FixtureInput, PlatformState, ReverseEndpoint } from "./model.js";
import { authenticateToken, observabilityErrorBody, observabilityHandlers } from "./observability.js";
import { loadPersisted, savePersisted } from "./persist.js";
import { createRateLimiter, type RateLimit } from "./rate-limit.js";

/**
 * A simulator of the platform's two APIs, for demos, tests and the embedded default when no API URL
 * is configured. It is not a client of anything: nothing outside cli, commands and tests imports it.
 */

export { defaultFixture, defaultIds } from "./default-fixture.js";
export type { Fault } from "./faults.js";
export { loadFixture } from "./fixture.js";
export type { RecordedRequest } from "./http.js";
export type * from "./model.js";
export type { RateLimit } from "./rate-limit.js";

/** An alert's state changes to `state` `afterMs` after the simulator starts. */
export type AlertStep = { alertId: string; afterMs: number; state: string };

export type SimulatorOptions = {
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
};

export type Simulator = {
  managementUrl: string;
  observabilityUrl: string;
  /** The first management key with a secret and the first observability token of the fixture. */
  credentials: { managementKeyId: string; managementKeySecret: string; observabilityToken: string };
  /** Every request in arrival order, both APIs; cleared in place by clearRequests(). */
  requests: RecordedRequest[];
  clearRequests(): void;
  inject(fault: Fault): void;
  clearFaults(): void;
  /** The live platform: change it to simulate an edit made in the web console. */
  state: PlatformState;
  /** Adds a finished backup of a service (default: finished now) and returns it. */
  addBackup(serviceId: string, finishedAt?: Date): Backup;
  /** Sets an alert's state as the platform would; throws ConfigError for an unknown alert. */
  setAlertState(alertId: string, state: string): void;
  /** Stops both servers, cutting open connections, and every timer. */
  close(): Promise<void>;
};

const DEFAULT_BACKUP_EVERY_MS = 8 * 3_600_000;

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
  const saveAfter = (method: string) => {
    if (method !== "GET") save();
  };
  const unknownAlert = options.alertScript?.find((step) => !state.alerts.some((a) => a.id === step.alertId));
  if (unknownAlert) {
    throw new ConfigError(
      `the alert script names alert ${unknownAlert.alertId}, which the fixture does not have`,
    );
  }
  const requests: RecordedRequest[] = [];
  const faults = createFaultBook(seededRandom(options.seed ?? 1));
  const timers = new Set<NodeJS.Timeout>();
  const later = (ms: number, run: () => void, every = false) => {
    const timer = every ? setInterval(run, ms) : setTimeout(run, ms);
    timer.unref();
    timers.add(timer);
  };
  const readyAfter = options.endpointReadyAfterMs ?? 5000;

  const setAlertState = (alertId: string, value: string) => {
    const alert = state.alerts.find((a) => a.id === alertId);
    if (!alert) throw new ConfigError(`the simulator has no alert ${alertId}`);
    alert.state = value;
    alert.updatedAt = new Date().toISOString();
    save();
  };

  const addBackup = (serviceId: string, finishedAt = new Date()): Backup => {
    const backup = newBackup(serviceId, finishedAt);
    state.backups.unshift(backup);
    save();
    return backup;
  };
  const becomeReady = (endpoint: ReverseEndpoint) =>
    later(readyAfter, () => {
      endpoint.status = "Ready";
      save();
    });

  const management = await startApiServer(
    {
      api: "management",
      handlers: managementHandlers({
        state,
        initialEndpointStatus: () => (readyAfter <= 0 ? "Ready" : "Provisioning"),
        onEndpointCreated: (endpoint) => {
          if (readyAfter > 0) becomeReady(endpoint);
        },
      }),
      authenticate: (authorization) => authenticateKey(state, authorization),
      callerId: (key) => key.id,
      limiter: createRateLimiter(options.rateLimit?.management ?? DEFAULT_RATE_LIMITS.management),
      errorBody: managementErrorBody,
      newRequestId: randomUUID,
      faults,
      requests,
      onHandled: saveAfter,
      logger: options.logger,
    },
    host,
    options.managementPort ?? 0,
  );
  const observability = await startApiServer(
    {
      api: "observability",
      handlers: observabilityHandlers(state),
      authenticate: (authorization) => authenticateToken(state, authorization),
      callerId: (token) => token,
      limiter: createRateLimiter(options.rateLimit?.observability ?? DEFAULT_RATE_LIMITS.observability),
      errorBody: observabilityErrorBody,
      newRequestId: () => undefined,
      faults,
      requests,
      onHandled: saveAfter,
      logger: options.logger,
    },
    host,
    options.observabilityPort ?? 0,
  ).catch(async (error) => {
    await management.close();
    throw error;
  });

  for (const step of options.alertScript ?? []) {
    // A dashboard PUT may have deleted the alert by then; a script step for it is then moot.
    later(step.afterMs, () => {
      if (state.alerts.some((a) => a.id === step.alertId)) setAlertState(step.alertId, step.state);
    });
  }
  // Endpoints a saved state left provisioning get there in this run.
  for (const endpoint of state.endpoints) if (endpoint.status !== "Ready") becomeReady(endpoint);
  const backupEvery = options.backupEveryMs ?? DEFAULT_BACKUP_EVERY_MS;
  if (backupEvery > 0) {
    // A saved platform kept backing up while no simulator ran it; a watch must not find it stale.
    if (options.stateFile) state.backups.unshift(...missedBackups(state.backups, backupEvery, Date.now()));
    later(
      backupEvery,
      () => {
        for (const service of state.services) addBackup(service.id);
      },
      true,
    );
  }

  const key = state.keys.find((k) => k.secret);
  return {
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
    addBackup,
    setAlertState,
    close: async () => {
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      closed = true;
      await Promise.all([management.close(), observability.close()]);
    },
  };
}
