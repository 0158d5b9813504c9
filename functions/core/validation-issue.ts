/** One reason an input was refused, shared by every validator in the core (specs, events, retry). */
export interface ValidationIssue {
  /** Dotted field path, `[i]` for array items, `(root)` for the whole value. */
  readonly path: string;
  readonly message: string;
}

/** `invalid <what> (N problems):` then each problem as `  <path>: <reason>`, one per line. */
export function invalidMessage(what: string, issues: readonly ValidationIssue[]): string {
  return (
    `invalid ${what} (${issues.length} ${issues.length === 1 ? "problem" : "problems"}):\n` +
    issues.map((issue) => `  ${issue.path}: ${issue.message}`).join("\n")
  );
}
