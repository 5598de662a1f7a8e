import { describe, expect, it } from "vitest";
import { Config } from "../src/config.js";
import { type CommandName, inputOf, SETTINGS, settingsOf } from "../src/settings.js";
import { driftless } from "./helpers/cli.js";

/** The settings table: what each command's --help, flags and environment make of it. */

describe("the settings table", () => {
  it.each(["validate", "plan", "apply", "run"] satisfies CommandName[])(
    "shows every setting of %s in its --help, with its variable",
    (command) => {
      const result = driftless([command, "--help"]);

      for (const [, setting] of settingsOf(SETTINGS, command)) expect(result.stdout).toContain(setting.env);
      expect(result.code).toBe(0);
    },
  );

  it.each(["validate", "apply", "status", "reconcile"] as const)(
    "offers %s only the outputs it prints: text and json, not plan's markdown",
    (command) => {
      const help = driftless([command, "--help"]);
      const markdown = driftless([command, "-o", "markdown"]);

      const output = /^ {2}-o, --output <format>.*?\)\n(?= {2}-)/ms.exec(help.stdout)?.[0] ?? "";
      expect(output.replace(/\s+/g, " ")).toMatch(
        /^ -o, --output <format> text or json: .*\(choices: "text", "json"\) $/,
      );
      expect(help.stdout).not.toContain("markdown");
      expect(markdown.stderr).toContain("Allowed choices are text, json.");
      expect(markdown.code).toBe(1);
    },
  );

  it("offers plan markdown too", () => {
    const help = driftless(["plan", "--help"]);

    expect(help.stdout.replace(/\s+/g, " ")).toContain(
      "-o, --output <format> text, json or markdown: a readable report, one JSON document, or a pull-request comment",
    );
    expect(help.stdout.replace(/\s+/g, " ")).toContain('(choices: "text", "json", "markdown")');
  });

  it("gives the settings other rooms read their defaults", () => {
    const config = Config.parse({});

    expect(config.maxServerWaitSeconds).toBe(300);
    expect(config.stateKeyFile).toBeUndefined();
    expect(config.allowInsecure).toBe(false);
    expect(config.statusToken).toBeUndefined();
  });

  it("takes a flag over its variable, and a credential's _FILE over its value", () => {
    const input = inputOf(
      SETTINGS,
      { stateKeyFile: "/keys/from-flag", maxServerWait: "60" },
      {
        DRIFTLESS_STATE_KEY_FILE: "/keys/from-env",
        DRIFTLESS_STATUS_TOKEN: "plain",
        DRIFTLESS_STATUS_TOKEN_FILE: "/run/status-token",
      },
    );

    const config = Config.parse(input);

    expect(config.stateKeyFile).toBe("/keys/from-flag");
    expect(config.maxServerWaitSeconds).toBe(60);
    expect(config.statusToken).toEqual({ file: "/run/status-token" });
  });

  it("names the variable of a bad number or a bad boolean, and exits 1", () => {
    const wait = driftless(["plan", "examples"], { DRIFTLESS_MAX_SERVER_WAIT: "soon" });
    const elect = driftless(["run"], { DRIFTLESS_LEADER_ELECT: "maybe" });

    expect(wait.stderr).toBe(
      "driftless: invalid settings: DRIFTLESS_MAX_SERVER_WAIT: must be a number of seconds\n",
    );
    expect(wait.code).toBe(1);
    expect(elect.stderr).toBe("driftless: invalid settings: DRIFTLESS_LEADER_ELECT: must be true or false\n");
    expect(elect.code).toBe(1);
  });
});
