import { expect } from 'chai';
import type { JournalAppend } from '../../../src/libraries/persistence/journal-port.js';
import { migrate } from '../../../src/libraries/persistence/sql/migrations.js';
import { openPglite, type SqlExecutor } from '../../../src/libraries/persistence/sql/sql-executor.js';
import { createSqlJournal } from '../../../src/libraries/persistence/sql/sql-journal.js';

const endOfTurns = async (turns: number) => {
  for (let i = 0; i < turns; i++) await new Promise<void>((resolve) => setImmediate(resolve));
};

/**
 * The journal's database with its first append statement held until the test lets it go: the statement a
 * connection pool would have sent first but that reaches the server last.
 */
function holdingFirstAppend(db: SqlExecutor): { readonly db: SqlExecutor; readonly appendsSent: () => number; release(): void } {
  let appendsSent = 0;
  let release = (): void => undefined;
  const held = new Promise<void>((resolve) => {
    release = resolve;
  });
  const isAppend = (text: string) => text.includes('INSERT INTO journal');
  return {
    db: {
      ...db,
      async query(text, params, options) {
        if (isAppend(text) && ++appendsSent === 1) await held;
        return db.query(text, params, options);
      },
    },
    appendsSent: () => appendsSent,
    release: () => {
      release();
    },
  };
}

describe('SQL journal: appends of one key reach the database in order', function () {
  this.timeout(60_000);
  let db: SqlExecutor;
  let schemaCounter = 0;
  before(async () => {
    db = await openPglite({});
  });
  after(async () => {
    await db.close();
  });
  beforeEach(async () => {
    const schema = `key_order_${++schemaCounter}`;
    await db.script(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
    await migrate(db);
  });

  const append = (key: string, seq: number): JournalAppend => ({ key, seq, events: [{ seq }], outbox: [], at: 1_780_000_000_000 + seq });

  for (const groupCommit of [false, true]) {
    it(`when the statement of an earlier append is slow (group commit ${groupCommit ? 'on' : 'off'}), then the next append of its key waits for it, another key does not, and all are written`, async () => {
      const holding = holdingFirstAppend(db);
      const journal = createSqlJournal(holding.db, { groupCommit, maxBatch: 256, maxConcurrentBatches: 4 });
      const first = journal.append(append('wallet:a', 1));
      await endOfTurns(3);
      const second = journal.append(append('wallet:a', 2));
      const other = journal.append(append('wallet:b', 1));
      await other;
      expect(holding.appendsSent(), 'the first statement and the other key’s').to.equal(2);
      holding.release();
      await Promise.all([first, second]);
      expect((await journal.read('wallet:a', 0)).map((r) => r.seq)).to.deep.equal([1, 2]);
      expect((await journal.read('wallet:b', 0)).map((r) => r.seq)).to.deep.equal([1]);
    });
  }
});
