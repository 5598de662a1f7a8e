import { type Kind, type Manifest, ManifestDocument } from "../../src/manifests/manifest.js";
import { defaultIds as ids } from "../../src/simulator/index.js";

/** Options of mskEndpoint; each default is the orders team's cluster. */
export type MskEndpointOptions = {
  description?: string;
  /** The cluster's name in its ARN. */
  cluster?: string;
  authentication?: "SASL_IAM" | "SASL_SCRAM";
  annotations?: Record<string, string>;
  /** More spec lines, indented as spec fields. */
  extra?: string;
};

/** The YAML of a ReversePrivateEndpoint to an MSK cluster, in the simulator's default organization and service. */
export function mskEndpoint(name: string, options: MskEndpointOptions = {}): string {
  const { description = "orders MSK", cluster = "orders", authentication = "SASL_IAM" } = options;
  const annotations = Object.entries(options.annotations ?? {});
  return `apiVersion: driftless/v1
kind: ReversePrivateEndpoint
metadata:
  name: ${name}
${annotations.length > 0 ? `  annotations:\n${annotations.map(([k, v]) => `    ${k}: ${v}\n`).join("")}` : ""}spec:
  organizationId: ${ids.organizationId}
  serviceId: ${ids.serviceId}
  description: ${description}
  type: MSK_MULTI_VPC
  mskClusterArn: arn:aws:kafka:eu-west-1:111122223333:cluster/${cluster}/abc
  mskAuthentication: ${authentication}
${options.extra ?? ""}`;
}

/**
 * A loaded manifest built in code, as the schema of its kind reads `spec` (it throws on a spec the
 * schema refuses): for tests of what the engine does with one manifest, without a file.
 */
export function manifestOf(kind: Kind, name: string, spec: Record<string, unknown>): Manifest {
  const document = ManifestDocument.parse({ apiVersion: "driftless/v1", kind, metadata: { name }, spec });
  const position = { file: `${name}.yaml`, line: 1, col: 1 };
  // The document's kind and spec belong together: the schema read them as one.
  return {
    kind: document.kind,
    name,
    labels: {},
    annotations: {},
    spec: document.spec,
    position,
  } as Manifest;
}
/** The YAML of the ApiKey "ci-deployer" that adopts the simulator's CI key as `name`; `extra`: more spec lines. */
export const ciDeployerKey = (name: string, extra = "") => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ci-deployer
spec:
  organizationId: ${ids.organizationId}
  keyId: ${ids.ciDeployerKeyId}
  name: ${name}
${extra}`;
