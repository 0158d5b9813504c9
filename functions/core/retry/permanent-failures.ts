/**
 * Failures no retry can clear, so retrying them would only burn budget: the spec asks for something that is not there,
 * or that can never be passed on. The agent reports them with one of these failure categories;
 * the run ends FAILED at once instead of looping through PENDING or spending a budget.
 */
export const PermanentFailureCategory = {
  /** The command's executable does not exist on the agent (ENOENT, not on PATH). */
  ExecutableNotFound: "executable_not_found",
  /** The command line and environment exceed what the kernel's exec accepts (E2BIG). */
  ArgumentsTooLarge: "arguments_too_large",
} as const;
export type PermanentFailureCategory =
  (typeof PermanentFailureCategory)[keyof typeof PermanentFailureCategory];

const PERMANENT: ReadonlySet<string> = new Set(Object.values(PermanentFailureCategory));

export function isPermanentFailure(category: string | undefined): category is PermanentFailureCategory {
  return category !== undefined && PERMANENT.has(category);
}
