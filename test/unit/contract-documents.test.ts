import { readFileSync } from "node:fs";
import { describe, expect, it } from "vitest";
import { parse } from "yaml";
import { readDocument } from "../../src/platform/contracts.js";

/** The contract documents are read by js-yaml for speed: it must read them exactly as the yaml library does. */
describe("the contract documents", () => {
  for (const contract of ["minimal", "full"] as const) {
    for (const file of ["management.yaml", "observability.yaml"]) {
      it(`reads ${contract}/${file} as the yaml library reads it`, () => {
        const text = readFileSync(new URL(`../../contracts/${contract}/${file}`, import.meta.url), "utf8");

        expect(readDocument(contract, file)).toStrictEqual(parse(text));
      });
    }
  }
});
