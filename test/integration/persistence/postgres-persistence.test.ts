import { openPostgresPersistence } from '../../../src/libraries/persistence/persistence.js';
import { testPostgres } from '../../helpers/postgres.js';
import { persistenceContract } from './persistence-contract.js';

describe('persistence contract: PostgreSQL (private server)', function () {
  this.timeout(60_000);
  let url: string;
  let schemaCounter = 0;
  before(async () => {
    url = await (await testPostgres()).createDatabase('contract');
  });
  persistenceContract(() => openPostgresPersistence({ url, poolSize: 5, schema: `contract_${++schemaCounter}` }), {
    writesCompanions: true,
  });
});

describe('persistence contract: PostgreSQL without group commit', function () {
  this.timeout(60_000);
  let url: string;
  let schemaCounter = 0;
  before(async () => {
    url = await (await testPostgres()).createDatabase('contract_single');
  });
  persistenceContract(
    () =>
      openPostgresPersistence({
        url,
        poolSize: 5,
        schema: `single_${++schemaCounter}`,
        journal: { groupCommit: false, maxBatch: 1, maxConcurrentBatches: 1 },
      }),
    { writesCompanions: true },
  );
});
