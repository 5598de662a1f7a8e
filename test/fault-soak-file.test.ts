import { soakSuite } from "./helpers/soak/suite.js";

/** The fault soak on the file store (test/helpers/soak/suite.ts); a file of its own to run beside the other. */
soakSuite("the fault soak on the file store", "file", "test/fault-soak-file.test.ts");
