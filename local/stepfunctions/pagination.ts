/** Opaque nextTokens for List* and GetExecutionHistory: an offset bound to what is being listed. */
import { SfnApiError } from "./errors.ts";
import { DEFAULT_PAGE_SIZE, MAX_PAGE_SIZE } from "./limits.ts";

export function pageSize(maxResults: unknown): number {
  if (maxResults === undefined || maxResults === null || maxResults === 0) return DEFAULT_PAGE_SIZE;
  if (
    typeof maxResults !== "number" ||
    !Number.isInteger(maxResults) ||
    maxResults < 0 ||
    maxResults > MAX_PAGE_SIZE
  ) {
    throw new SfnApiError("ValidationException", `maxResults must be an integer from 0 to ${MAX_PAGE_SIZE}`);
  }
  return maxResults;
}

export function encodePageToken(scope: string, offset: number): string {
  return Buffer.from(JSON.stringify({ scope, offset }), "utf8").toString("base64url");
}

/** The offset to resume from; InvalidToken when the token is not one we issued for this listing. */
export function decodePageToken(token: unknown, scope: string): number {
  if (token === undefined || token === null) return 0;
  if (typeof token !== "string") throw new SfnApiError("InvalidToken", "nextToken must be a string");
  let parsed: unknown;
  try {
    parsed = JSON.parse(Buffer.from(token, "base64url").toString("utf8"));
  } catch {
    throw new SfnApiError("InvalidToken", "Invalid Token: nextToken is malformed");
  }
  const { scope: tokenScope, offset } = (parsed ?? {}) as { scope?: unknown; offset?: unknown };
  if (tokenScope !== scope || typeof offset !== "number" || !Number.isInteger(offset) || offset < 0) {
    throw new SfnApiError("InvalidToken", "Invalid Token: nextToken does not belong to this request");
  }
  return offset;
}

export function page<T>(items: readonly T[], scope: string, maxResults: unknown, nextToken: unknown) {
  const size = pageSize(maxResults);
  const offset = decodePageToken(nextToken, scope);
  const slice = items.slice(offset, offset + size);
  const next = offset + size < items.length ? encodePageToken(scope, offset + size) : undefined;
  return { items: slice, nextToken: next };
}
