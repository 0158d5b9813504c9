/** Command-line flags of the benches: whole numbers, and the error that names a bad one. */

/** Parses a whole-number flag, naming the flag and the reason when it is not one. */
export function intFlag(name: string, raw: string, min: number, max = Number.MAX_SAFE_INTEGER): number {
  const value = Number(raw);
  if (!Number.isInteger(value) || value < min || value > max) {
    throw new BenchUsageError(`--${name} must be a whole number from ${min} to ${max} (got "${raw}")`);
  }
  return value;
}

export class BenchUsageError extends Error {
  override readonly name = "BenchUsageError";
  readonly code = "BENCH_USAGE";
}
