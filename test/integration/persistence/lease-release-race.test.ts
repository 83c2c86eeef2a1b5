import { expect } from 'chai';
import pg from 'pg';
import { openPostgresPersistence, type Persistence } from '../../../src/libraries/persistence/persistence.js';
import { RENEW_SQL } from '../../../src/libraries/persistence/sql/sql-leases.js';
import { testPostgres } from '../../helpers/postgres.js';

describe('shard leases on PostgreSQL: a renewal that began before a release', function () {
  this.timeout(60_000);
  let url: string;
  let store: Persistence;
  let renewer: pg.Client;

  before(async () => {
    url = await (await testPostgres()).createDatabase('lease_race');
    store = await openPostgresPersistence({ url, poolSize: 2, schema: 'race' });
    renewer = new pg.Client({ connectionString: url });
    await renewer.connect();
    await renewer.query('SET search_path TO race');
  });

  after(async () => {
    await renewer.end();
    await store.close();
  });

  it('when the release commits while the renewal is under way, then the renewal does not bring the lease back', async () => {
    const [lease] = await store.leases.acquire('node-a', [1], 1, 60_000);
    expect(lease).to.include({ shard: 1, owner: 'node-a' });
    // the renewal's statement time is fixed here, before the release (a renewal that waited for the row's lock)
    await renewer.query('BEGIN');
    await renewer.query('SELECT now()');
    try {
      await store.leases.release('node-a', [1]);
      const renewed = await renewer.query<{ shard: number }>(RENEW_SQL, [
        'node-a',
        JSON.stringify([{ shard: 1, epoch: lease!.epoch }]),
        60_000,
      ]);
      expect(renewed.rows, 'renewed after its release').to.deep.equal([]);
    } finally {
      await renewer.query('COMMIT');
    }
    // released for good: another node takes it at once
    const [taken] = await store.leases.acquire('node-b', [1], 1, 60_000);
    expect(taken).to.include({ shard: 1, owner: 'node-b' });
  });
});
