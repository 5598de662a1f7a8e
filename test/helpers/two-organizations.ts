import { mkdir, writeFile } from "node:fs/promises";
import { join } from "node:path";
import { defaultFixture, defaultIds, type FixtureInput } from "../../src/simulator/index.js";

/**
 * A platform with two organizations, production (the default fixture's) and staging, each with its own
 * management key: the simulator refuses each key on the other's organization (403), as the platform
 * does. Each organization also has a `ci` key for manifests to manage.
 */

const created = "2025-01-15T09:30:00Z";

export const production = {
  organizationId: defaultIds.organizationId,
  keyId: defaultIds.managementKeyId,
  keySecret: defaultIds.managementKeySecret,
  ciKeyId: defaultIds.ciDeployerKeyId,
} as const;

export const staging = {
  organizationId: "5b6c7d8e-9f0a-4b1c-8d2e-3f4a5b6c7d8e",
  serviceId: "6c7d8e9f-0a1b-4c2d-9e3f-4a5b6c7d8e9f",
  keyId: "7d8e9f0a-1b2c-4d3e-8f4a-5b6c7d8e9f0a",
  keySecret: "sim-staging-management-secret",
  ciKeyId: "8e9f0a1b-2c3d-4e4f-9a5b-6c7d8e9f0a1b",
} as const;

/** The default fixture plus the staging organization, its service and its two keys. */
export function twoOrganizations(): FixtureInput {
  const fixture = defaultFixture();
  return {
    ...fixture,
    organizations: [
      ...(fixture.organizations ?? []),
      {
        id: staging.organizationId,
        name: "Acme Staging",
        createdAt: created,
        privateEndpoints: [],
        byocConfig: [],
      },
    ],
    services: [
      ...(fixture.services ?? []),
      { id: staging.serviceId, organizationId: staging.organizationId, name: "staging" },
    ],
    keys: [
      ...(fixture.keys ?? []),
      {
        id: staging.keyId,
        organizationId: staging.organizationId,
        name: "driftless-staging",
        roles: ["admin"],
        keySuffix: "9f0a",
        createdAt: created,
        secret: staging.keySecret,
      },
      {
        id: staging.ciKeyId,
        organizationId: staging.organizationId,
        name: "ci-staging",
        roles: ["developer"],
        keySuffix: "0a1b",
        createdAt: created,
      },
    ],
  };
}

/** Writes `<organizationId>.key-id` / `.key-secret` for each organization given, as a mounted Secret. */
export async function writeCredentialsDir(
  dir: string,
  organizations: ReadonlyArray<{ organizationId: string; keyId: string; keySecret: string }>,
): Promise<string> {
  await mkdir(dir, { recursive: true });
  for (const o of organizations) {
    await writeFile(join(dir, `${o.organizationId}.key-id`), `${o.keyId}\n`);
    await writeFile(join(dir, `${o.organizationId}.key-secret`), `${o.keySecret}\n`);
  }
  return dir;
}

/** An ApiKey manifest renaming the `ci` key of `organization`. */
export const ciKey = (
  name: string,
  organization: { organizationId: string; ciKeyId: string },
  newName: string,
) => `apiVersion: driftless/v1
kind: ApiKey
metadata:
  name: ${name}
spec:
  organizationId: ${organization.organizationId}
  keyId: ${organization.ciKeyId}
  name: ${newName}
`;

/** The key id of a request's Basic Authorization header. */
export function keyIdOf(authorization: string | string[] | undefined): string | undefined {
  const value = Array.isArray(authorization) ? authorization[0] : authorization;
  if (!value?.startsWith("Basic ")) return undefined;
  return Buffer.from(value.slice(6), "base64").toString("utf8").split(":")[0];
}
