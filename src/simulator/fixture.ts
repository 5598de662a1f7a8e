import { readFileSync } from "node:fs";
import { parse } from "yaml";
import type { z } from "zod";
import { ConfigError } from "../errors.js";
import { Fixture, type FixtureInput } from "./model.js";

/**
 * A fixture from a YAML file of the Fixture shape. Throws ConfigError naming the file and every
 * problem (unreadable, not YAML, a field of the wrong shape).
 */
export function loadFixture(file: string): Fixture {
  let text: string;
  try {
    text = readFileSync(file, "utf8");
  } catch (error) {
    throw new ConfigError(`cannot read simulator fixture ${file}`, { cause: error });
  }
  let document: unknown;
  try {
    document = parse(text);
  } catch (error) {
    throw new ConfigError(`simulator fixture ${file} is not valid YAML: ${(error as Error).message}`, {
      cause: error,
    });
  }
  return parseFixture(document ?? {}, file);
}

/** Every problem of a platform that does not fit the Fixture shape, as `path: message; ...`. */
export function fixtureProblems(error: z.ZodError): string {
  return error.issues.map((issue) => `${issue.path.join(".")}: ${issue.message}`).join("; ");
}

/** Validates a fixture given as data; the result is a fresh copy the simulator may change. */
export function parseFixture(input: FixtureInput | unknown, origin = "fixture"): Fixture {
  const parsed = Fixture.safeParse(input);
  if (parsed.success) return parsed.data;
  throw new ConfigError(`invalid simulator fixture ${origin}: ${fixtureProblems(parsed.error)}`);
}
