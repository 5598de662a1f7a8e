import { z } from "zod";
import { manifestDocument, NonEmpty, stringField, Text, Uuid, uniqueIn } from "../fields.js";

/** A private endpoint of the organization, as the organization update's `privateEndpoints.add` takes it. */
export const PrivateEndpoint = z.strictObject({
  id: NonEmpty,
  description: Text.optional(),
});
export type PrivateEndpoint = z.infer<typeof PrivateEndpoint>;

/**
 * PATCH /v1/organizations/{organizationId}. `privateEndpoints` is the desired list; driftless sends
 * add/remove and only ever removes entries it added itself.
 */
export const OrganizationSpec = z.strictObject({
  organizationId: Uuid,
  // Only the id is required: a team may manage the private endpoints alone.
  name: NonEmpty.optional(),
  privateEndpoints: uniqueIn(
    z.array(PrivateEndpoint),
    stringField("id"),
    (id) => `private endpoint ${id} is listed twice`,
    "id",
  ).optional(),
});
export type OrganizationSpec = z.infer<typeof OrganizationSpec>;

export const Organization = manifestDocument("Organization", OrganizationSpec);
export type Organization = z.infer<typeof Organization>;
