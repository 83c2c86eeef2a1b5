import type { JournalAppend } from './journal-port.js';

export interface GroupCommitOptions {
  /** Batch concurrent appends into one write (one round trip). */
  readonly groupCommit: boolean;
  readonly maxBatch: number;
  /** Batches in flight at once; the rest wait and join the next batch. */
  readonly maxConcurrentBatches: number;
}

export const DEFAULT_GROUP_COMMIT_OPTIONS: GroupCommitOptions = { groupCommit: true, maxBatch: 256, maxConcurrentBatches: 4 };

/** One append waiting for its batch; `writeBatch` settles each of them. */
export interface PendingAppend {
  readonly append: JournalAppend;
  resolve(): void;
  reject(error: unknown): void;
}

/**
 * The journal adapters' append queue: concurrent appends wait and go out together, up to `maxBatch` per write and
 * `maxConcurrentBatches` writes at once (or one write per append without group commit). `writeBatch` must settle
 * every pending append of its batch and never reject.
 */
export function createGroupCommit(options: GroupCommitOptions, writeBatch: (batch: readonly PendingAppend[]) => Promise<void>): (append: JournalAppend) => Promise<void> {
  const queue: PendingAppend[] = [];
  let inFlight = 0;

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

  return (append) =>
    new Promise<void>((resolve, reject) => {
      if (!options.groupCommit) {
        void writeBatch([{ append, resolve, reject }]);
        return;
      }
      queue.push({ append, resolve, reject });
      pump();
    });
}
