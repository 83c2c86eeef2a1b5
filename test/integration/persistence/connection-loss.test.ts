import { expect } from 'chai';
import pg from 'pg';
import { connectPostgres, type SqlExecutor } from '../../../src/libraries/persistence/sql/sql-executor.js';
import { AgendaPostgresBackend } from '../../../src/scheduling/agenda-postgres-backend.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/eventually.js';
import { DependencyUnavailableError } from '../../../src/libraries/errors/internal-errors.js';

/**
 * Connections the server ends under the process (as a restart does), one at a time by `pg_terminate_backend`: an
 * idle pooled connection, one inside a transaction, Agenda's. None may become an uncaught exception (mocha fails
 * the running test on one); the operation under way fails as the database being unavailable, the next one works.
 */
describe('PostgreSQL connections ended by the server', function () {
  this.timeout(60_000);
  let url: string;
  let admin: pg.Client;

  before(async () => {
    url = await (await testPostgres()).createDatabase('connection_loss');
    admin = new pg.Client({ connectionString: url });
    await admin.connect();
  });

  after(async () => {
    await admin.end();
  });

  /** Ends every other session on the test database, as a fast shutdown does; how many it ended. */
  async function terminateOthers(applicationName: string): Promise<number> {
    const rows = await admin.query<{ ended: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE datname = current_database() AND pid <> pg_backend_pid() AND application_name = $1',
      [applicationName],
    );
    return rows.rows.filter((r) => r.ended).length;
  }

  const withName = (name: string): string => `${url}?application_name=${name}`;

  describe('the SQL executor', () => {
    let db: SqlExecutor;
    before(async () => {
      db = await connectPostgres({ connectionString: withName('executor'), poolSize: 3 });
    });
    after(async () => {
      await db.close();
    });

    it('when its idle connections are ended, then the process goes on and the next query reconnects', async () => {
      await Promise.all([db.query('SELECT pg_sleep(0.05)'), db.query('SELECT pg_sleep(0.05)')]);
      expect(await terminateOthers('executor')).to.be.greaterThan(0);
      // give the clients time to read the server's goodbye and emit their 'error'
      await new Promise((resolve) => setTimeout(resolve, 200));

      const rows = await eventually(async () => db.query<{ one: number }>('SELECT 1 AS one'), 5_000, 'a query after the connections ended');
      expect(rows).to.deep.equal([{ one: 1 }]);
    });

    it('when the connection of an open transaction is ended, then the transaction fails as the database unavailable', async () => {
      let failure: unknown = null;
      await db
        .transaction(async (tx) => {
          await tx.query('SELECT 1');
          // the transaction waits between two statements while its connection ends (its 'error' event fires here)
          expect(await terminateOthers('executor')).to.equal(1);
          await new Promise((resolve) => setTimeout(resolve, 200));
          await tx.query('SELECT 2');
        })
        .catch((error: unknown) => {
          failure = error;
        });

      expect(failure).to.be.instanceOf(DependencyUnavailableError);
      expect((failure as DependencyUnavailableError).dependency).to.equal('database');
      expect(await db.query<{ two: number }>('SELECT 2 AS two')).to.deep.equal([{ two: 2 }]);
    });
  });

  describe("Agenda's backend", () => {
    it('when its pooled and LISTEN connections are ended, then it reports them and keeps working', async () => {
      const errors: unknown[] = [];
      const backend = new AgendaPostgresBackend({
        connectionString: withName('agenda'),
        maxConnections: 2,
        notifications: true,
        ensureSchema: true,
        onError: (error) => errors.push(error),
      });
      try {
        await backend.connect();
        // two pooled connections: one becomes the LISTEN connection, the other stays idle in the pool
        await Promise.all([backend.repository.queryJobs({ limit: 1 }), backend.repository.queryJobs({ limit: 1 })]);
        await backend.notificationChannel!.connect();
        expect(backend.notificationChannel!.state).to.equal('connected');

        expect(await terminateOthers('agenda')).to.equal(2);

        await eventually(async () => Promise.resolve(errors.length >= 2), 5_000, 'both connections reported');
        // the channel listens again on a new connection; queries work on new ones
        await eventually(async () => Promise.resolve(backend.notificationChannel!.state === 'connected'), 10_000, 'LISTEN again');
        expect(await backend.repository.queryJobs({ limit: 1 })).to.have.property('jobs');
      } finally {
        await backend.notificationChannel!.disconnect();
        await backend.disconnect();
      }
    });
  });
});
