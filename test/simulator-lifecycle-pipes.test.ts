import { describe, expect, it } from "vitest";
import { defaultIds as ids } from "../src/simulator/index.js";
import { service, useFullSimulator } from "./helpers/simulator-http.js";

/**
 * The published contract's data pipe lifecycle in the simulator's full mode: the create's rules, the
 * state commands and their transitions, per-pipe scaling, and the deletes of pipes and reverse private
 * endpoints.
 */

const platform = useFullSimulator();
const pipes = `${service}/datapipes`;
const endpoints = `${service}/datapipesReversePrivateEndpoints`;

const kafka = (extra: Record<string, unknown> = {}) => ({
  name: "payments-from-kafka",
  source: {
    kafka: {
      type: "confluent",
      format: "JSONEachRow",
      brokers: "broker-1.example.com:9092",
      topics: "payments",
      authentication: "PLAIN",
      credentials: { username: "pipe", password: "kafka-password-canary" },
      exactlyOnce: true,
    },
  },
  destination: {
    database: "analytics",
    table: "payments",
    managedTable: true,
    columns: [
      { name: "id", type: "String" },
      { name: "amount", type: "Decimal(18, 2)" },
    ],
  },
  fieldMappings: [
    { sourceField: "payment_id", destinationField: "id" },
    { sourceField: "amount", destinationField: "amount" },
  ],
  ...extra,
});

const postgres = {
  name: "accounts-from-postgres",
  source: {
    postgres: {
      host: "accounts-db.example.com",
      port: 5432,
      database: "accounts",
      credentials: { username: "replicator", password: "pg-password-canary" },
      settings: { replicationMode: "cdc" },
      tableMappings: [{ sourceSchemaName: "public", sourceTable: "accounts", targetTable: "accounts" }],
    },
  },
};

describe("creating a data pipe", () => {
  it("makes a Running pipe that reads and lists answer, never with its credentials", async () => {
    const sim = await platform.start();

    const created = await platform.management("POST", pipes, kafka());
    const { id } = created.json.result;
    const read = await platform.management("GET", `${pipes}/${id}`);
    const list = await platform.management("GET", pipes);

    expect(created.status).toBe(200);
    expect([created.requestIssues, created.answerIssues, list.answerIssues]).toEqual([[], [], []]);
    expect(created.json.result).toMatchObject({
      name: "payments-from-kafka",
      state: "Running",
      serviceId: ids.serviceId,
      source: { kafka: { type: "confluent", topics: "payments", exactlyOnce: true } },
      destination: { table: "payments", managedTable: true },
    });
    expect(read.json.result).toEqual(created.json.result);
    expect(list.json.result.map((p: { id: string }) => p.id)).toContain(id);
    expect(JSON.stringify([created.json, sim.state.pipes])).not.toContain("kafka-password-canary");
  });

  it("needs a destination table, managedTable and columns except for a database pipe", async () => {
    await platform.start();

    const headless = await platform.management("POST", pipes, { ...kafka(), destination: undefined });
    const database = await platform.management("POST", pipes, postgres);

    expect(headless.status).toBe(400);
    expect(headless.json.error).toContain("destination: is required");
    expect(database.status).toBe(200);
    expect(database.json.result.source.postgres).not.toHaveProperty("credentials");
  });

  it("refuses a destination column no field mapping names, and a mapping to no column", async () => {
    await platform.start();
    const [first, second] = kafka().fieldMappings;

    const unmapped = await platform.management("POST", pipes, kafka({ fieldMappings: [first] }));
    const stray = await platform.management(
      "POST",
      pipes,
      kafka({ fieldMappings: [first, second, { sourceField: "x", destinationField: "currency" }] }),
    );

    expect([unmapped.requestIssues, stray.requestIssues]).toEqual([[], []]);
    expect(unmapped.json.error).toBe(
      "BAD_REQUEST: fieldMappings: every destination column needs a mapping; none names amount",
    );
    expect(stray.json.error).toBe(
      "BAD_REQUEST: fieldMappings.2.destinationField: currency is not a destination column",
    );
  });

  it("refuses two source kinds, and scaling for a database pipe", async () => {
    await platform.start();
    const both = kafka();

    const twoKinds = await platform.management("POST", pipes, {
      ...both,
      source: { ...both.source, kinesis: { streamName: "clicks" } },
    });
    const scaled = await platform.management("POST", pipes, { ...postgres, scaling: { replicas: 2 } });

    expect([twoKinds.requestIssues, scaled.requestIssues]).toEqual([[], []]);
    expect(twoKinds.json.error).toBe(
      "BAD_REQUEST: source: a pipe reads one source kind, this one names kafka and kinesis",
    );
    expect(scaled.json.error).toBe(
      "BAD_REQUEST: scaling: only Kafka, Kinesis and object-storage pipes scale on their own; this pipe reads postgres",
    );
  });
});

describe("creating a data pipe, what the simulator refuses besides", () => {
  it("refuses a pipe without a name, an endpoint the service lacks, and a kind it does not make", async () => {
    await platform.start();
    const { kafka: source } = kafka().source;

    const nameless = await platform.management("POST", pipes, kafka({ name: "" }));
    const elsewhere = await platform.management(
      "POST",
      pipes,
      kafka({ source: { kafka: { ...source, reversePrivateEndpointIds: [ids.organizationId] } } }),
    );
    const mysql = await platform.management("POST", pipes, { name: "m", source: { mysql: { host: "db" } } });

    expect([nameless.requestIssues, elsewhere.requestIssues, mysql.requestIssues]).toEqual([[], [], []]);
    expect(nameless.json.error).toBe("BAD_REQUEST: name: a pipe needs a name");
    expect(elsewhere.json.error).toBe(
      `BAD_REQUEST: source.kafka.reversePrivateEndpointIds: endpoint ${ids.organizationId} does not exist in service ${ids.serviceId}`,
    );
    expect(mysql.json.error).toBe(
      "BAD_REQUEST: source.mysql: the simulator makes kafka, objectStorage, kinesis and postgres pipes only",
    );
  });
});

