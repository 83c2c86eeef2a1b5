import { MongoClient } from 'mongodb';
import { checkEnvironmentClaim } from '../environment-claim.js';
import type { Persistence } from '../persistence.js';
import { collectionsOf, ensureIndexes } from './mongo-collections.js';
import { createMongoDeadLetters } from './mongo-dead-letters.js';
import { createMongoDirectory } from './mongo-directory.js';
import { isDuplicateKey } from './mongo-errors.js';
import { createMongoJournal, DEFAULT_MONGO_JOURNAL_OPTIONS, type MongoJournalOptions } from './mongo-journal.js';
import { createMongoLeases } from './mongo-leases.js';

/**
 * The MongoDB adapter of the persistence port. It passes the same contract suite as the SQL
 * adapter (test/integration/persistence/persistence-contract.ts, run when TEST_MONGO_URL is set).
 *
 * A standalone `mongod` has no multi-document transactions, so everything that must be atomic lives in one
 * document: an append (its events and the outbox entries they cause) is one `journal` document, and a merchant's
 * price list is an array inside the merchant document.
 */

export interface MongoPersistenceOptions {
  readonly url: string;
  /** Defaults to the database named in the connection string (the driver's default when it names none). */
  readonly dbName?: string;
  readonly journal?: MongoJournalOptions;
}

export async function openMongoPersistence(options: MongoPersistenceOptions): Promise<Persistence> {
  const client = new MongoClient(options.url);
  try {
    await client.connect();
    const db = client.db(options.dbName);
    const collections = collectionsOf(db);
    await ensureIndexes(collections);
    const journal = createMongoJournal(collections, options.journal ?? DEFAULT_MONGO_JOURNAL_OPTIONS);
    return {
      kind: 'mongodb',
      journal,
      outbox: journal,
      directory: createMongoDirectory(collections),
      deadLetters: createMongoDeadLetters(collections),
      leases: createMongoLeases(collections),
      claimEnvironment: async (environment) => {
        try {
          await collections.settings.updateOne({ _id: 'environment' }, { $setOnInsert: { value: environment } }, { upsert: true });
        } catch (error) {
          // two first opens at once: one upsert inserts, the other meets its _id; what counts is what is recorded
          if (!isDuplicateKey(error)) throw error;
        }
        checkEnvironmentClaim(environment, (await collections.settings.findOne({ _id: 'environment' }))?.value ?? null);
      },
      ping: async () => {
        await db.command({ ping: 1 });
      },
      close: () => client.close(),
    };
  } catch (error) {
    await client.close().catch(() => undefined);
    throw error;
  }
}
