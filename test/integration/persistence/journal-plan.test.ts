import { expect } from 'chai';
import pg from 'pg';
import { migrate } from '../../../src/libraries/persistence/sql/migrations.js';
import { connectPostgres } from '../../../src/libraries/persistence/sql/sql-executor.js';
import { APPEND_BATCH_SQL } from '../../../src/libraries/persistence/sql/sql-journal.js';
import { testPostgres } from '../../helpers/postgres.js';

/**
 * The plan PostgreSQL keeps for the journal's batch append (a prepared statement: one generic plan for every batch).
 * Its cost must not grow with the journal: every check against the journal is a probe by its primary key, whatever
 * the journal's size (a small journal once got a hash join over a scan of all of it, on every send's batch).
 */
describe('SQL journal: the batch append probes the journal by key, never scans it', function () {
  this.timeout(120_000);
  let client: pg.Client;
  let held = 0;

  before(async () => {
    const url = await (await testPostgres()).createDatabase('journal_plan');
    const db = await connectPostgres({ connectionString: url, poolSize: 1 });
    try {
      await migrate(db);
    } finally {
      await db.close();
    }
    client = new pg.Client({ connectionString: url });
    await client.connect();
    await client.query('SET plan_cache_mode = force_generic_plan');
  });

  after(async () => {
    await (client as pg.Client | undefined)?.end();
  });

  async function journalHolding(records: number, { analyse = true } = {}): Promise<void> {
    await client.query(
      `INSERT INTO journal (key, seq, events, at)
       SELECT 'message:m' || i, 1, '[{"type":"accepted"}]'::jsonb, 1780000000000 + i FROM generate_series($1::int + 1, $2::int) AS i`,
      [held, records],
    );
    held = records;
    if (analyse) await client.query('ANALYZE journal');
  }

  async function planOfBatch(): Promise<string> {
    await client.query('DEALLOCATE ALL');
    await client.query(`PREPARE append_batch (jsonb, jsonb, jsonb, jsonb, jsonb, text[]) AS ${APPEND_BATCH_SQL}`);
    const appends = [{ key: 'wallet:w1', seq: 7, events: [], at: 1, fence_shard: null, fence_owner: null, fence_epoch: null }];
    const companions = [{ parent_key: 'wallet:w1', parent_seq: 7, key: 'message:new', seq: 1, events: [], at: 1 }];
    const parameters = [JSON.stringify(appends), '[]', '[]', '[]', JSON.stringify(companions), '{outbox-entry-1}'].map((value) =>
      client.escapeLiteral(value),
    );
    const rows = await client.query<{ 'QUERY PLAN': string }>(`EXPLAIN EXECUTE append_batch (${parameters.join(', ')})`);
    return rows.rows.map((row) => row['QUERY PLAN']).join('\n');
  }

  // first: a new database, whose journal has never been analysed (a plan made then is kept while the journal grows)
  for (const records of [0, 200]) {
    it(`when the journal holds ${String(records)} records and has no statistics yet, then the plan of a batch with a companion still reads it only through its primary key`, async () => {
      await journalHolding(records, { analyse: false });
      const plan = await planOfBatch();
      expect(plan, 'the plan of the append').to.include('Insert on journal');
      expect(plan).not.to.match(/Seq Scan on journal/);
      expect(plan, 'done marks').not.to.match(/Seq Scan on outbox/);
    });
  }

  for (const records of [2_000, 10_000, 50_000]) {
    it(`when a batch carries an append with a companion and the journal holds ${String(records)} records, then its plan reads the journal only through its primary key`, async () => {
      await journalHolding(records);
      const plan = await planOfBatch();
      expect(plan, 'the plan of the append').to.include('Insert on journal');
      expect(plan).not.to.match(/Seq Scan on journal/);
      expect(plan, 'done marks').not.to.match(/Seq Scan on outbox/);
    });
  }
});
