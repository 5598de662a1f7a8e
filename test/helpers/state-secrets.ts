import { gunzipSync } from "node:zlib";
import {
  DEFAULT_SECRET_NAME,
  META_KEY,
  SHARD_COUNT,
  SHARD_KEY,
  shardName,
} from "../../src/state/kubernetes-store.js";
import type { State } from "../../src/state/store.js";
import type { FakeKubernetes } from "./fake-kubernetes.js";

/**
 * The state the Kubernetes store's Secrets hold on `fake`, read as an operator would with kubectl: the
 * meta Secret's top-level fields, then the records of every shard. Undefined while there is no meta.
 */
export function stateInSecrets(
  fake: FakeKubernetes,
  namespace: string,
  name = DEFAULT_SECRET_NAME,
): State | undefined {
  const meta = fake.get("secrets", namespace, name)?.data?.[META_KEY];
  if (!meta) return undefined;
  const state = { ...JSON.parse(Buffer.from(meta, "base64").toString("utf8")), resources: {} } as State;
  for (let index = 0; index < SHARD_COUNT; index++) {
    const data = fake.get("secrets", namespace, shardName(name, index))?.data?.[SHARD_KEY];
    if (data)
      Object.assign(state.resources, JSON.parse(gunzipSync(Buffer.from(data, "base64")).toString("utf8")));
  }
  return state;
}
