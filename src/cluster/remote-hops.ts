import { AsyncLocalStorage } from 'node:async_hooks';

/**
 * How many times the work of one request crossed to another node (an ask or a forwarded request sent over NATS).
 * The HTTP layer opens a count per request; the cluster router adds to the count of the request it serves.
 */
export interface HopCount {
  hops: number;
}

const current = new AsyncLocalStorage<HopCount>();

/** Runs `work` adding its remote hops to `count`. */
export function countingHops<T>(count: HopCount, work: () => T): T {
  return current.run(count, work);
}

/** One remote hop by the work now running (outside a request: counted nowhere). */
export function recordRemoteHop(): void {
  const count = current.getStore();
  if (count) count.hops += 1;
}
