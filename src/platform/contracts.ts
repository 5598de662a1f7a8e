import { readFileSync } from "node:fs";
import { Ajv2020, type ErrorObject, type ValidateFunction } from "ajv/dist/2020.js";
import formats from "ajv-formats";
import { CORE_SCHEMA, load } from "js-yaml";
import type { Api } from "../errors.js";
import { PACKAGE_ROOT } from "../package.js";
import { type Contract, ROUTES, type RouteName } from "./routes.js";

/**
 * The platform's contracts as data: contracts/<contract>/<api>.yaml, OpenAPI 3.1 documents whose
 * operation ids are the route names of routes.ts. Requests and answers are checked against them by
 * ajv, a JSON Schema validator (OpenAPI 3.1 schemas are JSON Schema 2020-12), so the rules are
 * written once, in the documents: the simulator's `full` mode, `validate --contract full` and the
 * conformance tests all read the same ones.
 */

/** One way a request or answer breaks a contract: where (from the body, or `params`) and why. */
export type ContractIssue = { path: (string | number)[]; message: string };

export type ContractCheck = {
  contract: Contract;
  /** Whether the contract's documents describe the route. */
  has(route: RouteName): boolean;
  /**
   * What breaks the contract in a request of `route`: its path parameters, body and query string (the
   * values as they are on the wire, default none; a number written in one is read as a number). []
   * when nothing.
   */
  request(
    route: RouteName,
    params: Readonly<Record<string, string>>,
    body: unknown,
    query?: Readonly<Record<string, string>>,
  ): ContractIssue[];
  /** What breaks the contract in an answer of `route` with `status`; [] when nothing. */
  answer(route: RouteName, status: number, body: unknown): ContractIssue[];
};

/** A validator compiled on its first use: a run checks a few of the documents' operations, not all. */
type Validator = () => ValidateFunction;

type Operation = {
  params?: Validator;
  /** The query parameters, and those of them the document types as numbers. */
  query?: { validator: Validator; numbers: Set<string> };
  body?: Validator;
  answers: Map<string, Validator | "empty">;
};

const APIS: readonly Api[] = ["management", "observability"];
const METHODS = ["get", "put", "post", "patch", "delete"] as const;

/** The folder of the documents, in the package beside src/ and dist/. */
const folder = new URL("contracts/", PACKAGE_ROOT);

const loaded = new Map<Contract, ContractCheck>();

/**
 * The check of `contract`, compiled on first use and kept (the documents do not change while a
 * process runs). Throws when a document cannot be read or compiled: a broken install.
 */
export function contractCheck(contract: Contract): ContractCheck {
  let check = loaded.get(contract);
  if (!check) {
    check = compile(contract);
    loaded.set(contract, check);
  }
  return check;
}

function compile(contract: Contract): ContractCheck {
  // allErrors: a manifest's every problem at once. strict off: OpenAPI's own keywords (discriminator
  // is read, example and deprecated are notes) sit among the schema's.
  const ajv = new Ajv2020({ allErrors: true, strict: false, discriminator: true });
  // A CommonJS module whose default export is also its `default` member.
  formats.default(ajv);
  const operations = new Map<string, Operation>();
  for (const api of APIS) {
    const id = `${api}.yaml`;
    const document = readDocument(contract, id);
    ajv.addSchema(document, id);
    for (const [template, item] of Object.entries<Record<string, unknown>>(Object(document.paths ?? {}))) {
      for (const method of METHODS) {
        const operation = item[method] as Record<string, unknown> | undefined;
        if (!operation) continue;
        const at = `${id}#/paths/${pointer(template)}`;
        operations.set(
          `${method.toUpperCase()} ${template}`,
          operationOf(ajv, document, item, operation, `${at}/${method}`, at),
        );
      }
    }
  }
  const operationOfRoute = (route: RouteName) => {
    const { method, template } = ROUTES[route];
    return operations.get(`${method} ${template}`);
  };
  return {
    contract,
    has: (route) => operationOfRoute(route) !== undefined,
    request(route, params, body, query = {}) {
      const operation = operationOfRoute(route);
      if (!operation)
        return [{ path: [], message: `${ROUTES[route].template} is not in the ${contract} contract` }];
      const under = (step: string) => (issue: ContractIssue) => ({ ...issue, path: [step, ...issue.path] });
      return [
        ...issuesOf(operation.params?.(), params).map(under("params")),
        ...issuesOf(operation.query?.validator(), queryValues(query, operation.query?.numbers)).map(
          under("query"),
        ),
        ...issuesOf(operation.body?.(), body),
      ];
    },
    answer(route, status, body) {
      const operation = operationOfRoute(route);
      const answer = operation?.answers.get(String(status)) ?? operation?.answers.get("default");
      if (!answer)
        return [{ path: [], message: `status ${status} is not an answer the ${contract} contract names` }];
      if (answer === "empty") return body === undefined ? [] : [{ path: [], message: "must be empty" }];
      return issuesOf(answer(), body);
    },
  };
}

