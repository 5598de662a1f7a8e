import { isIP } from "node:net";
import { z } from "zod";
import { Bool, manifestDocument, NonEmpty, Text, Uuid, uniqueIn } from "../fields.js";

export const KEY_ROLES = ["admin", "developer", "query_endpoints"] as const;
export const KeyRole = z.enum(KEY_ROLES, { error: `must be one of ${KEY_ROLES.join(", ")}` });
export type KeyRole = z.infer<typeof KeyRole>;

/** An IPv4/IPv6 address or CIDR block. The API does not show the format (docs/platform-apis.md#ip-access-list-format); these are what the console takes. */
export const IpSource = z.string({ error: "must be an IP address or CIDR block" }).refine(
  (value) => {
    const [address, prefix, ...rest] = value.split("/");
    if (rest.length > 0 || !address) return false;
    const family = isIP(address);
    if (family === 0) return false;
    if (prefix === undefined) return true;
    if (!/^\d{1,3}$/.test(prefix)) return false;
    return Number(prefix) <= (family === 4 ? 32 : 128);
  },
  { error: "must be an IP address or CIDR block, like 203.0.113.7 or 10.0.0.0/8" },
);

export const IpAccessEntry = z.strictObject({
  source: IpSource,
  description: Text.optional(),
});
export type IpAccessEntry = z.infer<typeof IpAccessEntry>;

const EXPIRE_AT =
  'must be an ISO-8601 date-time with a zone, like 2027-01-31T00:00:00Z, or null/"" for never';

/** ISO-8601 date-time with a zone; null or "" mean the key never expires (sent as null, which both contracts take). */
export const ExpireAt = z.union(
  [z.iso.datetime({ offset: true, error: EXPIRE_AT }), z.literal(""), z.null()],
  { error: EXPIRE_AT },
);

/**
 * PATCH /v1/organizations/{organizationId}/keys/{keyId}.
 *
 * `state` is the published contract's (docs/platform-apis.md#api-key-state): sent only when stated.
 *
 * `allowLockout` is driftless's own: without it, the engine refuses a change to the key driftless
 * itself uses that would expire it, drop `admin` or empty its ipAccessList.
 */
/** A file name under DRIFTLESS_KEY_SECRETS_DIR, or a Kubernetes Secret's name: one path step, no `..`. */
const TargetName = z
  .string({ error: "must be a name" })
  .max(253, { error: "must be at most 253 characters" })
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, {
    error: "must be lower-case letters, digits, '-' or '.', starting and ending with a letter or digit",
  });

/**
 * Where driftless writes the id and secret of a key it creates, before the create is sent: a Secret in
 * its own namespace (keys `keyId` and `keySecret`), or a file under DRIFTLESS_KEY_SECRETS_DIR (JSON
 * `{keyId, keySecret}`, mode 0600).
 */
export const SecretTarget = z.union(
  [z.strictObject({ kubernetesSecret: TargetName }), z.strictObject({ file: TargetName })],
  { error: "must be {kubernetesSecret: NAME} or {file: NAME}" },
);
export type SecretTarget = z.infer<typeof SecretTarget>;

export const ApiKeySpec = z
  .strictObject({
    organizationId: Uuid,
    /** The key's id (its path id): adopts an existing key. Absent: driftless creates the key. */
    keyId: Uuid.optional(),
    // Only the ids are required: a field left out is not managed (a PATCH leaves it as it is).
    name: NonEmpty.optional(),
    roles: uniqueIn(
      z.array(KeyRole, { error: "must be a list of roles" }).min(1, { error: "must hold at least one role" }),
      (role) => (typeof role === "string" ? role : undefined),
      (role) => `role ${role} is listed twice`,
    ).optional(),
    expireAt: ExpireAt.optional(),
    ipAccessList: z.array(IpAccessEntry).optional(),
    state: z.enum(["enabled", "disabled"], { error: "must be enabled or disabled" }).optional(),
    allowLockout: Bool.optional().meta({
      description:
        "Allow a change to driftless's own key that would expire it, drop admin or empty its ipAccessList.",
    }),
    secretTarget: SecretTarget.optional().meta({
      description:
        "Where driftless writes the id and secret of a key it creates (no keyId): a Kubernetes Secret or a file.",
    }),
  })
  .superRefine((spec, ctx) => {
    const issue = (path: string, message: string) => ctx.addIssue({ code: "custom", path: [path], message });
    if (spec.keyId !== undefined) {
      if (spec.secretTarget !== undefined)
        issue(
          "secretTarget",
          "is only for a key driftless creates (no keyId): an adopted key's secret is not driftless's to write",
        );
      return;
    }
    // A key driftless creates: it makes the key's id and secret and must put them somewhere first.
    if (spec.secretTarget === undefined)
      issue(
        "secretTarget",
        "is required to create a key (no keyId): where driftless writes the new key's id and secret",
      );
    if (spec.name === undefined) issue("name", "is required to create a key (no keyId)");
    if (spec.roles === undefined) issue("roles", "is required to create a key (no keyId)");
  });
export type ApiKeySpec = z.infer<typeof ApiKeySpec>;

export const ApiKey = manifestDocument("ApiKey", ApiKeySpec);
export type ApiKey = z.infer<typeof ApiKey>;
