import { afterEach, describe, expect, it } from "vitest";
import {
  defaultIds as ids,
  type Simulator,
  type SimulatorOptions,
  startSimulator,
} from "../src/simulator/index.js";

let sim: Simulator | undefined;
afterEach(() => sim?.close());

const basic = (id: string, secret: string) => `Basic ${Buffer.from(`${id}:${secret}`).toString("base64")}`;
const backups = `/v1/organizations/${ids.organizationId}/services/${ids.serviceId}/backups`;

async function start(options: SimulatorOptions = {}) {
  sim = await startSimulator(options);
  return sim;
}

async function management(authorization = basic(ids.managementKeyId, ids.managementKeySecret)) {
  const response = await fetch(`${sim?.managementUrl}${backups}`, { headers: { authorization } });
  return { status: response.status, headers: response.headers, json: await response.json() };
}

async function observability() {
  const response = await fetch(`${sim?.observabilityUrl}/api/v2/alerts/${ids.alertId}`, {
    headers: { authorization: "Bearer sim-observability-token" },
  });
  return { status: response.status, headers: response.headers, json: await response.json() };
}

/** The simulator's rate-limit clock, which only the test moves. */
const T0 = Date.parse("2026-01-01T00:00:00Z");

async function times<T>(n: number, request: () => Promise<T>): Promise<T[]> {
  const answers: T[] = [];
  for (let i = 0; i < n; i++) answers.push(await request());
  return answers;
}

describe("rate limits", () => {
  it("allows exactly 10 management requests per key by default, then 429 with Retry-After and X-RateLimit-Reset", async () => {
    let now = T0;
    await start({ now: () => now });

    const answers = await times(10, () => management());
    now += 4_000;
    const refused = await management();

    expect(answers.map((a) => a.status)).toEqual(Array(10).fill(200));
    expect(refused.status).toBe(429);
    expect(refused.json).toEqual({ error: "TOO_MANY_REQUESTS" });
    expect(refused.headers.get("retry-after")).toBe("6");
    expect(Number(refused.headers.get("x-ratelimit-reset"))).toBe(T0 / 1000 + 10);
    expect(answers[9]?.headers.get("x-ratelimit-remaining")).toBe("0");
  });

  it("opens a new window once the old one has passed", async () => {
    let now = T0;
    await start({ rateLimit: { management: { requests: 3, windowMs: 200 } }, now: () => now });

    const first = await times(4, () => management());
    now += 199;
    const stillClosed = await management();
    now += 1;
    const second = await times(4, () => management());

    expect(first.map((a) => a.status)).toEqual([200, 200, 200, 429]);
    expect(stillClosed.status).toBe(429);
    expect(second.map((a) => a.status)).toEqual([200, 200, 200, 429]);
  });

  it("counts per key: another key has its own budget, and unauthenticated requests spend none", async () => {
    await start({ rateLimit: { management: { requests: 2, windowMs: 60_000 } } });
    const other = sim?.state.keys.find((k) => k.id === ids.ciDeployerKeyId);
    if (other) other.secret = "ci-secret";

    await times(3, () => management(basic(ids.managementKeyId, "wrong")));
    const driftless = await times(3, () => management());
    const ci = await times(3, () => management(basic(ids.ciDeployerKeyId, "ci-secret")));

    expect(driftless.map((a) => a.status)).toEqual([200, 200, 429]);
    expect(ci.map((a) => a.status)).toEqual([200, 200, 429]);
  });

  it("allows exactly 100 observability requests per token by default", async () => {
    await start();

    const answers = await times(101, () => observability());

    expect(answers.filter((a) => a.status === 200)).toHaveLength(100);
    expect(answers[100]?.status).toBe(429);
    expect(answers[100]?.json).toEqual({ error: "TOO_MANY_REQUESTS" });
    expect(answers[100]?.headers.get("retry-after")).toBeTruthy();
  });

  it("can be turned off", async () => {
    await start({ rateLimit: { management: false } });

    const answers = await times(25, () => management());

    expect(answers.every((a) => a.status === 200)).toBe(true);
    expect(answers[0]?.headers.get("x-ratelimit-limit")).toBeNull();
  });
});
