import { expect } from 'chai';
import type { PendingOutboxEntry } from '../../../../src/libraries/persistence/journal-port.js';
import { runEntryTasks } from '../../../../src/libraries/persistence/outbox-relay.js';

const entry = (id: string, recipients: number): PendingOutboxEntry => ({
  id,
  topic: 'carrier.dispatch',
  payload: { recipients },
  shard: 0,
  key: `message:${id}`,
  seq: 1,
  createdAt: 0,
});

describe('outbox relay: the tasks of a batch (runEntryTasks)', () => {
  it('when every task succeeds, then every entry is done, in entry order, and never more than the limit ran at once', async () => {
    let running = 0;
    let peak = 0;
    const ran: string[] = [];
    const entries = [entry('a', 3), entry('b', 1), entry('c', 5)];
    const done = await runEntryTasks(
      entries,
      (e) =>
        Array.from({ length: (e.payload as { recipients: number }).recipients }, (_, r) => async () => {
          running++;
          peak = Math.max(peak, running);
          await new Promise((resolve) => setImmediate(resolve));
          ran.push(`${e.id}${r}`);
          running--;
        }),
      4,
      () => {
        throw new Error('no failure expected');
      },
    );
    expect(done).to.deep.equal(['a', 'b', 'c']);
    expect(ran).to.have.length(9);
    expect(peak).to.equal(4);
  });

  it('when one task of an entry fails, then only that entry stays pending, its remaining tasks are skipped, and the first failure is reported once', async () => {
    const reported: unknown[] = [];
    const ran: string[] = [];
    const boom = new Error('publish refused');
    const done = await runEntryTasks(
      [entry('a', 2), entry('b', 3), entry('c', 1)],
      (e) =>
        Array.from({ length: (e.payload as { recipients: number }).recipients }, (_, r) => async () => {
          await Promise.resolve();
          if (e.id === 'b' && r === 0) throw boom;
          if (e.id === 'c') throw new Error('second failure');
          ran.push(`${e.id}${r}`);
        }),
      1,
      (error) => reported.push(error),
    );
    expect(done).to.deep.equal(['a']);
    expect(ran).to.deep.equal(['a0', 'a1']);
    expect(reported).to.deep.equal([boom]);
  });

  it('when the batch is empty, then nothing runs and nothing is done', async () => {
    expect(
      await runEntryTasks(
        [],
        () => [],
        8,
        () => undefined,
      ),
    ).to.deep.equal([]);
  });
});
