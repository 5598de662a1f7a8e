import { describe, expect, it } from "vitest";
import { errorDetails } from "../../src/platform/http-answers.js";
import { redact, redactCutEdge } from "../../src/platform/redact.js";

/** Masking a request's secrets in what the platform says back, and reading an error answer's message. */

describe("redact", () => {
  it("rule: every occurrence of a secret is replaced by (secret)", () => {
    expect(redact("a hunter2 b hunter2", ["hunter2"])).toBe("a (secret) b (secret)");
  });

  it("rule: the JSON-escaped form of a secret is masked too", () => {
    const secret = 'quo"te\nline';

    expect(redact(`{"password":${JSON.stringify(secret)}}`, [secret])).toBe('{"password":"(secret)"}');
  });

  it("rule: the whitespace-collapsed form of a secret is masked too", () => {
    expect(redact("got ab cd here", ["ab \t cd"])).toBe("got (secret) here");
  });

  it("rule: a longer secret is masked before a shorter one it contains", () => {
    expect(redact("x longsecret y", ["long", "longsecret"])).toBe("x (secret) y");
  });

  it("rule: an empty secret masks nothing", () => {
    expect(redact("text", ["", "   "])).toBe("text");
  });
});

describe("redactCutEdge", () => {
  it("rule: a text ending in the first 4 or more characters of a secret has them masked", () => {
    expect(redactCutEdge("message ends with hunt", ["hunter2"])).toBe("message ends with (secret)");
  });

  it("rule: fewer than 4 characters say too little and are left", () => {
    expect(redactCutEdge("message ends with hun", ["hunter2"])).toBe("message ends with hun");
  });

  it("rule: the longest such piece of any secret, in any form, is masked", () => {
    expect(redactCutEdge('value "ab\\"cd', ['ab"cdef', "cdxx"])).toBe('value "(secret)');
  });

  it("rule: a piece inside the text, not at its end, is not an edge", () => {
    expect(redactCutEdge("hunt then more", ["hunter2"])).toBe("hunt then more");
  });
});

describe("errorDetails", () => {
  it("rule: the message is read from the management, observability and problem shapes", () => {
    expect(errorDetails(404, '{"status":404,"error":"gone","requestId":"r"}')).toEqual({
      message: "gone",
      requestId: "r",
    });
    expect(errorDetails(400, '{"message":"bad tile"}').message).toBe("bad tile");
    expect(errorDetails(422, '{"title":"Unprocessable","detail":"field x"}').message).toBe("field x");
  });

  it("rule: a body that is not JSON (plain text, an HTML page) is the message itself", () => {
    expect(errorDetails(403, "forbidden by\n  policy")).toEqual({ message: "forbidden by policy" });
    expect(errorDetails(400, `<html>${"x".repeat(5000)}</html>`).message.length).toBeLessThan(500);
  });

  it("rule: an empty body gives the status's reason phrase", () => {
    expect(errorDetails(503, "").message).toBe("Service Unavailable");
  });

  it("rule: the message is shown on one line, cut at 300 characters", () => {
    const message = errorDetails(500, `line one\n\n  line two ${"z".repeat(400)}`).message;

    expect(message.startsWith("line one line two z")).toBe(true);
    expect(message).toHaveLength(301);
    expect(message.endsWith("…")).toBe(true);
  });

  it("rule: secrets are masked before the whitespace is collapsed", () => {
    expect(errorDetails(400, "bad pass  word!", ["pass  word"]).message).toBe("bad (secret)!");
  });

  it("rule: a secret echoed as a JSON unicode escape is masked once the JSON is read", () => {
    expect(errorDetails(400, '{"message":"bad \\u0068unter2"}', ["hunter2"]).message).toBe("bad (secret)");
  });

  it("rule: a secret straddling the cut leaves no piece of 4 characters or more", () => {
    const secret = "Sup3rS3cretValue";
    const text = `${"x".repeat(295)}${secret.slice(0, 9)}`;

    const message = errorDetails(400, text, [secret]).message;

    expect(message).toBe(`${"x".repeat(295)}(secret)…`);
  });
});
