import { sqlPersistence } from '../../../src/libraries/persistence/persistence.js';
import { openPglite, type SqlExecutor } from '../../../src/libraries/persistence/sql/sql-executor.js';
import { persistenceContract } from './persistence-contract.js';

describe('persistence contract: PGlite (in memory)', function () {
  this.timeout(60_000);
  // opening PGlite costs seconds: one instance for the suite, a fresh schema per test
  let db: SqlExecutor;
  let schemaCounter = 0;
  before(async () => {
    db = await openPglite({});
  });
  after(async () => {
    await db.close();
  });
  persistenceContract(
    async () => {
      const schema = `contract_${++schemaCounter}`;
      await db.script(`CREATE SCHEMA ${schema}; SET search_path TO ${schema}`);
      const persistence = await sqlPersistence(db);
      return { ...persistence, close: () => Promise.resolve() };
    },
    { writesCompanions: true },
  );
});
