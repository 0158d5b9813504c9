/**
 * Polls until `probe` returns a value (anything but undefined), and returns it; fails naming
 * `what` once `timeoutMs` has passed. For the end-to-end tests, whose subjects are real processes
 * and queues: they say what they wait for, never how long a step takes.
 */
export async function until<T>(
  what: string,
  probe: () => T | undefined | Promise<T | undefined>,
  timeoutMs = 40_000,
  intervalMs = 100,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (Date.now() > deadline) throw new Error(`not within ${timeoutMs} ms: ${what}`);
    await new Promise((resolve) => setTimeout(resolve, intervalMs));
  }
}