describe("a data pipe's state commands", () => {
  const command = (pipeId: string, name: string) =>
    platform.management("PATCH", `${pipes}/${pipeId}/state`, { command: name });

  it("stops from any state, and starts only from Stopped or Failed", async () => {
    const sim = await platform.start();

    const runningStart = await command(ids.kafkaPipeId, "start");
    const stop = await command(ids.kafkaPipeId, "stop");
    const start = await command(ids.kafkaPipeId, "start");
    sim.consoleEdit({ collection: "pipes", id: ids.kafkaPipeId }, { state: "Failed" });
    const failedStart = await command(ids.kafkaPipeId, "start");

    expect(runningStart.status).toBe(400);
    expect(runningStart.requestIssues).toEqual([]);
    expect(runningStart.json.error).toBe(
      "BAD_REQUEST: command: a pipe starts only from Stopped or Failed; this one is Running",
    );
    expect([stop.json.result.state, start.json.result.state, failedStart.json.result.state]).toEqual([
      "Stopped",
      "Running",
      "Running",
    ]);
    expect(stop.answerIssues).toEqual([]);
  });

  it("resyncs a postgres pipe only, and refuses a command the contract does not name", async () => {
    await platform.start();

    const streaming = await command(ids.kafkaPipeId, "resync");
    const database = await command(ids.postgresPipeId, "resync");
    const unknown = await command(ids.postgresPipeId, "pause");

    expect(streaming.json.error).toBe(
      "BAD_REQUEST: command: only a database pipe resyncs; this pipe reads kafka",
    );
    expect(database.status).toBe(200);
    expect(unknown.status).toBe(400);
    expect(unknown.json.error).toBe("BAD_REQUEST: command: must be one of start, stop, resync");
  });
});

describe("a data pipe's scaling", () => {
  it("changes the fields sent of a Kafka pipe, within the contract's bounds", async () => {
    await platform.start();
    const scaling = `${pipes}/${ids.kafkaPipeId}/scaling`;

    const scaled = await platform.management("PATCH", scaling, { replicas: 4, replicaMemoryGb: null });
    const tooMany = await platform.management("PATCH", scaling, { replicas: 41 });

    expect(scaled.status).toBe(200);
    expect(scaled.json.result.scaling).toEqual({
      replicas: 4,
      concurrency: 2,
      replicaCpuMillicores: 500,
      replicaMemoryGb: 1.5,
    });
    expect(tooMany.json.error).toBe("BAD_REQUEST: replicas: must be at most 40");
  });

  it("is refused for a database pipe", async () => {
    await platform.start();

    const answer = await platform.management("PATCH", `${pipes}/${ids.postgresPipeId}/scaling`, {
      replicas: 2,
    });

    expect(answer.status).toBe(400);
    expect(answer.requestIssues).toEqual([]);
    expect(answer.json.error).toMatch(/only Kafka, Kinesis and object-storage pipes scale on their own/);
  });
});

describe("deleting pipes and reverse private endpoints", () => {
  it("answers the envelope without a result, and 404 once gone", async () => {
    const sim = await platform.start();
    const endpoint = await platform.management("POST", endpoints, {
      description: "to go",
      type: "VPC_ENDPOINT_SERVICE",
      vpcEndpointServiceName: "com.amazonaws.vpce.eu-west-1.vpce-svc-0",
    });
    const endpointPath = `${endpoints}/${endpoint.json.result.id}`;

    const pipe = await platform.management("DELETE", `${pipes}/${ids.kinesisPipeId}`);
    const pipeAgain = await platform.management("DELETE", `${pipes}/${ids.kinesisPipeId}`);
    const gone = await platform.management("DELETE", endpointPath);
    const goneAgain = await platform.management("GET", endpointPath);

    expect([pipe.status, gone.status]).toEqual([200, 200]);
    expect([pipe.answerIssues, gone.answerIssues]).toEqual([[], []]);
    expect(pipe.json).not.toHaveProperty("result");
    expect(sim.state.pipes.map((p) => p.id)).not.toContain(ids.kinesisPipeId);
    expect(sim.state.endpoints).toEqual([]);
    expect([pipeAgain.status, goneAgain.status]).toEqual([404, 404]);
  });
});

describe("the minimal contract", () => {
  it("serves none of the lifecycle endpoints", async () => {
    await platform.start({ contract: "minimal" });

    const answers = [
      await platform.management("POST", pipes, kafka()),
      await platform.management("DELETE", `${pipes}/${ids.kafkaPipeId}`),
      await platform.management("PATCH", `${pipes}/${ids.kafkaPipeId}/state`, { command: "stop" }),
      await platform.observability("DELETE", `/api/v2/dashboards/${ids.dashboardId}`),
      await platform.observability("GET", "/api/v2/alerts"),
    ];

    expect(answers.map((a) => a.status)).toEqual([404, 405, 404, 405, 404]);
  });
});
