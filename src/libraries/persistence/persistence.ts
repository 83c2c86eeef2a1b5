import type { GatewayEnvironment } from '../config/config.js';
import type { DeadLetters } from './dead-letters-port.js';
import { checkEnvironmentClaim } from './environment-claim.js';
import type { Directory } from './directory-port.js';
import type { LeaseStore } from './lease-port.js';
import { createSqlLeases } from './sql/sql-leases.js';
import type { Journal, Outbox } from './journal-port.js';
import { migrate } from './sql/migrations.js';
import { connectPostgres, openPglite, type SqlExecutor } from './sql/sql-executor.js';
import { createSqlDirectory } from './sql/sql-directory.js';
import { createSqlDeadLetters } from './sql/sql-dead-letters.js';
import { createSqlJournal, DEFAULT_SQL_JOURNAL_OPTIONS, type SqlJournalOptions } from './sql/sql-journal.js';

/** The whole persistence port as the composition root wires it: one adapter behind all four parts. */
export interface Persistence {
  readonly kind: 'postgres' | 'pglite' | 'mongodb';
  readonly journal: Journal;
  readonly outbox: Outbox;
  readonly directory: Directory;
  readonly deadLetters: DeadLetters;
  /** Shard leases for the cluster (server mode). */
  readonly leases: LeaseStore;
  /**
   * Records the environment this database serves when none is recorded yet; refuses (EnvironmentMismatchError)
   * one recorded for the other environment. Never overwrites.
   */
  claimEnvironment(environment: GatewayEnvironment): Promise<void>;
  /** Resolves when the database answers; for health checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
  /** The SQL connection, for SQL-only collaborators (Agenda's backend, leases). */
  readonly sql?: SqlExecutor;
}

export async function sqlPersistence(
  db: SqlExecutor,
  journalOptions: SqlJournalOptions = DEFAULT_SQL_JOURNAL_OPTIONS,
): Promise<Persistence> {
  await migrate(db);
  const journal = createSqlJournal(db, journalOptions);
  return {
    kind: db.dialect,
    journal,
    outbox: journal,
    directory: createSqlDirectory(db),
    deadLetters: createSqlDeadLetters(db),
    leases: createSqlLeases(db),
    claimEnvironment: async (environment) => {
      await db.query(`INSERT INTO gateway_settings (name, value) VALUES ('environment', $1) ON CONFLICT (name) DO NOTHING`, [environment]);
      const rows = await db.query<{ value: string }>(`SELECT value FROM gateway_settings WHERE name = 'environment'`);
      checkEnvironmentClaim(environment, rows[0]?.value ?? null);
    },
    ping: async () => {
      await db.query('SELECT 1');
    },
    close: () => db.close(),
    sql: db,
  };
}

export interface PostgresPersistenceOptions {
  readonly url: string;
  readonly poolSize: number;
  readonly schema?: string;
  readonly journal?: SqlJournalOptions;
}

export async function openPostgresPersistence(options: PostgresPersistenceOptions): Promise<Persistence> {
  const db = await connectPostgres({
    connectionString: options.url,
    poolSize: options.poolSize,
    ...(options.schema ? { schema: options.schema } : {}),
  });
  try {
    return await sqlPersistence(db, options.journal);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
}

export interface PglitePersistenceOptions {
  /** Undefined keeps the database in memory. */
  readonly dataDir?: string;
  readonly schema?: string;
  readonly journal?: SqlJournalOptions;
}

export async function openPglitePersistence(options: PglitePersistenceOptions): Promise<Persistence> {
  const db = await openPglite({
    ...(options.dataDir ? { dataDir: options.dataDir } : {}),
    ...(options.schema ? { schema: options.schema } : {}),
  });
  try {
    return await sqlPersistence(db, options.journal);
  } catch (error) {
    await db.close().catch(() => undefined);
    throw error;
  }
}
