import { expect } from 'chai';
import type { JournalAppend } from '../../../src/libraries/persistence/journal-port.js';
import { migrate } from '../../../src/libraries/persistence/sql/migrations.js';
import { openPglite, type SqlExecutor } from '../../../src/libraries/persistence/sql/sql-executor.js';
import { createSqlJournal } from '../../../src/libraries/persistence/sql/sql-journal.js';

type StatementKind = 'append' | 'done marks' | 'other';

const kindOf = (text: string): StatementKind =>
  text.includes('INSERT INTO journal') ? 'append' : text.startsWith('DELETE FROM outbox WHERE id = ANY') ? 'done marks' : 'other';

/** The database, recording the kind of every statement sent; a kind in `failing` fails instead of reaching it. */
function recording(db: SqlExecutor): { readonly db: SqlExecutor; readonly sent: StatementKind[]; readonly failing: Set<StatementKind> } {
  const sent: StatementKind[] = [];
  const failing = new Set<StatementKind>();
  return {
    sent,
    failing,
    db: {
      ...db,
      async query(text, params, options) {
        const kind = kindOf(text);
        sent.push(kind);
        if (failing.has(kind)) throw new Error(`the database refused this ${kind} statement`);
        return db.query(text, params, options);
      },
    },
  };
}

const GROUP = { groupCommit: true, maxBatch: 256, maxConcurrentBatches: 4 } as const;

/** An append of one record that writes one outbox entry, `entry`. */
const withEntry = (key: string, seq: number, entry: string): JournalAppend => ({
  key,
  seq,
  events: [{ seq }],
  outbox: [{ id: entry, topic: 'dispatch', payload: { entry }, shard: 0 }],
  at: 1_780_000_000_000 + seq,
});

/**
 * Outbox done marks wait for the next journal append and are deleted by its statement; with no append in time they
 * go out alone. Either way `markDone` resolves only once they are deleted, and fails when their statement failed.
 */
describe('SQL journal: done marks ride on the next append', function () {
  this.timeout(60_000);
  let base: SqlExecutor;
  let schemaCounter = 0;
  before(async () => {
    base = await openPglite({});
  });
  after(async () => {
    await base.close();
  });
  beforeEach(async () => {
    const schema = `done_marks_${++schemaCounter}`;
    await base.script(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
    await migrate(base);
  });

  async function pendingIds(journal: ReturnType<typeof createSqlJournal>): Promise<string[]> {
    return (await journal.pending({ limit: 100 })).map((entry) => entry.id);
  }

  it('when an append follows within the wait, then the marks are deleted by its statement and none of their own is sent', async () => {
    const db = recording(base);
    const journal = createSqlJournal(db.db, { ...GROUP, doneMarksWaitMs: 60_000 });
    await journal.append(withEntry('message:a', 1, 'entry-a'));
    expect(await pendingIds(journal)).to.deep.equal(['entry-a']);

    const marked = journal.markDone(['entry-a']);
    await journal.append(withEntry('message:b', 1, 'entry-b'));
    await marked;

    expect(await pendingIds(journal)).to.deep.equal(['entry-b']);
    expect(db.sent.filter((kind) => kind !== 'other')).to.deep.equal(['append', 'append']);
  });

  it('when no append comes within the wait, then the marks go out in a statement of their own', async () => {
    const db = recording(base);
    const journal = createSqlJournal(db.db, { ...GROUP, doneMarksWaitMs: 5 });
    await journal.append(withEntry('message:a', 1, 'entry-a'));

    await journal.markDone(['entry-a']);

    expect(await pendingIds(journal)).to.deep.equal([]);
    expect(db.sent.filter((kind) => kind !== 'other')).to.deep.equal(['append', 'done marks']);
  });

  it('when the append carrying the marks fails, then the marks still go out alone and the append fails alone', async () => {
    const db = recording(base);
    const journal = createSqlJournal(db.db, { ...GROUP, doneMarksWaitMs: 60_000 });
    await journal.append(withEntry('message:a', 1, 'entry-a'));
    const marked = journal.markDone(['entry-a']);
    db.failing.add('append');

    const failed = await journal.append(withEntry('message:b', 1, 'entry-b')).then(
      () => null,
      (error: unknown) => error,
    );
    await marked;

    expect(failed).to.be.instanceOf(Error);
    expect(await pendingIds(journal)).to.deep.equal([]);
    expect(db.sent.filter((kind) => kind !== 'other')).to.deep.equal(['append', 'append', 'done marks']);
  });

  it('when the statement deleting the marks fails, then markDone fails and the entries stay pending', async () => {
    const db = recording(base);
    const journal = createSqlJournal(db.db, { ...GROUP, doneMarksWaitMs: 5 });
    await journal.append(withEntry('message:a', 1, 'entry-a'));
    db.failing.add('done marks');

    const failed = await journal.markDone(['entry-a']).then(
      () => null,
      (error: unknown) => error,
    );

    expect(failed).to.be.instanceOf(Error);
    expect(await pendingIds(journal)).to.deep.equal(['entry-a']);
  });

  it('when marks come from several callers before an append, then one statement deletes them all and each caller is answered', async () => {
    const db = recording(base);
    const journal = createSqlJournal(db.db, { ...GROUP, doneMarksWaitMs: 60_000 });
    await journal.append(withEntry('message:a', 1, 'entry-a'));
    await journal.append(withEntry('message:b', 1, 'entry-b'));

    const marks = [journal.markDone(['entry-a']), journal.markDone(['entry-b'])];
    await journal.append(withEntry('message:c', 1, 'entry-c'));
    await Promise.all(marks);

    expect(await pendingIds(journal)).to.deep.equal(['entry-c']);
    expect(db.sent.filter((kind) => kind !== 'other')).to.deep.equal(['append', 'append', 'append']);
  });

  it('when no wait is set, then every markDone is a statement at once', async () => {
    const db = recording(base);
    const journal = createSqlJournal(db.db, GROUP);
    await journal.append(withEntry('message:a', 1, 'entry-a'));

    await journal.markDone(['entry-a']);

    expect(await pendingIds(journal)).to.deep.equal([]);
    expect(db.sent.filter((kind) => kind !== 'other')).to.deep.equal(['append', 'done marks']);
  });
});