type Json = Record<string, unknown>;

/**
 * A document of the package's own, read by js-yaml (six times quicker than the yaml library here, which
 * the manifests need for positions) with YAML 1.2's core schema, as the yaml library reads it.
 */
export function readDocument(contract: Contract, file: string): Json {
  return Object(load(readFileSync(new URL(`${contract}/${file}`, folder), "utf8"), { schema: CORE_SCHEMA }));
}

/** The validators of one operation: its path parameters, its body, and each answer by status. */
function operationOf(
  ajv: Ajv2020,
  document: Json,
  item: Json,
  operation: Json,
  at: string,
  itemAt: string,
): Operation {
  const result: Operation = { answers: new Map() };
  const parameters = [
    ...listed(item.parameters).map((p, i) => [p, `${itemAt}/parameters/${i}`] as const),
    ...listed(operation.parameters).map((p, i) => [p, `${at}/parameters/${i}`] as const),
  ];
  const properties: Json = {};
  const required: string[] = [];
  const query: Json = {};
  const numbers = new Set<string>();
  for (const [parameter, where] of parameters) {
    const [resolved, base] = resolve(document, parameter, where);
    const name = String(resolved.name);
    if (resolved.in === "query") {
      query[name] = { $ref: `${base}/schema` };
      const type = (resolved.schema as Json | undefined)?.type;
      if (type === "integer" || type === "number") numbers.add(name);
    }
    if (resolved.in !== "path") continue;
    properties[name] = { $ref: `${base}/schema` };
    required.push(name);
  }
  if (required.length > 0) result.params = compiled(ajv, { type: "object", properties, required });
  if (Object.keys(query).length > 0) {
    result.query = { validator: compiled(ajv, { type: "object", properties: query }), numbers };
  }
  const body = (operation.requestBody as Json | undefined)?.content as Json | undefined;
  if (body?.["application/json"]) {
    result.body = compiled(ajv, { $ref: `${at}/requestBody/content/${pointer("application/json")}/schema` });
  }
  for (const [status, answer] of Object.entries((operation.responses as Json | undefined) ?? {})) {
    const [resolved, base] = resolve(document, answer as Json, `${at}/responses/${status}`);
    const json = (resolved.content as Json | undefined)?.["application/json"];
    result.answers.set(
      status,
      json ? compiled(ajv, { $ref: `${base}/content/${pointer("application/json")}/schema` }) : "empty",
    );
  }
  return result;
}

/**
 * `ajv.compile(schema)` on first use. Compiling every operation of both documents took 0.4 s, paid by
 * every process that checks one request (the simulator's start, `validate --contract full`).
 */
function compiled(ajv: Ajv2020, schema: Json): Validator {
  let validate: ValidateFunction | undefined;
  return () => {
    validate ??= ajv.compile(schema);
    return validate;
  };
}

const listed = (value: unknown): Json[] => (Array.isArray(value) ? value : []);

/** A query string's values as its parameters' schemas read them: a number typed as a number, as a server decodes it. */
function queryValues(query: Readonly<Record<string, string>>, numbers = new Set<string>()): Json {
  return Object.fromEntries(
    Object.entries(query).map(([name, value]) => [
      name,
      numbers.has(name) && /^-?\d+(\.\d+)?$/.test(value) ? Number(value) : value,
    ]),
  );
}

/** An object of the document with its `$ref` followed, and the ajv reference of where it is. */
function resolve(document: Json, value: Json, where: string): [Json, string] {
  const ref = typeof value.$ref === "string" ? value.$ref : undefined;
  if (!ref?.startsWith("#/")) return [value, where];
  const found = ref
    .slice(2)
    .split("/")
    .reduce<unknown>(
      (node, step) => (node as Json | undefined)?.[step.replace(/~1/g, "/").replace(/~0/g, "~")],
      document,
    );
  return [found as Json, `${where.split("#")[0]}${ref}`];
}

