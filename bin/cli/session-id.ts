/**
 * Session ids the CLI makes up: the spec's name turned into id characters, then a random
 * suffix, e.g. `hello-k3x9q2mf`. Readable in `cairn list` and in the Step Functions console
 * (the id is the execution's name). Randomness is passed in.
 */
import { SESSION_ID_PATTERN } from "../../functions/core/events.ts";

const SUFFIX_LENGTH = 8;
const ALPHABET = "abcdefghijklmnopqrstuvwxyz0123456789";
/** 63 characters at most, less "-" and the suffix. */
const MAX_PREFIX_LENGTH = 63 - 1 - SUFFIX_LENGTH;

/**
 * `random` returns values in [0, 1), like Math.random. `maxLength` (default 63) leaves room for
 * what the control plane appends: a job of independent tasks names its sessions `<id>-t<index>`.
 */
export function newSessionId(specName: string, random: () => number, maxLength = 63): string {
  const prefix =
    specName
      .toLowerCase()
      .replace(/[^a-z0-9]+/g, "-")
      .replace(/^-+/, "")
      .slice(0, Math.min(MAX_PREFIX_LENGTH, maxLength - 1 - SUFFIX_LENGTH))
      .replace(/-+$/, "") || "session";
  let suffix = "";
  for (let i = 0; i < SUFFIX_LENGTH; i++) {
    suffix += ALPHABET[Math.floor(random() * ALPHABET.length)] ?? "0";
  }
  const id = `${prefix}-${suffix}`;
  // The pattern is the contract; a failure here is a bug in this function, not bad input.
  if (!SESSION_ID_PATTERN.test(id)) throw new Error(`generated session id "${id}" breaks SESSION_ID_PATTERN`);
  return id;
}
