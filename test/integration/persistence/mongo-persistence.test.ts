import { MongoClient } from 'mongodb';
import { openMongoPersistence } from '../../../src/libraries/persistence/mongo/mongo-persistence.js';
import type { Persistence } from '../../../src/libraries/persistence/persistence.js';
import { persistenceContract } from './persistence-contract.js';

/**
 * The persistence contract against MongoDB. No MongoDB server can be installed on the build machines
 * (docs/architecture.md, "The persistence port"), so this runs only when TEST_MONGO_URL names one — as the `mongo-contract` CI workflow
 * does with a `mongo:7` service. Each test gets a fresh database, dropped after it.
 */
const url = process.env.TEST_MONGO_URL;

if (url) {
  const suites = [
    { title: 'persistence contract: MongoDB', prefix: 'contract' },
    {
      title: 'persistence contract: MongoDB without group commit',
      prefix: 'single',
      journal: { groupCommit: false, maxBatch: 1, maxConcurrentBatches: 1 },
    },
  ] as const;

  for (const suite of suites) {
    describe(suite.title, function () {
      this.timeout(60_000);
      let admin: MongoClient | undefined;
      let counter = 0;
      before(async () => {
        admin = await new MongoClient(url).connect();
      });
      after(async () => {
        await admin?.close();
      });
      persistenceContract(
        async (): Promise<Persistence> => {
          const dbName = `${suite.prefix}_${process.pid}_${Date.now()}_${++counter}`;
          const persistence = await openMongoPersistence({ url, dbName, ...('journal' in suite ? { journal: suite.journal } : {}) });
          return {
            ...persistence,
            close: async () => {
              try {
                await admin?.db(dbName).dropDatabase();
              } finally {
                await persistence.close();
              }
            },
          };
        },
        { writesCompanions: false },
      );
    });
  }
} else {
  // reported as pending, with the reason in the title, rather than silently absent
  describe('persistence contract: MongoDB (skipped: TEST_MONGO_URL is not set)', function () {
    before(function () {
      this.skip();
    });
    it('runs the persistence contract', () => {
      throw new Error('unreachable: the suite is skipped when TEST_MONGO_URL is not set');
    });
  });
}
