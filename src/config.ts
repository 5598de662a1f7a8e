import { isIPv4 } from "node:net";
import type { z } from "zod";
import { ConfigError } from "./errors.js";
import { SETTINGS, SIMULATOR_SETTINGS, schemaOf } from "./settings.js";

/** An `http://` platform URL whose host is not this machine: its credentials would travel in clear. */
export type CleartextUrl = { field: "managementUrl" | "observabilityUrl"; env: string; url: string };

/** True for 127.0.0.0/8, ::1 and localhost: traffic that never leaves the machine. */
export function isLoopbackHost(hostname: string): boolean {
  const host = hostname.toLowerCase().replace(/\.$/, "");
  if (host === "localhost" || host === "[::1]") return true;
  return isIPv4(host) && host.split(".")[0] === "127";
}

/** The platform URLs of `settings` that would send credentials in clear over a network. */
export function cleartextUrls(settings: {
  managementUrl?: string;
  observabilityUrl?: string;
}): CleartextUrl[] {
  return (["managementUrl", "observabilityUrl"] as const).flatMap((field) => {
    const url = settings[field];
    if (!url) return [];
    const parsed = parseUrl(url);
    if (parsed?.protocol !== "http:" || isLoopbackHost(parsed.hostname)) return [];
    return [{ field, env: SETTINGS[field].env, url }];
  });
}

function parseUrl(url: string): URL | undefined {
  try {
    return new URL(url);
  } catch {
    return undefined;
  }
}

/**
 * Everything validate, plan, apply and run need, from flags and environment variables (flags win);
 * each field's variable, flag, default and help are in SETTINGS (src/settings.ts). An `http://`
 * platform URL to another machine is refused unless DRIFTLESS_ALLOW_INSECURE is true.
 */
export const Config = schemaOf(SETTINGS).superRefine((config, context) => {
  if (config.allowInsecure) return;
  for (const { field, url } of cleartextUrls(config)) {
    context.addIssue({
      code: "custom",
      path: [field],
      message: `${url} would send the platform credentials in clear: use https://, or set ${SETTINGS.allowInsecure.env}=true to accept that`,
    });
  }
});
export type Config = z.infer<typeof Config>;

/** The settings that choose the platform: its two URLs, or the built-in simulator. */
export type PlatformUrls = { managementUrl?: string; observabilityUrl?: string; simulator?: "builtin" };

/**
 * What driftless reconciles, as /status, plans and apply name it: "simulator" while the built-in
 * simulator stands in for the platform (no URL set), else the management API's origin (no path, no
 * credentials: a URL may carry user:password).
 */
export function platformOf(config: PlatformUrls): string {
  return config.managementUrl ? new URL(config.managementUrl).origin : SIMULATOR_PLATFORM;
}

/** How /status, plans and apply name the built-in simulator standing in for the platform. */
export const SIMULATOR_PLATFORM = "simulator";

/**
 * Throws ConfigError when DRIFTLESS_SIMULATOR=builtin is set beside a platform URL (which did the user
 * mean?), or when one platform API URL is set without the other: the built-in simulator
 * stands in for the platform only as a whole (both unset), never for half of it, which would show a
 * real platform's resources as Synced on a simulated one.
 */
export function checkPlatformUrls(config: PlatformUrls): void {
  const management = SETTINGS.managementUrl.env;
  const observability = SETTINGS.observabilityUrl.env;
  if (config.simulator === "builtin" && (config.managementUrl || config.observabilityUrl)) {
    const set = config.managementUrl ? management : observability;
    throw new ConfigError(
      `${SETTINGS.simulator.env}=builtin and ${set} are both set: unset ${SETTINGS.simulator.env} to use the real platform, or both URLs to use the built-in simulator`,
    );
  }
  if (Boolean(config.managementUrl) === Boolean(config.observabilityUrl)) return;
  const [set, unset] = config.managementUrl ? [management, observability] : [observability, management];
  throw new ConfigError(
    `${set} is set but ${unset} is unset: set both ${management} and ${observability} (each with its credentials) to use a real platform, or neither to use the built-in simulator`,
  );
}

/** What `driftless simulator` needs; each field is described in SIMULATOR_SETTINGS. */
export const SimulatorConfig = schemaOf(SIMULATOR_SETTINGS);
export type SimulatorConfig = z.infer<typeof SimulatorConfig>;
