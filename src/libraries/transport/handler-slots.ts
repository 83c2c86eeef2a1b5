import PQueue from 'p-queue';

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
  const handlers = new PQueue({ concurrency: limit });
  /** Handlers started or queued (the consumer loop only starts what fits, so none wait in the queue). */
  const inFlight = (): number => handlers.pending + handlers.size;
  const waiters = new Set<() => void>();
  let released = false;

  return {
    get inFlight() {
      return inFlight();
    },
    get free() {
      return limit - inFlight();
    },
    run(work) {
      void handlers.add(work).catch(() => undefined);
    },
    whenFree() {
      if (released || inFlight() < limit) return Promise.resolve();
      return new Promise((resolve) => {
        // 'next': a handler has finished and its slot is counted free
        const check = (): void => {
          if (!released && inFlight() >= limit) return;
          handlers.off('next', check);
          waiters.delete(check);
          resolve();
        };
        handlers.on('next', check);
        waiters.add(check);
      });
    },
    release() {
      released = true;
      for (const check of [...waiters]) check();
    },
    async settled(timeoutMs) {
      if (inFlight() === 0) return;
      let timer: NodeJS.Timeout | undefined;
      const timeout = new Promise<void>((resolve) => {
        timer = setTimeout(resolve, timeoutMs);
      });
      await Promise.race([handlers.onIdle(), timeout]);
      clearTimeout(timer);
    },
  };
}
