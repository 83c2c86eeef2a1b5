/** Real elapsed time for waits and deadlines (an injected clock dates reports; pacing needs the real one). */
export const monotonic = (): number => performance.now();

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/**
 * Submissions spaced 1/perSecond apart, in order of reservation: a token bucket of one token refilled `perSecond`
 * times a second, so a carrier's rate is never exceeded, even in a burst. The returned function resolves when the
 * caller's turn has come.
 */
export function createSubmitPacer(perSecond: number): () => Promise<void> {
  const interval = 1_000 / perSecond;
  let nextFree = 0;
  return async () => {
    const now = monotonic();
    const at = Math.max(now, nextFree);
    nextFree = at + interval;
    if (at > now) await sleep(at - now);
  };
}
