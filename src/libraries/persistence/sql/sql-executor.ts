import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import pg from 'pg';

/** The SQL the adapters need, whether the database is a PostgreSQL server (pg) or PGlite in-process. */
export interface SqlQueries {
  query<R extends object = Record<string, unknown>>(text: string, params?: readonly unknown[]): Promise<readonly R[]>;
  /** Several statements without parameters (migrations). */
  script(sql: string): Promise<void>;
}

export interface SqlExecutor extends SqlQueries {
  /** Runs `work` in one transaction on one connection. */
  transaction<T>(work: (tx: SqlQueries) => Promise<T>): Promise<T>;
  close(): Promise<void>;
  readonly dialect: 'postgres' | 'pglite';
  /**
   * A PostgreSQL connection string to this database, for collaborators that bring their own driver (Agenda).
   * PGlite serves itself on a loopback port for that, started on first call.
   */
  connectionString(): Promise<string>;
}

const SCHEMA_NAME = /^[a-z_][a-z0-9_]*$/;

function checkSchema(schema: string | undefined): void {
  if (schema !== undefined && !SCHEMA_NAME.test(schema)) throw new Error(`invalid schema name ${schema}`);
}

export interface PostgresOptions {
  readonly connectionString: string;
  readonly poolSize: number;
  /** Tables live in this schema (tests isolate themselves this way); created when missing. */
  readonly schema?: string;
}

export async function connectPostgres(options: PostgresOptions): Promise<SqlExecutor> {
  checkSchema(options.schema);
  if (options.schema) {
    const bootstrap = new pg.Client({ connectionString: options.connectionString });
    await bootstrap.connect();
    try {
      await bootstrap.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`);
    } finally {
      await bootstrap.end();
    }
  }
  const pool = new pg.Pool({
    connectionString: options.connectionString,
    max: options.poolSize,
    ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
  });
  // an idle client losing its connection must not crash the process; the next query reconnects
  pool.on('error', () => undefined);
  return {
    dialect: 'postgres',
    async query<R extends object>(text: string, params: readonly unknown[] = []) {
      const result = await pool.query<R>(text, params as unknown[]);
      return result.rows;
    },
    async script(sql: string) {
      await pool.query(sql);
    },
    async transaction<T>(work: (tx: SqlQueries) => Promise<T>) {
      const client = await pool.connect();
      try {
        await client.query('BEGIN');
        const result = await work({
          query: async <R extends object>(text: string, params: readonly unknown[] = []) => (await client.query<R>(text, params as unknown[])).rows,
          script: async (sql: string) => {
            await client.query(sql);
          },
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw error;
      } finally {
        client.release();
      }
    },
    close: () => pool.end(),
    connectionString: () => Promise.resolve(options.connectionString),
  };
}

export interface PgliteOptions {
  /** Directory of the database files; undefined keeps it in memory. */
  readonly dataDir?: string;
  readonly schema?: string;
}

export async function openPglite(options: PgliteOptions): Promise<SqlExecutor> {
  checkSchema(options.schema);
  const db = options.dataDir ? await PGlite.create(options.dataDir) : await PGlite.create();
  let socket: Promise<PGLiteSocketServer> | null = null;
  if (options.schema) {
    await db.exec(`CREATE SCHEMA IF NOT EXISTS ${options.schema}; SET search_path TO ${options.schema}`);
  }
  return {
    dialect: 'pglite',
    async query<R extends object>(text: string, params: readonly unknown[] = []) {
      const result = await db.query<R>(text, params as unknown[]);
      return result.rows;
    },
    async script(sql: string) {
      await db.exec(sql);
    },
    async transaction<T>(work: (tx: SqlQueries) => Promise<T>) {
      return db.transaction(async (tx) =>
        work({
          query: async <R extends object>(text: string, params: readonly unknown[] = []) => (await tx.query<R>(text, params as unknown[])).rows,
          script: async (sql: string) => {
            await tx.exec(sql);
          },
        }),
      );
    },
    async close() {
      if (socket) await (await socket).stop();
      await db.close();
    },
    async connectionString() {
      socket ??= (async () => {
        // a handful of pooled connections; PGlite still runs one query at a time
        const server = new PGLiteSocketServer({ db, host: '127.0.0.1', port: 0, maxConnections: 16 });
        await server.start();
        return server;
      })();
      const server = await socket;
      return `postgresql://postgres@${server.getServerConn()}/postgres?sslmode=disable`;
    },
  };
}
