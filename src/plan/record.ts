import type { Kind } from "../manifests/manifest.js";
import type { ResourceRecord } from "../state/store.js";
import { isPlainObject, stored } from "./values.js";

/**
 * A resource's record once its request succeeded: what was sent as the desired state (secrets as
 * hashes), when, and what the platform answered (only an object answer is kept). Fields of the record
 * it had (tile ids, owned entries, ...) are kept unless `fields` sets them.
 */
export function appliedRecord(
  resource: { kind: Kind; name: string; record: ResourceRecord | undefined },
  sent: object,
  at: string,
  answer: unknown,
  fields: Partial<ResourceRecord> = {},
): ResourceRecord {
  const { kind, name, record } = resource;
  return {
    ...record,
    kind,
    name,
    applied: stored(sent),
    appliedAt: at,
    observed: isPlainObject(answer) ? answer : undefined,
    ...fields,
  };
}
