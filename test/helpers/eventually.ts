/**
 * Polls `check` (async) every `pollMs` until it returns a truthy value, which it resolves with; rejects after
 * `timeoutMs` with the last value seen (or the last error).
 */
export async function eventually<T>(
  check: () => Promise<T | false | null | undefined>,
  timeoutMs: number,
  what = 'condition',
  pollMs = 50,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown;
  for (;;) {
    try {
      const value = await check();
      if (value !== false && value !== null && value !== undefined) return value;
      last = value;
    } catch (error) {
      last = error;
    }
    if (Date.now() > deadline) {
      const detail = last instanceof Error ? last.message : JSON.stringify(last);
      throw new Error(`${what} not reached within ${timeoutMs} ms (last: ${detail})`);
    }
    await new Promise((resolve) => setTimeout(resolve, pollMs));
  }
}
