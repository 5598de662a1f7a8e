import { soakSuite } from "./helpers/soak/suite.js";

/**
 * The fault soak on the Kubernetes store, the fake API server's (test/helpers/soak/suite.ts); a file of
 * its own to run beside the other.
 */
soakSuite(
  "the fault soak on the Kubernetes store (the fake API server)",
  "kubernetes",
  "test/fault-soak-kubernetes.test.ts",
);
