import { afterEach, expect, it } from "vitest";
import { defaultIds as ids, type Simulator, startSimulator } from "../src/simulator/index.js";

let sim: Simulator | undefined;
afterEach(() => sim?.close());

it("keeps only the newest requests, so a long-running simulator does not grow without bound", async () => {
  sim = await startSimulator({ rateLimit: { management: false }, recordLimit: 5 });
  const { managementKeyId, managementKeySecret } = sim.credentials;
  const authorization = `Basic ${Buffer.from(`${managementKeyId}:${managementKeySecret}`).toString("base64")}`;
  const path = (n: number) =>
    `/v1/organizations/${ids.organizationId}/services/${ids.serviceId}/backups?n=${n}`;

  for (let n = 1; n <= 12; n++) {
    const answer = await fetch(`${sim.managementUrl}${path(n)}`, { headers: { authorization } });
    await answer.arrayBuffer();
  }

  expect(sim.requests).toHaveLength(5);
  expect(sim.requests.map((r) => r.status)).toEqual([200, 200, 200, 200, 200]);
  expect(sim.requests.at(-1)?.path).toBe(path(12).split("?")[0]);
});
