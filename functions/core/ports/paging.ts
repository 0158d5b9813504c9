/** Pages of a listing: the store returns a cursor when there may be more. */

export interface PageRequest {
  /** Page size; default 50. */
  readonly limit?: number;
  /** `cursor` of the previous page. */
  readonly cursor?: string;
}

export interface Page<T> {
  readonly items: readonly T[];
  /** Present when there may be more: pass it back to get the next page. */
  readonly cursor?: string;
}
