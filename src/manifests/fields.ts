import { z } from "zod";
import { hasUnsafe } from "../escape.js";
import { nearest } from "./suggest.js";

/**
 * Field schemas shared by the kinds, and the Kubernetes-style envelope every manifest has. Messages
 * are written for the person who edits the YAML.
 */

export const API_VERSION = "driftless/v1";

/**
 * zod skips a refinement when what it refines has problems of its own (an item of a list, a field of a
 * mapping); these run it anyway, whenever the value is a list or a mapping, so that a repeated key or a
 * rule between fields shows beside those problems in the same run. A refinement given one of them reads
 * values that may be of any type.
 */
export const EVEN_WITH_ITEM_PROBLEMS = {
  when: (payload: { value: unknown }) => Array.isArray(payload.value),
};
export const EVEN_WITH_FIELD_PROBLEMS = { when: (payload: { value: unknown }) => isMapping(payload.value) };

export const isMapping = (value: unknown): value is Record<string, unknown> =>
  typeof value === "object" && value !== null && !Array.isArray(value);

/** The string at `field` of a list item that may be broken; undefined when it is not a string. */
export const stringField =
  (field: string) =>
  (item: unknown): string | undefined => {
    const value = isMapping(item) ? item[field] : undefined;
    return typeof value === "string" ? value : undefined;
  };

// guid, not uuid: the platform's ids need not carry an RFC 9562 version nibble to be valid ids.
export const Uuid = z.guid({ error: "must be a UUID, like 2e7d4b18-6c3a-4f95-a0b1-c2d3e4f5a6b7" });

export const Text = z.string();

export const NonEmpty = z.string().min(1, { error: "must not be empty" });

/**
 * An id the API puts in a URL path (dashboard, alert), of a format the API does not show (docs/platform-apis.md#id-formats). `.` and
 * `..` would be read as path steps by a server or proxy and address another endpoint.
 */
export const PathId = NonEmpty.refine((id) => id !== "." && id !== "..", {
  error: "must be an id, not . or .. (it becomes a step of the request's URL path)",
}).refine((id) => !hasUnsafe(id), {
  error:
    "must not hold control characters or lone surrogates (it becomes part of the request's URL path and of the plan reviewers read)",
});

/** An integer in [min, max]; the API types many settings as integers, so 1.5 is an error, not 1. */
export function Int(min = 0, max = Number.MAX_SAFE_INTEGER) {
  const range = max === Number.MAX_SAFE_INTEGER ? `>= ${min}` : `between ${min} and ${max}`;
  return z
    .int({ error: `must be an integer ${range}` })
    .min(min, { error: `must be an integer ${range}` })
    .max(max, { error: `must be an integer ${range}` });
}

export const Bool = z.boolean({ error: "must be true or false" });

/** Names follow Kubernetes' DNS subdomain rule, so they are safe in metric labels and file names. */
export const ManifestName = z
  .string({ error: "must be a string" })
  .max(253, { error: "must be at most 253 characters" })
  .regex(/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/, {
    error: "must be lower-case letters, digits, '-' or '.', starting and ending with a letter or digit",
  });

/**
 * Kubernetes' label key rule: an optional DNS-subdomain prefix and `/`, then a name of at most 63
 * characters. It also keeps out keys that YAML reads from something other than a string (null, `[a]`).
 */
export const LabelKey = z
  .string()
  .max(253 + 1 + 63, { error: "label keys must be at most 317 characters" })
  .regex(/^(?:[a-z0-9](?:[-a-z0-9.]*[a-z0-9])?\/)?[A-Za-z0-9](?:[-A-Za-z0-9_.]{0,61}[A-Za-z0-9])?$/, {
    error:
      "label keys are an optional DNS prefix and '/', then up to 63 letters, digits, '-', '_' or '.', starting and ending with a letter or digit",
  });

