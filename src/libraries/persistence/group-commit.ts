import type { JournalAppend } from './journal-port.js';

export interface GroupCommitOptions {
  /** Batch concurrent writes into one statement (one round trip). */
  readonly groupCommit: boolean;
  readonly maxBatch: number;
  /** Batches in flight at once; the rest wait and join the next batch. */
  readonly maxConcurrentBatches: number;
  /**
   * While a statement is under way, another starts only when at least this many writes wait (1: as soon as a slot is
   * free). Below it the writes wait for the statement under way and go out together after it: a node carrying a light
   * load (a cluster's share) then writes fewer, larger statements, each of which has a fixed cost in the database,
   * for at most one statement's time of extra wait. Under load the queue reaches it and the other slots are used.
   */
  readonly overlapFrom?: number;
}

export const DEFAULT_GROUP_COMMIT_OPTIONS: GroupCommitOptions = {
  groupCommit: true,
  maxBatch: 256,
  maxConcurrentBatches: 4,
  overlapFrom: 32,
};

export interface GroupWriterOptions<T> extends GroupCommitOptions {
  /**
   * When a free batch slot sends the writes waiting: at the end of the event loop's current turn (the default), so
   * that the writes made by the same turn's callbacks share a statement, or at once (the first write of an idle
   * writer goes alone, and the writes arriving while it runs share the next statement).
   */
  readonly firstWrite?: 'end-of-turn' | 'at-once';
  /**
   * Writes of one key reach the store in the order they were made: a write waits while an earlier write of its key
   * is in a statement under way (writes of one key in one statement are the store's to order). Without it, two
   * statements run at once on two connections and the later write may commit first.
   */
  readonly keyOf?: (item: T) => string;
}

/** One write waiting for its batch; `writeBatch` settles each of them. */
export interface PendingWrite<T> {
  readonly item: T;
  resolve(): void;
  reject(error: unknown): void;
}

export type PendingAppend = PendingWrite<JournalAppend>;

/**
 * The write queue of the adapters and the database bus (journal appends, message-owner records, outbox done marks,
 * bus publishes and settlements): concurrent writes wait and go out together, up to `maxBatch` per statement and
 * `maxConcurrentBatches` statements at once (or one statement per write, all at once, without group commit).
 * `writeBatch` must settle every pending write of its batch and never reject.
 *
 * By default a write that finds a batch slot free still waits for the end of the event loop's current turn, so the
 * writes that the same turn's callbacks make (the requests and receipts that arrived together) share its statement:
 * under load this is 4× fewer statements than sending the first write of a turn alone, for microseconds of wait.
 */
export function createGroupCommit<T = JournalAppend>(
  options: GroupWriterOptions<T>,
  writeBatch: (batch: readonly PendingWrite<T>[]) => Promise<void>,
): (item: T) => Promise<void> {
  const batchLimit = options.groupCommit ? options.maxBatch : 1;
  const slots = options.groupCommit ? options.maxConcurrentBatches : Number.POSITIVE_INFINITY;
  const atOnce = !options.groupCommit || options.firstWrite === 'at-once';
  const keyOf = options.keyOf;
  const overlapFrom = options.groupCommit ? Math.max(1, options.overlapFrom ?? 1) : 1;
  let queue: PendingWrite<T>[] = [];
  let inFlight = 0;
  /** Keys with writes in statements under way, and how many. */
  const busyKeys = new Map<string, number>();
  let pumpScheduled = false;

  function pumpAtEndOfTurn(): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    setImmediate(() => {
      pumpScheduled = false;
      pump();
    });
  }

  /** The next batch: the oldest writes, skipping those whose key has a statement under way (they keep their place). */
  function takeBatch(): PendingWrite<T>[] {
    if (!keyOf) return queue.splice(0, batchLimit);
    const batch: PendingWrite<T>[] = [];
    const rest: PendingWrite<T>[] = [];
    for (const pending of queue) {
      if (batch.length < batchLimit && !busyKeys.has(keyOf(pending.item))) batch.push(pending);
      else rest.push(pending);
    }
    queue = rest;
    return batch;
  }

  function markBusy(batch: readonly PendingWrite<T>[], change: 1 | -1): void {
    if (!keyOf) return;
    for (const pending of batch) {
      const key = keyOf(pending.item);
      const count = (busyKeys.get(key) ?? 0) + change;
      if (count > 0) busyKeys.set(key, count);
      else busyKeys.delete(key);
    }
  }

  function pump(): void {
    while (inFlight < slots && queue.length > 0) {
      if (inFlight > 0 && queue.length < overlapFrom) return;
      const batch = takeBatch();
      if (batch.length === 0) return;
      inFlight++;
      markBusy(batch, 1);
      void writeBatch(batch).finally(() => {
        inFlight--;
        markBusy(batch, -1);
        pump();
      });
    }
  }

  return (item) =>
    new Promise<void>((resolve, reject) => {
      queue.push({ item, resolve, reject });
      if (atOnce) pump();
      else pumpAtEndOfTurn();
    });
}

/**
 * A `writeBatch` for a statement that writes its whole batch or fails: every write of the batch settles with it.
 * With `aloneOnFailure`, a failed batch is written again write by write, so that one bad item (a payload the
 * database refuses) fails alone, not its neighbours.
 */
export function settledTogether<T>(
  write: (items: readonly T[]) => Promise<void>,
  options: { readonly aloneOnFailure?: boolean } = {},
): (batch: readonly PendingWrite<T>[]) => Promise<void> {
  return async (batch) => {
    try {
      await write(batch.map((pending) => pending.item));
      for (const pending of batch) pending.resolve();
    } catch (error) {
      if (!options.aloneOnFailure || batch.length === 1) {
        for (const pending of batch) pending.reject(error);
        return;
      }
      for (const pending of batch) {
        await write([pending.item]).then(
          () => {
            pending.resolve();
          },
          (failure: unknown) => {
            pending.reject(failure);
          },
        );
      }
    }
  };
}
