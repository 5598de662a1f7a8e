import { randomBytes } from "node:crypto";

/** The observability API's ids: 24 hexadecimal digits (a database object id). */
export const OBJECT_ID = /^[0-9a-fA-F]{24}$/;

/** A new id in the platform's 24-hex-digit style: seconds since the epoch, then random bytes. */
export function newObjectId(): string {
  const seconds = Math.floor(Date.now() / 1000)
    .toString(16)
    .padStart(8, "0");
  return `${seconds}${randomBytes(8).toString("hex")}`;
}
