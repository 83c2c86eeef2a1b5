import { expect } from 'chai';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { MIGRATIONS, migrate } from '../../../src/libraries/persistence/sql/migrations.js';
import { connectPostgres, openPglite, type SqlExecutor } from '../../../src/libraries/persistence/sql/sql-executor.js';
import { createDatabaseBus } from '../../../src/libraries/transport/database-bus.js';
import { ACK, type Consumer, type Transport } from '../../../src/libraries/transport/transport-port.js';
import { testPostgres } from '../../helpers/postgres.js';
import { recorder, transportContract, waitUntil } from './transport-contract.js';

const emptyBus = (db: SqlExecutor): Promise<void> => db.script('TRUNCATE bus_deliveries, bus_messages, bus_consumers');

describe('transport contract: database bus on PGlite (in memory)', function () {
  this.timeout(120_000);
  // opening PGlite costs seconds: one instance for the suite, emptied before each test
  let db: SqlExecutor;
  before(async () => {
    db = await openPglite({});
    await migrate(db, MIGRATIONS);
  });
  after(async () => {
    await db.close();
  });
  // several "processes" share the database, as several nodes would
  transportContract({ open: () => Promise.resolve(createDatabaseBus({ db })), reset: () => emptyBus(db) });
});

describe('transport contract: database bus on PostgreSQL (private server)', function () {
  this.timeout(120_000);
  let url: string;
  let admin: SqlExecutor;
  const pools: SqlExecutor[] = [];
  before(async () => {
    url = await (await testPostgres()).createDatabase('bus');
    admin = await connectPostgres({ connectionString: url, poolSize: 2 });
    await migrate(admin, MIGRATIONS);
  });
  after(async () => {
    await Promise.all(pools.splice(0).map((p) => p.close()));
    await admin.close();
  });
  transportContract({
    // each "process" has its own pool, as separate nodes would
    open: async () => {
      const pool = await connectPostgres({ connectionString: url, poolSize: 5 });
      pools.push(pool);
      return createDatabaseBus({ db: pool });
    },
    reset: () => emptyBus(admin),
  });
});

describe('database bus', function () {
  this.timeout(120_000);
  let db: SqlExecutor;
  let bus: Transport | null = null;
  const consumers: Consumer[] = [];
  before(async () => {
    db = await openPglite({});
    await migrate(db, MIGRATIONS);
  });
  after(async () => {
    await db.close();
  });
  beforeEach(() => emptyBus(db));
  afterEach(async () => {
    await Promise.all(consumers.splice(0).map((c) => c.stop()));
    await bus?.close();
    bus = null;
  });

  it('when an acknowledged id is published again within the dedupe window, then it is not delivered again; after the window it is', async () => {
    const clock = createManualClock(Date.now());
    bus = createDatabaseBus({ db, clock, purgeIntervalMs: 20, dedupeWindowMs: 120_000 });
    const r = recorder();
    consumers.push(
      await bus.consume({
        stream: 'webhooks',
        filter: 'webhook.jobs.>',
        durable: 'webhooks',
        concurrency: 2,
        ackWaitMs: 5_000,
        handler: r.handler,
      }),
    );
    await bus.publish('webhook.jobs.m1', { attempt: 1 }, { id: 'evt-1' });
    await waitUntil(() => r.received.length === 1, 'the first publish is delivered');
    const settled = await db.query<{ n: number }>('SELECT count(*)::int AS n FROM bus_deliveries WHERE done_at IS NOT NULL');
    expect(settled[0]!.n).to.equal(1);

    clock.advance(60_000);
    await bus.publish('webhook.jobs.m1', { attempt: 2 }, { id: 'evt-1' });
    await new Promise((resolve) => setTimeout(resolve, 200));
    expect(r.received).to.have.length(1);

    clock.advance(61_000); // past the window: the purge forgets the id
    await waitForPurge(db, 'evt-1');
    await bus.publish('webhook.jobs.m1', { attempt: 3 }, { id: 'evt-1' });
    await waitUntil(() => r.received.length === 2, 'the id is delivered again');
    expect(r.received[1]!.payload).to.deep.equal({ attempt: 3 });
  });

  it('when a message is still pending for a durable, then the purge keeps it whatever its age (up to the max age)', async () => {
    const clock = createManualClock(Date.now());
    bus = createDatabaseBus({ db, clock, purgeIntervalMs: 20, dedupeWindowMs: 1_000, maxAgeMs: 100_000 });
    // a durable that exists but is not running (its process is down)
    consumers.push(
      await bus.consume({
        stream: 'dispatch',
        filter: 'sms.dispatch.>',
        durable: 'offline',
        concurrency: 1,
        ackWaitMs: 1_000,
        handler: () => Promise.resolve(ACK),
      }),
    );
    await consumers.pop()!.stop();
    await bus.publish('sms.dispatch.simulator', {}, { id: 'pending-1' });
    clock.advance(50_000);
    await new Promise((resolve) => setTimeout(resolve, 150));
    expect(await storedIds(db)).to.deep.equal(['pending-1']);
    clock.advance(60_000);
    await waitForPurge(db, 'pending-1');
  });

  it('when a publish has no stream for its subject, then nothing is stored', async () => {
    bus = createDatabaseBus({ db });
    const error = await bus.publish('other.subject', {}, { id: 'x' }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(Error);
    expect(await storedIds(db)).to.deep.equal([]);
  });
});

async function storedIds(db: SqlExecutor): Promise<string[]> {
  return (await db.query<{ id: string }>('SELECT id FROM bus_messages ORDER BY id')).map((row) => row.id);
}

async function waitForPurge(db: SqlExecutor, id: string): Promise<void> {
  const deadline = Date.now() + 5_000;
  while ((await storedIds(db)).includes(id)) {
    if (Date.now() > deadline) throw new Error(`${id} was not purged`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
