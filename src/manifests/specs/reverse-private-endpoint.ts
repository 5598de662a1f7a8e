import { z } from "zod";
import { manifestDocument, NonEmpty, Uuid } from "../fields.js";

export const ENDPOINT_TYPES = [
  "VPC_ENDPOINT_SERVICE",
  "VPC_RESOURCE",
  "MSK_MULTI_VPC",
  "GCP_PSC_SERVICE_ATTACHMENT",
] as const;
export type EndpointType = (typeof ENDPOINT_TYPES)[number];

const common = {
  organizationId: Uuid,
  serviceId: Uuid,
  /** Adopt an endpoint that already exists instead of creating one. */
  id: Uuid.optional(),
  description: z.string().max(255, { error: "must be at most 255 characters" }),
};

/**
 * POST .../datapipesReversePrivateEndpoints, once. Each type takes exactly its own fields: a field of
 * another type is an error, not silently sent. The API does not say what VPC_ENDPOINT_SERVICE
 * requires; an endpoint service endpoint without the service's name cannot work, so it is required.
 * GCP_PSC_SERVICE_ATTACHMENT is the published contract's only.
 */
export const ReversePrivateEndpointSpec = z.discriminatedUnion(
  "type",
  [
    z.strictObject({
      ...common,
      type: z.literal("VPC_ENDPOINT_SERVICE"),
      vpcEndpointServiceName: NonEmpty,
    }),
    z.strictObject({
      ...common,
      type: z.literal("VPC_RESOURCE"),
      vpcResourceConfigurationId: NonEmpty,
      vpcResourceShareArn: NonEmpty,
    }),
    z.strictObject({
      ...common,
      type: z.literal("MSK_MULTI_VPC"),
      mskClusterArn: NonEmpty,
      mskAuthentication: z.enum(["SASL_IAM", "SASL_SCRAM"], { error: "must be SASL_IAM or SASL_SCRAM" }),
    }),
    z.strictObject({
      ...common,
      type: z.literal("GCP_PSC_SERVICE_ATTACHMENT"),
      /** projects/PROJECT/regions/REGION/serviceAttachments/NAME */
      gcpServiceAttachment: NonEmpty,
    }),
  ],
  { error: `must be one of ${ENDPOINT_TYPES.join(", ")}` },
);
export type ReversePrivateEndpointSpec = z.infer<typeof ReversePrivateEndpointSpec>;

export const ReversePrivateEndpoint = manifestDocument("ReversePrivateEndpoint", ReversePrivateEndpointSpec);
export type ReversePrivateEndpoint = z.infer<typeof ReversePrivateEndpoint>;
