import { BlockList, isIP } from "node:net";
import type { Group, ObservabilityDeps } from "./handler-group.js";
import { badRequest, notFound, Rejection } from "./http.js";
import type { PlatformState, Webhook } from "./model.js";
import { newObjectId } from "./object-id.js";
import { page } from "./paging.js";

/**
 * Webhooks, the channels alerts notify (the published contract only): paged list, create, replace and
 * delete. Headers and query parameters, which may hold credentials, are taken and never answered, so
 * the simulator does not keep them (docs/platform-apis.md#webhooks).
 */

type WebhookInput = {
  name: string;
  service: Webhook["service"];
  url: string;
  description?: string;
  body?: string;
};

/** Addresses a webhook may not call: this host, private networks, link-local and unspecified ones. */
const RESERVED = new BlockList();
for (const [network, prefix] of [
  ["0.0.0.0", 8],
  ["10.0.0.0", 8],
  ["100.64.0.0", 10],
  ["127.0.0.0", 8],
  ["169.254.0.0", 16],
  ["172.16.0.0", 12],
  ["192.168.0.0", 16],
] as const)
  RESERVED.addSubnet(network, prefix, "ipv4");
for (const [network, prefix] of [
  ["::", 127],
  ["fc00::", 7],
  ["fe80::", 10],
] as const)
  RESERVED.addSubnet(network, prefix, "ipv6");

/** Why the platform refuses a webhook's URL; undefined when it takes it. */
function urlProblem({ url, service }: WebhookInput): string | undefined {
  let parsed: URL;
  try {
    parsed = new URL(url);
  } catch {
    return "Invalid URL";
  }
  if (parsed.protocol !== "http:" && parsed.protocol !== "https:") return "URL must use http or https";
  const host = parsed.hostname.toLowerCase().replace(/^\[|\]$/g, "");
  if (service === "slack" && host !== "slack.com" && !host.endsWith(".slack.com"))
    return "Slack webhook URLs must be on slack.com";
  const family = isIP(host);
  const local = host === "localhost" || host.endsWith(".localhost");
  if (local || (family !== 0 && RESERVED.check(host, family === 4 ? "ipv4" : "ipv6")))
    return "URL must not point to a local, private or reserved address";
  return undefined;
}

/** A webhook as answered: never headers or queryParams, and its body only for `generic`. */
function webhookAnswer({ body, ...webhook }: Webhook) {
  return webhook.service === "generic" && body !== undefined ? { ...webhook, body } : webhook;
}

/**
 * The webhook a create or replace body makes of `stored` (none: a new one). Throws a 400 Rejection for
 * a URL the platform refuses or a name its service already has in the team.
 */
function written(state: PlatformState, input: WebhookInput, stored?: Webhook): Webhook {
  const problem = urlProblem(input);
  if (problem) throw badRequest(problem);
  const name = input.name.trim();
  if (name === "") throw badRequest("Body validation failed: name: must not be blank");
  const taken = state.webhooks.some((w) => w !== stored && w.service === input.service && w.name === name);
  if (taken) throw badRequest("A webhook with this service and name already exists");
  const now = new Date().toISOString();
  return {
    id: stored?.id ?? newObjectId(),
    name,
    service: input.service,
    url: input.url,
    // Left out of a replace, description and body are cleared.
    ...(input.description === undefined ? {} : { description: input.description }),
    ...(input.body === undefined ? {} : { body: input.body }),
    createdAt: stored?.createdAt ?? now,
    updatedAt: now,
  };
}

export function webhookHandlers({
  state,
}: ObservabilityDeps): Group<"listWebhooks" | "createWebhook" | "putWebhook" | "deleteWebhook"> {
  const find = (id: string | undefined) => {
    const webhook = state.webhooks.find((w) => w.id === id);
    if (!webhook) throw notFound(`webhook ${id} does not exist`);
    return webhook;
  };
  const answer = (webhook: Webhook) => ({ status: 200, body: { data: webhookAnswer(webhook) } });
  return {
    listWebhooks({ query }) {
      return page(state.webhooks, query, webhookAnswer);
    },
    createWebhook({ body }) {
      const webhook = written(state, body as WebhookInput);
      state.webhooks.push(webhook);
      return answer(webhook);
    },
    putWebhook({ params, body }) {
      const stored = find(params.id);
      const webhook = written(state, body as WebhookInput, stored);
      state.webhooks.splice(state.webhooks.indexOf(stored), 1, webhook);
      return answer(webhook);
    },
    deleteWebhook({ params }) {
      const webhook = find(params.id);
      const users = state.alerts.filter((a) => a.channel.webhookId === webhook.id).map((a) => a.id);
      if (users.length > 0) {
        throw new Rejection(
          409,
          "CONFLICT",
          `Webhook is the channel of alert ${users.join(", ")}: delete or re-point the alerts first`,
        );
      }
      state.webhooks.splice(state.webhooks.indexOf(webhook), 1);
      return { status: 200, body: {} };
    },
  };
}