/** A JSON pointer step, escaped and made safe in a URI fragment. */
const pointer = (step: string) => encodeURIComponent(step.replace(/~/g, "~0").replace(/\//g, "~1"));

function issuesOf(validate: ValidateFunction | undefined, value: unknown): ContractIssue[] {
  if (!validate || validate(value)) return [];
  const errors = (validate.errors ?? []).filter((error, _, all) => !outweighed(error, all));
  const issues: ContractIssue[] = [];
  const seen = new Set<string>();
  for (const error of errors) {
    const issue = issueOf(error);
    const key = JSON.stringify(issue);
    if (seen.has(key)) continue;
    seen.add(key);
    issues.push(issue);
  }
  return issues;
}

/**
 * Whether an error says less than others do: a branch summary ("must match a schema in oneOf") with
 * errors beneath it, or, inside such a branching, a branch that was not meant (`settings: must be
 * null` beside the errors of the object branch).
 */
function outweighed(error: ErrorObject, all: readonly ErrorObject[]): boolean {
  const deeper = (branching: ErrorObject) =>
    all.some((e) => e.instancePath.startsWith(`${branching.instancePath}/`) && !SUMMARIES.has(e.keyword));
  if (SUMMARIES.has(error.keyword))
    return (
      deeper(error) ||
      all.some(
        (e) =>
          e !== error &&
          e.instancePath === error.instancePath &&
          !SUMMARIES.has(e.keyword) &&
          !MISMATCHES.has(e.keyword),
      )
    );
  if (!MISMATCHES.has(error.keyword)) return false;
  return all.some(
    (branching) =>
      SUMMARIES.has(branching.keyword) &&
      branching.instancePath === error.instancePath &&
      error.schemaPath.startsWith(branching.schemaPath) &&
      deeper(branching),
  );
}

/** Keywords that say a value is of another kind altogether: a branch that was not meant. */
const MISMATCHES = new Set(["type", "const", "enum"]);

const SUMMARIES = new Set(["oneOf", "anyOf", "if", "not"]);

/** An ajv error in the words validate prints: the field it is about, and what is wanted there. */
function issueOf(error: ErrorObject): ContractIssue {
  const path = error.instancePath
    .split("/")
    .slice(1)
    .map((step) => step.replace(/~1/g, "/").replace(/~0/g, "~"))
    .map((step) => (/^\d+$/.test(step) ? Number(step) : step));
  const params = error.params as Record<string, unknown>;
  switch (error.keyword) {
    case "required":
      return { path: [...path, String(params.missingProperty)], message: "is required" };
    case "additionalProperties":
      return {
        path: [...path, String(params.additionalProperty)],
        message: "is not a field of this contract",
      };
    case "maximum":
      return { path, message: `must be at most ${params.limit}` };
    case "minimum":
      return { path, message: `must be at least ${params.limit}` };
    case "maxItems":
      return { path, message: `must have at most ${params.limit} items` };
    case "minItems":
      return { path, message: `must have at least ${params.limit} item${params.limit === 1 ? "" : "s"}` };
    case "maxLength":
      return { path, message: `must be at most ${params.limit} characters` };
    case "minLength":
      return { path, message: `must be at least ${params.limit} character${params.limit === 1 ? "" : "s"}` };
    case "enum":
      return {
        path,
        message: `must be one of ${(params.allowedValues as unknown[]).map(String).join(", ")}`,
      };
    case "const":
      return { path, message: `must be ${String(params.allowedValue)}` };
    case "discriminator":
      return {
        path: [...path, String(params.tag)],
        message: `${JSON.stringify(params.tagValue)} is not a ${String(params.tag)} of this contract`,
      };
    case "format":
      return { path, message: `must be ${FORMATS[String(params.format)] ?? `a ${String(params.format)}`}` };
    case "pattern":
      return {
        path,
        message:
          params.pattern === OBJECT_ID
            ? "must be an id of 24 hexadecimal characters"
            : `must match ${String(params.pattern)}`,
      };
    case "uniqueItems":
      return { path, message: "must not list an item twice" };
    default:
      return { path, message: error.message ?? `breaks ${error.keyword}` };
  }
}

const OBJECT_ID = "^[0-9a-fA-F]{24}$";

const FORMATS: Record<string, string> = {
  "date-time": "an ISO-8601 date-time with a zone, like 2027-06-30T00:00:00Z",
  uuid: "a UUID",
  hostname: "a host name",
};

/** `a.b[0].c` for an issue's path, as the platforms write it in messages: `a.b.0.c`. */
export const dottedPath = (path: readonly (string | number)[]): string => path.map(String).join(".");
