/**
 * A short, stable hash for ids that must be cut to fit a limit (an ECS `startedBy`, a pool's
 * agent id): FNV-1a over the UTF-16 code units, 32 bits. Not for security; only so that two
 * long ids cut to the same prefix stay apart.
 */
export function fnv1a32(text: string): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < text.length; i++) {
    hash ^= text.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash;
}
