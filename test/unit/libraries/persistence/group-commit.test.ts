import { expect } from 'chai';
import { createGroupCommit, settledTogether, type PendingWrite } from '../../../../src/libraries/persistence/group-commit.js';

const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

/** A write queue whose statements are recorded and finished by the test. */
function recordingQueue(options: {
  maxBatch: number;
  maxConcurrentBatches: number;
  overlapFrom?: number;
  groupCommit?: boolean;
  firstWrite?: 'end-of-turn' | 'at-once';
  keyOf?: (item: number) => string;
}) {
  const statements: number[][] = [];
  const open: (() => void)[] = [];
  const write = createGroupCommit<number>(
    { groupCommit: options.groupCommit ?? true, ...options },
    (batch: readonly PendingWrite<number>[]) => {
      statements.push(batch.map((pending) => pending.item));
      return new Promise<void>((resolve) => {
        open.push(() => {
          for (const pending of batch) pending.resolve();
          resolve();
        });
      });
    },
  );
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

  it('when fewer writes wait than overlapFrom while a statement is under way, then they wait for it and go out together, though slots are free', async () => {
    const { write, statements, finishOldest } = recordingQueue({ maxBatch: 256, maxConcurrentBatches: 4, overlapFrom: 3 });
    const first = write(1);
    await endOfTurn();
    const second = write(2);
    await endOfTurn();
    const third = write(3);
    await endOfTurn();
    expect(statements, 'two wait: below overlapFrom').to.deep.equal([[1]]);
    finishOldest();
    await first;
    expect(statements).to.deep.equal([[1], [2, 3]]);
    finishOldest();
    await Promise.all([second, third]);
  });

  it('when overlapFrom writes wait while a statement is under way, then a second statement starts at once with them', async () => {
    const { write, statements, finishOldest } = recordingQueue({ maxBatch: 256, maxConcurrentBatches: 4, overlapFrom: 3 });
    const first = write(1);
    await endOfTurn();
    const later = [2, 3, 4].map((item) => write(item));
    await endOfTurn();
    expect(statements).to.deep.equal([[1], [2, 3, 4]]);
    finishOldest();
    finishOldest();
    await Promise.all([first, ...later]);
  });

  it('when nothing is under way, then even one write goes out alone whatever overlapFrom says', async () => {
    const { write, statements, finishOldest } = recordingQueue({ maxBatch: 256, maxConcurrentBatches: 4, overlapFrom: 100 });
    const only = write(1);
    await endOfTurn();
    expect(statements).to.deep.equal([[1]]);
    finishOldest();
    await only;
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

  it('when writes of one key follow each other, then a later one waits while an earlier one of its key is in a statement, and other keys go ahead', async () => {
    // items: key = tens digit (11, 12 are key 1; 21 is key 2)
    const { write, statements, finishOldest } = recordingQueue({
      maxBatch: 256,
      maxConcurrentBatches: 4,
      keyOf: (item) => String(Math.floor(item / 10)),
    });
    const first = write(11);
    await endOfTurn();
    const later = [write(12), write(21), write(13)];
    await endOfTurn();
    expect(statements, 'key 1 waits for its statement under way; key 2 goes ahead').to.deep.equal([[11], [21]]);
    finishOldest();
    await first;
    expect(statements, 'the waiting writes of key 1 go out together, in order').to.deep.equal([[11], [21], [12, 13]]);
    finishOldest();
    finishOldest();
    await Promise.all(later);
  });

  it('when group commit is off and writes share a key, then each is its own statement, one after the other', async () => {
    const { write, statements, finishOldest } = recordingQueue({
      maxBatch: 1,
      maxConcurrentBatches: 1,
      groupCommit: false,
      keyOf: () => 'same',
    });
    const first = write(1);
    const second = write(2);
    expect(statements).to.deep.equal([[1]]);
    finishOldest();
    await first;
    expect(statements).to.deep.equal([[1], [2]]);
    finishOldest();
    await second;
  });

  it('when the first write goes at once, then it is sent without waiting for the end of the turn, and the writes arriving meanwhile share the next statement', async () => {
    const { write, statements, finishOldest } = recordingQueue({ maxBatch: 500, maxConcurrentBatches: 1, firstWrite: 'at-once' });
    const first = write(1);
    const later = [write(2), write(3)];
    expect(statements).to.deep.equal([[1]]);
    finishOldest();
    await first;
    expect(statements).to.deep.equal([[1], [2, 3]]);
    finishOldest();
    await Promise.all(later);
  });

  it('when a batch written together fails, then every write of it fails, or with aloneOnFailure only the bad one', async () => {
    const writeItems = (items: readonly number[]) => (items.includes(13) ? Promise.reject(new Error('refused 13')) : Promise.resolve());
    const together = createGroupCommit<number>({ groupCommit: true, maxBatch: 10, maxConcurrentBatches: 1 }, settledTogether(writeItems));
    expect((await Promise.allSettled([11, 12, 13].map((item) => together(item)))).map((r) => r.status)).to.deep.equal([
      'rejected',
      'rejected',
      'rejected',
    ]);
    const alone = createGroupCommit<number>(
      { groupCommit: true, maxBatch: 10, maxConcurrentBatches: 1 },
      settledTogether(writeItems, { aloneOnFailure: true }),
    );
    expect((await Promise.allSettled([11, 12, 13].map((item) => alone(item)))).map((r) => r.status)).to.deep.equal([
      'fulfilled',
      'fulfilled',
      'rejected',
    ]);
  });
});
