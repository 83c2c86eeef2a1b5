/**
 * How many webhook deliveries each merchant may have at once, how many more may wait for them, and how long a
 * delivery finding its merchant full goes back to the broker.
 */

/**
 * When a merchant is at its limit and its waiting places are taken, its job goes back to the broker for this
 * long, doubling with each delivery of the job up to BUSY_MERCHANT_MAX_DELAY_MS: a merchant with a long backlog keeps
 * its slots fed by the jobs fetched next, and the same job does not come back four times a second.
 */
const BUSY_MERCHANT_DELAY_MS = 250;
const BUSY_MERCHANT_MAX_DELAY_MS = 4_000;
export const MIN_BUSY_DELAY_MS = 50;

export function busyMerchantDelayMs(deliveryCount: number): number {
  return Math.min(BUSY_MERCHANT_MAX_DELAY_MS, BUSY_MERCHANT_DELAY_MS * 2 ** Math.max(0, Math.min(deliveryCount - 1, 16)));
}
/**
 * Events that may wait here for a merchant's free slot, per slot (more go back to the broker): as many as its
 * recent pace delivers within WAITING_BUDGET_MS, from MIN to MAX_WAITING_PER_SLOT. A fast endpoint keeps its slots
 * fed from here, without its events bouncing off the broker's busy delay; a slow one holds only a few, and all of
 * them finish well inside the ack wait.
 */
export const MIN_WAITING_PER_SLOT = 2;
const MAX_WAITING_PER_SLOT = 16;
export const WAITING_BUDGET_MS = 5_000;

/** Each merchant's recent attempt duration (exponentially weighted), read by the slots to size its waiting room. */
export function createAttemptPace(options: { readonly limit: number; readonly weight?: number; readonly maxMerchants?: number }) {
  const weight = options.weight ?? 0.2;
  const recent = new Map<string, number>();
  return {
    record(merchantId: string, ms: number): void {
      const previous = recent.get(merchantId);
      if (previous === undefined && recent.size >= (options.maxMerchants ?? 10_000)) recent.clear();
      recent.set(merchantId, previous === undefined ? ms : previous + weight * (ms - previous));
    },
    /** The merchant's recent attempt duration in ms; undefined until one attempt finished. */
    paceOf: (merchantId: string): number | undefined => recent.get(merchantId),
    /** How many events may wait for this merchant's slots: a conservative few until its pace is known. */
    waitingFor(merchantId: string): number {
      const pace = recent.get(merchantId);
      const perSlot = pace === undefined ? MIN_WAITING_PER_SLOT : Math.floor(WAITING_BUDGET_MS / Math.max(pace, 1));
      return options.limit * Math.min(MAX_WAITING_PER_SLOT, Math.max(MIN_WAITING_PER_SLOT, perSlot));
    },
  };
}

/**
 * Per-merchant delivery slots: at most `limit` deliveries at once per merchant, and at most `waiting` jobs waiting
 * here for one (a number, or one per merchant); a job beyond that is refused (null) and goes back to the broker, so
 * a slow merchant can only hold a bounded share of the worker. A job that has waited `maxWaitMs` without a slot is
 * refused too: what a node holds for a merchant whose endpoint suddenly hangs goes back long before its ack wait.
 */
export function createMerchantSlots(
  limit: number,
  waiting: number | ((merchantId: string) => number),
  maxWaitMs = Number.POSITIVE_INFINITY,
) {
  const waitingFor = typeof waiting === 'number' ? () => waiting : waiting;
  const busy = new Map<string, number>();
  const queues = new Map<string, (() => void)[]>();

  function release(merchantId: string): void {
    const queue = queues.get(merchantId);
    const next = queue?.shift();
    if (queue?.length === 0) queues.delete(merchantId);
    // the slot passes from the finishing delivery straight to a waiting one (busy stays the same)
    if (next) {
      next();
      return;
    }
    const left = (busy.get(merchantId) ?? 1) - 1;
    if (left <= 0) busy.delete(merchantId);
    else busy.set(merchantId, left);
  }

  /** A free slot now (its release function), or null when the merchant has none free. */
  function takeFree(merchantId: string): (() => void) | null {
    const inUse = busy.get(merchantId) ?? 0;
    if (inUse >= limit) return null;
    busy.set(merchantId, inUse + 1);
    return () => {
      release(merchantId);
    };
  }

  return {
    /** Resolves with the slot's release function, or null when the merchant is full and so is its queue (or the wait ran out). */
    acquire(merchantId: string): Promise<(() => void) | null> {
      const free = takeFree(merchantId);
      if (free) return Promise.resolve(free);
      const done = () => {
        release(merchantId);
      };
      const queue = queues.get(merchantId) ?? [];
      if (queue.length >= waitingFor(merchantId)) return Promise.resolve(null);
      queues.set(merchantId, queue);
      return new Promise((resolve) => {
        const granted = (): void => {
          if (timer) clearTimeout(timer);
          resolve(done);
        };
        const timer = Number.isFinite(maxWaitMs)
          ? setTimeout(() => {
              const index = queue.indexOf(granted);
              if (index < 0) return;
              queue.splice(index, 1);
              if (queue.length === 0 && queues.get(merchantId) === queue) queues.delete(merchantId);
              resolve(null);
            }, maxWaitMs)
          : null;
        queue.push(granted);
      });
    },
    takeFree,
    /** Slots free now, with nothing waiting for them: deliveries that would start at once. */
    free: (merchantId: string) => ((queues.get(merchantId)?.length ?? 0) > 0 ? 0 : limit - (busy.get(merchantId) ?? 0)),
    /** Deliveries that would be admitted now (started or waiting) before the merchant refuses. */
    room: (merchantId: string) => limit + waitingFor(merchantId) - (busy.get(merchantId) ?? 0) - (queues.get(merchantId)?.length ?? 0),
    inUse: (merchantId: string) => busy.get(merchantId) ?? 0,
    waiting: (merchantId: string) => queues.get(merchantId)?.length ?? 0,
  };
}

export type AttemptPace = ReturnType<typeof createAttemptPace>;
