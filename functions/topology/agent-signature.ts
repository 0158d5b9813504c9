/**
 * Signs and checks agents' reports and heartbeats (docs/agents.md): HMAC-SHA256, keyed with
 * the key the agent incarnation received on its own queue, over the canonical signing payload
 * (core/agent-protocol.ts). Used by the agent to sign and by the coordinator to check.
 */
import { createHmac, randomBytes, timingSafeEqual } from "node:crypto";
import { signingPayload } from "../core/agent-protocol.ts";

export function signDetail(
  key: string,
  detailType: string,
  detail: Readonly<Record<string, unknown>>,
): string {
  return createHmac("sha256", key).update(signingPayload(detailType, detail)).digest("hex");
}

export function signatureMatches(
  key: string,
  detailType: string,
  detail: Readonly<Record<string, unknown>> & { readonly signature: string },
): boolean {
  const expected = Buffer.from(signDetail(key, detailType, detail), "hex");
  const given = Buffer.from(detail.signature, "hex");
  return given.length === expected.length && timingSafeEqual(given, expected);
}

/** A fresh signing key for a new agent incarnation: 256 random bits. */
export function newSigningKey(): string {
  return randomBytes(32).toString("base64url");
}
