import { Writable } from "node:stream";
import { afterEach, expect, it } from "vitest";
import { createDeliveryQueue } from "../src/notify/delivery.js";
import { createLogger } from "../src/telemetry/logger.js";
import { createHttpTestServer, type HttpTestServer } from "./helpers/http-test-server.js";
import { until } from "./helpers/wait.js";

/** The notification queue is bounded: a receiver that is stuck costs the oldest entries, with a log line. */

let server: HttpTestServer;
afterEach(() => server.close());

it("drops the oldest waiting notification when the queue is full, says so, and delivers the rest in order", async () => {
  let release: () => void = () => {};
  const gate = new Promise<void>((resolve) => {
    release = resolve;
  });
  server = await createHttpTestServer();
  server.reply(async () => {
    await gate;
    return { status: 200 };
  });
  const logs: string[] = [];
  const logger = createLogger(
    "info",
    new Writable({
      write(chunk, _encoding, done) {
        logs.push(String(chunk));
        done();
      },
    }),
  );
  const queue = createDeliveryQueue("test", logger, { capacity: 2 });
  const push = (n: number) => queue.push({ url: server.url, headers: {}, body: `{"n":${n}}`, what: `n${n}` });

  push(1);
  await until(() => server.requests.length === 1 || undefined);
  push(2);
  push(3);
  push(4);
  release();
  await until(() => server.requests.length === 3 || undefined);
  await queue.close(1_000);

  expect(server.requests.map((r) => r.body)).toEqual(['{"n":1}', '{"n":3}', '{"n":4}']);
  expect(logs.join("")).toMatch(/"what":"n2".*"notification dropped: the queue is full"/);
});
