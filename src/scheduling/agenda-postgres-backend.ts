import { PostgresBackend, PostgresNotificationChannel } from '@agendajs/postgres-backend';
import type { NotificationChannel } from 'agenda';
import type pg from 'pg';
import { createPostgresPool } from '../libraries/persistence/sql/sql-executor.js';

export interface AgendaPostgresOptions {
  readonly connectionString: string;
  /** Connections of this backend's pool. */
  readonly maxConnections: number;
  /** LISTEN/NOTIFY for prompt pick-up of new jobs (PGlite never delivers notifications: it relies on polling). */
  readonly notifications: boolean;
  /** Create Agenda's tables when missing (one node at a time: see the gateway node). */
  readonly ensureSchema: boolean;
  /** A connection of the pool or the LISTEN connection failed (the database restarting, or unreachable). */
  readonly onError: (error: unknown) => void;
}

/**
 * Agenda's PostgreSQL storage on a pool of ours. The backend's own pool has no 'error' listener, so a database
 * restart ended the process (an idle connection's "terminating connection due to administrator command" thrown as
 * an uncaught exception), and so did its LISTEN channel, which re-emits its connection's errors with no listener.
 * Here both report to `onError`; queries on a lost connection fail and the next ones reconnect; the LISTEN
 * connection is re-established by the channel (every 100 ms while the database is away), and Agenda's polling
 * (`processEvery`) finds due jobs meanwhile.
 */
export class AgendaPostgresBackend extends PostgresBackend {
  readonly #pool: pg.Pool;
  readonly #channel: PostgresNotificationChannel | undefined;
  #closed = false;

  constructor(options: AgendaPostgresOptions) {
    const pool = createPostgresPool({ connectionString: options.connectionString, max: options.maxConnections }, options.onError);
    super({ pool, ensureSchema: options.ensureSchema, disableNotifications: true });
    this.#pool = pool;
    if (options.notifications) {
      const channel = new PostgresNotificationChannel({ pool });
      channel.on('error', options.onError);
      this.#channel = channel;
    }
  }

  override get notificationChannel(): NotificationChannel | undefined {
    return this.#channel;
  }

  /** Closes the pool too (a pool passed in is not the backend's to close). Idempotent. */
  override async disconnect(): Promise<void> {
    await super.disconnect();
    if (this.#closed) return;
    this.#closed = true;
    await this.#pool.end();
  }
}
