/**
 * Bounds the handlers a consumer runs at once and lets `stop()` wait for the ones in hand, for a while: a handler
 * that hangs must not hang shutdown (its delivery is redelivered by the broker once the ack wait ends).
 */
export interface HandlerSlots {
  readonly inFlight: number;
  readonly free: number;
  /** Runs `work` in a slot; the caller checks `free` first. */
  run(work: () => Promise<void>): void;
  /** Resolves when a slot is free, or at once once `release()` was called. */
  whenFree(): Promise<void>;
  /** Wakes every waiter (stop). */
  release(): void;
  /** Resolves when every running handler has finished or `timeoutMs` has passed. */
  settled(timeoutMs: number): Promise<void>;
}

export function createHandlerSlots(limit: number): HandlerSlots {
  if (!Number.isInteger(limit) || limit < 1) throw new RangeError(`concurrency must be a positive integer, got ${limit}`);
  const running = new Set<Promise<void>>();
  let waiters: (() => void)[] = [];
  let released = false;

  const wakeWaiters = (): void => {
    const current = waiters;
    waiters = [];
    for (const wake of current) wake();
  };

  return {
    get inFlight() {
      return running.size;
    },
    get free() {
      return limit - running.size;
    },
    run(work) {
      const task: Promise<void> = work()
        .catch(() => undefined)
        .finally(() => {
          running.delete(task);
          wakeWaiters();
        });
      running.add(task);
    },
    whenFree() {
      if (released || running.size < limit) return Promise.resolve();
      return new Promise((resolve) => waiters.push(resolve));
    },
    release() {
      released = true;
      wakeWaiters();
    },
    async settled(timeoutMs) {
      if (running.size === 0) return;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      await Promise.race([Promise.all([...running]), timeout]);
      clearTimeout(timer);
    },
  };
}
