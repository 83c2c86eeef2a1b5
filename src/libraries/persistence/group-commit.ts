import type { JournalAppend } from './journal-port.js';

export interface GroupCommitOptions {
  /** Batch concurrent writes into one statement (one round trip). */
  readonly groupCommit: boolean;
  readonly maxBatch: number;
  /** Batches in flight at once; the rest wait and join the next batch. */
  readonly maxConcurrentBatches: number;
}

export const DEFAULT_GROUP_COMMIT_OPTIONS: GroupCommitOptions = { groupCommit: true, maxBatch: 256, maxConcurrentBatches: 4 };

/** One write waiting for its batch; `writeBatch` settles each of them. */
export interface PendingWrite<T> {
  readonly item: T;
  resolve(): void;
  reject(error: unknown): void;
}

export type PendingAppend = PendingWrite<JournalAppend>;

/**
 * The adapters' write queue (journal appends, message-owner records): concurrent writes wait and go out together,
 * up to `maxBatch` per statement and `maxConcurrentBatches` statements at once (or one statement per write without
 * group commit). `writeBatch` must settle every pending write of its batch and never reject.
 *
 * A write that finds a batch slot free still waits for the end of the event loop's current turn, so the writes
 * that the same turn's callbacks make (the requests and receipts that arrived together) share its statement:
 * under load this is 4× fewer statements than sending the first write of a turn alone, for microseconds of wait.
 */
export function createGroupCommit<T = JournalAppend>(
  options: GroupCommitOptions,
  writeBatch: (batch: readonly PendingWrite<T>[]) => Promise<void>,
): (item: T) => Promise<void> {
  const queue: PendingWrite<T>[] = [];
  let inFlight = 0;
  let pumpScheduled = false;

  function pumpAtEndOfTurn(): void {
    if (pumpScheduled) return;
    pumpScheduled = true;
    setImmediate(() => {
      pumpScheduled = false;
      pump();
    });
  }

  function pump(): void {
    while (inFlight < options.maxConcurrentBatches && queue.length > 0) {
      const batch = queue.splice(0, options.maxBatch);
      inFlight++;
      void writeBatch(batch).finally(() => {
        inFlight--;
        pump();
      });
    }
  }

  return (item) =>
    new Promise<void>((resolve, reject) => {
      if (!options.groupCommit) {
        void writeBatch([{ item, resolve, reject }]);
        return;
      }
      queue.push({ item, resolve, reject });
      pumpAtEndOfTurn();
    });
}
