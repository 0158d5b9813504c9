/** One reason an input was refused, shared by every validator in the core (specs, events, retry). */
export interface ValidationIssue {
  /** Dotted field path, `[i]` for array items, `(root)` for the whole value. */
  readonly path: string;
  readonly message: string;
}
