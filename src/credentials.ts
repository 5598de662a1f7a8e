/**
 * The credential fields of the manifests and requests. In a manifest they are secret references, never
 * plain text; in an answer they are never kept; in a log line they are redacted.
 */
export const CREDENTIAL_FIELDS = ["password", "secretKey", "accessKeyId", "connectionString"] as const;
