import { expect } from 'chai';
import { createGroupCommit, type PendingWrite } from '../../../../src/libraries/persistence/group-commit.js';

const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A write queue whose statements are recorded and finished by the test. */
function recordingQueue(options: { maxBatch: number; maxConcurrentBatches: number; groupCommit?: boolean }) {
  const statements: number[][] = [];
  const open: (() => void)[] = [];
  const write = createGroupCommit<number>({ groupCommit: options.groupCommit ?? true, ...options }, (batch: readonly PendingWrite<number>[]) => {
    statements.push(batch.map((pending) => pending.item));
    return new Promise<void>((resolve) => {
      open.push(() => {
        for (const pending of batch) pending.resolve();
        resolve();
      });
    });
  });
  const finishOldest = () => open.shift()?.();
  return { write, statements, finishOldest };
}

describe('group commit', () => {
  it('when writes arrive in the same turn of the event loop with batch slots free, then they go out as one statement at the end of the turn', async () => {
    const { write, statements, finishOldest } = recordingQueue({ maxBatch: 256, maxConcurrentBatches: 4 });
    const written = [1, 2, 3].map((item) => write(item));
    expect(statements, 'nothing before the turn ends').to.deep.equal([]);
    await endOfTurn();
    expect(statements).to.deep.equal([[1, 2, 3]]);
    finishOldest();
    await Promise.all(written);
  });

  it('when writes arrive while every batch slot is taken, then they wait and go out together when one frees', async () => {
    const { write, statements, finishOldest } = recordingQueue({ maxBatch: 256, maxConcurrentBatches: 1 });
    const first = write(1);
    await endOfTurn();
    const later = [2, 3].map((item) => write(item));
    await endOfTurn();
    const last = write(4);
    await endOfTurn();
    expect(statements, 'the slot is still taken').to.deep.equal([[1]]);
    finishOldest();
    await first;
    expect(statements).to.deep.equal([[1], [2, 3, 4]]);
    finishOldest();
    await Promise.all([...later, last]);
  });

  it('when more writes wait than a batch holds, then they are split into batches of at most maxBatch', async () => {
    const { write, statements, finishOldest } = recordingQueue({ maxBatch: 2, maxConcurrentBatches: 4 });
    const written = [1, 2, 3, 4, 5].map((item) => write(item));
    await endOfTurn();
    expect(statements).to.deep.equal([[1, 2], [3, 4], [5]]);
    for (let i = 0; i < 3; i++) finishOldest();
    await Promise.all(written);
  });

  it('when group commit is off, then every write is its own statement at once', () => {
    const { write, statements, finishOldest } = recordingQueue({ maxBatch: 256, maxConcurrentBatches: 4, groupCommit: false });
    void write(1);
    void write(2);
    expect(statements).to.deep.equal([[1], [2]]);
    finishOldest();
    finishOldest();
  });
});
