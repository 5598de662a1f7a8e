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

async function times<T>(n: number, request: () => Promise<T>): Promise<T[]> {
  const answers: T[] = [];
  for (let i = 0; i < n; i++) answers.push(await request());
  return answers;
}

describe("rate limits", () => {
  it("allows exactly 10 management requests per key by default, then 429 with Retry-After and X-RateLimit-Reset", async () => {
    await start();

    const answers = await times(11, () => management());

    expect(answers.slice(0, 10).map((a) => a.status)).toEqual(Array(10).fill(200));
    const refused = answers[10];
    expect(refused?.status).toBe(429);
    expect(refused?.json).toEqual({ error: "TOO_MANY_REQUESTS" });
    expect(Number(refused?.headers.get("retry-after"))).toBeGreaterThanOrEqual(1);
    expect(Number(refused?.headers.get("retry-after"))).toBeLessThanOrEqual(10);
    const reset = Number(refused?.headers.get("x-ratelimit-reset"));
    expect(reset * 1000).toBeGreaterThan(Date.now());
    expect(reset * 1000).toBeLessThanOrEqual(Date.now() + 11_000);
    expect(answers[9]?.headers.get("x-ratelimit-remaining")).toBe("0");
  });

  it("opens a new window once the old one has passed", async () => {
    await start({ rateLimit: { management: { requests: 3, windowMs: 200 } } });

    const first = await times(4, () => management());
    await new Promise((resolve) => setTimeout(resolve, 250));
    const second = await times(4, () => management());

    expect(first.map((a) => a.status)).toEqual([200, 200, 200, 429]);
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
