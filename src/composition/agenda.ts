import type { AgendaBackend } from 'agenda';
import type { Config } from '../libraries/config/config.js';
import type { Persistence } from '../libraries/persistence/persistence.js';

/**
 * On PostgreSQL, more Agenda instances that lock and run due jobs beside the main one (SCHEDULER_EXTRA_LOCKERS; none
 * on PGlite or MongoDB).
 */
export async function openAgendaLockers(
  config: Config,
  persistence: Persistence,
  onError: (error: unknown) => void,
): Promise<AgendaBackend[]> {
  if (!persistence.sql || persistence.kind !== 'postgres') return [];
  const { AgendaPostgresBackend } = await import('../scheduling/agenda-postgres-backend.js');
  const connectionString = await persistence.sql.connectionString();
  return Array.from(
    { length: config.tuning.schedulerExtraLockers },
    () =>
      new AgendaPostgresBackend({
        connectionString,
        maxConnections: config.tuning.schedulerPoolSize,
        ensureSchema: false,
        notifications: false,
        onError,
      }),
  );
}

/** Serializes the creation of Agenda's tables by nodes that start together (PostgreSQL advisory lock). */
const AGENDA_SCHEMA_LOCK = 4_242_002;

/**
 * Agenda on the journal's database: PostgreSQL (or PGlite served on a loopback port), or MongoDB. Each instance's
 * pool has SCHEDULER_POOL_SIZE connections (Agenda's backend ignored its `poolConfig` when given a connection
 * string, so every instance ran on pg's default of 10; the pools are ours now and keep that size by default).
 */
export async function openAgendaBackend(
  config: Config,
  persistence: Persistence,
  onError: (error: unknown) => void,
): Promise<AgendaBackend> {
  if (persistence.sql) {
    const { AgendaPostgresBackend } = await import('../scheduling/agenda-postgres-backend.js');
    // PGlite never delivers NOTIFY to a listener: it relies on polling
    const settings = {
      connectionString: await persistence.sql.connectionString(),
      notifications: persistence.kind !== 'pglite',
      maxConnections: config.tuning.schedulerPoolSize,
      onError,
    };
    if (persistence.kind !== 'postgres') return new AgendaPostgresBackend({ ...settings, ensureSchema: true });
    // Agenda's schema statements (CREATE ... IF NOT EXISTS, CREATE OR REPLACE FUNCTION) race when nodes start
    // together: the loser gets a unique violation in pg_catalog, an unhandled rejection in Agenda. One node at a time
    // ensures the schema under a lock; the backend the node keeps leaves the schema alone.
    const setup = new AgendaPostgresBackend({ ...settings, notifications: false, maxConnections: 1, ensureSchema: true });
    try {
      await persistence.sql.transaction(async (tx) => {
        await tx.query('SELECT pg_advisory_xact_lock($1)', [AGENDA_SCHEMA_LOCK]);
        await setup.connect();
      });
    } finally {
      await setup.disconnect();
    }
    return new AgendaPostgresBackend({ ...settings, ensureSchema: false });
  }
  const { MongoBackend } = await import('@agendajs/mongo-backend');
  return new MongoBackend({ address: config.database.mongoUrl });
}

/** Agenda's storage on the server's database for a reader of its jobs (the operator CLI never starts Agenda). */
export async function openAgendaReader(config: Config, persistence: Persistence): Promise<AgendaBackend> {
  if (persistence.sql) {
    const { AgendaPostgresBackend } = await import('../scheduling/agenda-postgres-backend.js');
    // a failed query fails the command; the pool's own errors (a connection the server ended) are not the command's
    return new AgendaPostgresBackend({
      connectionString: await persistence.sql.connectionString(),
      notifications: false,
      maxConnections: 2,
      ensureSchema: true,
      onError: () => undefined,
    });
  }
  const { MongoBackend } = await import('@agendajs/mongo-backend');
  return new MongoBackend({ address: config.database.mongoUrl });
}
