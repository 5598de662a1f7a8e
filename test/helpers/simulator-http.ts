import { afterEach } from "vitest";
import { type ContractIssue, contractCheck } from "../../src/platform/contracts.js";
import { ROUTE_NAMES, ROUTES, type RouteName } from "../../src/platform/routes.js";
import {
  defaultIds,
  type RecordedRequest,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../../src/simulator/index.js";

/**
 * The simulator in `full` mode on port 0 (rate limits off, endpoints Ready at once), spoken to over
 * real HTTP with the fixture's credentials, and every exchange judged by the published contract's
 * documents: whether the request conforms (a refusal a test expects from a rule of the platform beyond
 * the documents must come to a request the documents accept) and whether the answer does. Registers
 * its own afterEach that closes the simulator, as daemon-run.ts does.
 */

export type Exchange = {
  status: number;
  headers: Headers;
  text: string;
  // biome-ignore lint/suspicious/noExplicitAny: an answer's JSON, read by the test's assertions.
  json: any;
  route: RouteName | undefined;
  /** What of the request the published contract's documents refuse; [] when it conforms. */
  requestIssues: ContractIssue[];
  /** What of the answer the documents refuse; [] when it conforms. */
  answerIssues: ContractIssue[];
};

export const basic = (id: string, secret: string) =>
  `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;

export const org = `/v1/organizations/${defaultIds.organizationId}`;
export const service = `${org}/services/${defaultIds.serviceId}`;

export function useFullSimulator() {
  let sim: Simulator | undefined;
  afterEach(async () => {
    await sim?.close();
    sim = undefined;
  });

  const started = () => {
    if (!sim) throw new Error("start the simulator first");
    return sim;
  };

  async function send(
    api: "management" | "observability",
    method: string,
    path: string,
    body?: unknown,
    authorization?: string,
  ): Promise<Exchange> {
    const s = started();
    const base = api === "management" ? s.managementUrl : s.observabilityUrl;
    const { managementKeyId, managementKeySecret, observabilityToken } = s.credentials;
    const response = await fetch(`${base}${path}`, {
      method,
      headers: {
        authorization:
          authorization ??
          (api === "management"
            ? basic(managementKeyId, managementKeySecret)
            : `Bearer ${observabilityToken}`),
        ...(body === undefined ? {} : { "content-type": "application/json" }),
      },
      body: body === undefined ? undefined : JSON.stringify(body),
    });
    const text = await response.text();
    const json = text ? JSON.parse(text) : undefined;
    const recorded = s.requests.at(-1);
    const route = recorded ? routeOf(recorded) : undefined;
    const check = contractCheck("full");
    return {
      status: response.status,
      headers: response.headers,
      text,
      json,
      route: route?.name,
      requestIssues:
        route && recorded ? check.request(route.name, route.params, recorded.body, recorded.query) : [],
      answerIssues: route ? check.answer(route.name, response.status, json) : [],
    };
  }

  return {
    async start(options: SimulatorOptions = {}) {
      sim = await startSimulator({
        contract: "full",
        rateLimit: { management: false, observability: false },
        endpointReadyAfterMs: 0,
        backupEveryMs: 0,
        ...options,
      });
      return sim;
    },
    get sim() {
      return started();
    },
    management: (method: string, path: string, body?: unknown, authorization?: string) =>
      send("management", method, path, body, authorization),
    observability: (method: string, path: string, body?: unknown) =>
      send("observability", method, path, body),
  };
}

/** The route of a recorded request and its path parameters. */
export function routeOf(
  request: RecordedRequest,
): { name: RouteName; params: Record<string, string> } | undefined {
  const name = ROUTE_NAMES.find(
    (n) => ROUTES[n].template === request.route && ROUTES[n].method === request.method,
  );
  if (!name) return undefined;
  const segments = request.path.split("/");
  const params: Record<string, string> = {};
  ROUTES[name].template.split("/").forEach((part, i) => {
    if (part.startsWith("{")) params[part.slice(1, -1)] = decodeURIComponent(segments[i] ?? "");
  });
  return { name, params };
}
