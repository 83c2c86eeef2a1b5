import type { Config } from '../libraries/config/config.js';
import { openPglitePersistence, openPostgresPersistence, type Persistence } from '../libraries/persistence/persistence.js';

/** The configured database, claimed for the configured environment (one database serves one environment). */
export async function openPersistence(config: Config): Promise<Persistence> {
  const persistence = await openConfiguredPersistence(config);
  try {
    await persistence.claimEnvironment(config.environment);
  } catch (error) {
    await persistence.close().catch(() => undefined);
    throw error;
  }
  return persistence;
}

async function openConfiguredPersistence(config: Config): Promise<Persistence> {
  if (config.mode === 'embedded') return openPglitePersistence({ dataDir: config.database.dataDir });
  if (config.database.url) return openPostgresPersistence({ url: config.database.url, poolSize: config.database.poolSize });
  if (config.database.mongoUrl) {
    const { openMongoPersistence } = await import('../libraries/persistence/mongo/mongo-persistence.js');
    return openMongoPersistence({ url: config.database.mongoUrl });
  }
  throw new Error('server mode needs DATABASE_URL (PostgreSQL) or MONGO_URL (MongoDB)');
}
