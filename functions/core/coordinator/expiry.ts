/** Expiry: the stage's timer has run out. The same deadline drives the state machine's timeout. */
export function isExpired(expiresAtMs: number, nowMs: number): boolean {
  return nowMs >= expiresAtMs;
}
