/**
 * Task tokens: opaque, unguessable, one per task attempt. The local format lets the service
 * tell a malformed token (InvalidToken) from a well-formed one it no longer knows
 * (TaskTimedOut: completed, timed out, stopped, or minted by an earlier process).
 */
import { randomBytes } from "node:crypto";

const PREFIX = "LocalTaskToken-";
const FORMAT = /^LocalTaskToken-[A-Za-z0-9_-]{43}$/;

export function mintTaskToken(): string {
  return PREFIX + randomBytes(32).toString("base64url");
}

export function isWellFormedTaskToken(token: string): boolean {
  return FORMAT.test(token);
}