/** The annotations driftless reads; another key under `driftless/` is a typo, and an error. */
export const DRIFTLESS_ANNOTATIONS = {
  /** "true": nothing is sent for this resource (status Suspended); polls go on. */
  suspend: "driftless/suspend",
  /** The manifest name this resource had before a rename, for an endpoint whose id is not known yet. */
  previousName: "driftless/previous-name",
  /** "report": a drift found by a read is reported and left; "correct" (the default): put back. */
  drift: "driftless/drift",
  /**
   * What happens to the object when the manifest leaves git: "delete" (the default for an object
   * driftless created) or "orphan" (left as it is; the default for one it adopted by id).
   */
  deletionPolicy: "driftless/deletion-policy",
} as const;

const KNOWN_ANNOTATIONS: readonly string[] = Object.values(DRIFTLESS_ANNOTATIONS);

/** What validate says of a `driftless/` key that is none of DRIFTLESS_ANNOTATIONS. */
export function unknownAnnotation(key: string): string {
  const near = nearest(key, KNOWN_ANNOTATIONS);
  const known = `known: ${KNOWN_ANNOTATIONS.join(", ")}`;
  return near
    ? `unknown driftless annotation; did you mean ${near}? (${known})`
    : `unknown driftless annotation; ${known}`;
}

export const Annotations = z
  .record(LabelKey, z.string({ error: "annotation values must be strings" }))
  .superRefine((annotations, ctx) => {
    for (const [key, value] of Object.entries(annotations)) {
      if (key.startsWith("driftless/") && !KNOWN_ANNOTATIONS.includes(key)) {
        ctx.addIssue({ code: "custom", path: [key], message: unknownAnnotation(key) });
      }
      if (key === DRIFTLESS_ANNOTATIONS.suspend && value !== "true" && value !== "false") {
        ctx.addIssue({ code: "custom", path: [key], message: 'must be "true" or "false"' });
      }
      if (key === DRIFTLESS_ANNOTATIONS.drift && value !== "report" && value !== "correct") {
        ctx.addIssue({ code: "custom", path: [key], message: 'must be "report" or "correct"' });
      }
      if (key === DRIFTLESS_ANNOTATIONS.deletionPolicy && value !== "delete" && value !== "orphan") {
        ctx.addIssue({ code: "custom", path: [key], message: 'must be "delete" or "orphan"' });
      }
      if (key === DRIFTLESS_ANNOTATIONS.previousName && !ManifestName.safeParse(value).success) {
        ctx.addIssue({ code: "custom", path: [key], message: "must be a manifest name" });
      }
    }
  }, EVEN_WITH_FIELD_PROBLEMS);

export const Metadata = z.strictObject({
  name: ManifestName,
  labels: z.record(LabelKey, z.string({ error: "label values must be strings" })).optional(),
  annotations: Annotations.optional(),
});
export type Metadata = z.infer<typeof Metadata>;

/** The envelope of one kind: `apiVersion: driftless/v1`, `kind`, `metadata`, `spec`. */
export function manifestDocument<K extends string, S extends z.ZodType>(kind: K, spec: S) {
  return z
    .strictObject({
      apiVersion: z.literal(API_VERSION, { error: `must be ${API_VERSION}` }),
      kind: z.literal(kind),
      metadata: Metadata,
      spec,
    })
    .meta({ title: kind });
}

/**
 * `list` with a unique key per item: each repeat is reported at its index (and `field`), beside the
 * items' own problems. `keyOf` reads an item that may be broken: undefined when it has no key.
 */
export function uniqueIn<S extends z.ZodArray>(
  list: S,
  keyOf: (item: unknown) => string | undefined,
  describe: (key: string) => string,
  field?: string,
): S {
  return list.superRefine((items, ctx) => {
    const seen = new Set<string>();
    items.forEach((item, index) => {
      const key = keyOf(item);
      if (key === undefined) return;
      if (seen.has(key)) {
        ctx.addIssue({ code: "custom", message: describe(key), path: field ? [index, field] : [index] });
      }
      seen.add(key);
    });
  }, EVEN_WITH_ITEM_PROBLEMS);
}
