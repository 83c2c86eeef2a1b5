import { PGlite } from '@electric-sql/pglite';
import { PGLiteSocketServer } from '@electric-sql/pglite-socket';
import { createHash } from 'node:crypto';
import { existsSync, mkdirSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import pg from 'pg';
import { isDatabaseConnectionError } from '../../errors/dependency-failure.js';
import { DataDirectoryInUseError, DependencyUnavailableError } from '../../errors/internal-errors.js';

/** The SQL the adapters need, whether the database is a PostgreSQL server (pg) or PGlite in-process. */
export interface QueryOptions {
  /**
   * Send it as a named prepared statement: parsed once per connection, and after a few runs PostgreSQL may keep a
   * generic plan instead of planning every call. Worth it for a hot statement that costs more to plan than to run
   * (the journal's batch append); wrong for one whose best plan depends on its parameters or a table's changing
   * size (a generic plan is chosen once).
   */
  readonly prepare?: boolean;
}

export interface SqlQueries {
  query<R extends object = Record<string, unknown>>(
    text: string,
    params?: readonly unknown[],
    options?: QueryOptions,
  ): Promise<readonly R[]>;
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

const statementNames = new Map<string, string>();

/** A prepared statement as pg sends it: named, the name derived from the text. */
function preparedStatement(text: string, params: readonly unknown[]): pg.QueryConfig {
  let name = statementNames.get(text);
  if (name === undefined) {
    name = `gw_${createHash('sha1').update(text).digest('hex').slice(0, 20)}`;
    statementNames.set(text, name);
  }
  return { name, text, values: params as unknown[] };
}

/** A lost or refused connection becomes DependencyUnavailableError('database'); any other error stays as it is. */
function asDatabaseFailure(error: unknown): unknown {
  return isDatabaseConnectionError(error) ? new DependencyUnavailableError('database', error) : error;
}

/**
 * How long taking a new connection may wait: a server that is down refuses at once, but an unreachable one would
 * otherwise hold every query (and the request behind it) for as long as the kernel keeps trying.
 */
export const CONNECT_TIMEOUT_MS = 5_000;

/**
 * Every client and pool of the process on PostgreSQL handles its 'error' event: a connection that the server ends
 * (a restart, `pg_terminate_backend`) or that breaks emits one, and an emitter without a listener throws it as an
 * uncaught exception, which ends the process. The next query opens a new connection.
 */
export function createPostgresPool(config: pg.PoolConfig, onError: (error: unknown) => void): pg.Pool {
  const pool = new pg.Pool({ connectionTimeoutMillis: CONNECT_TIMEOUT_MS, ...config });
  pool.on('error', onError);
  return pool;
}

export async function connectPostgres(options: PostgresOptions): Promise<SqlExecutor> {
  checkSchema(options.schema);
  if (options.schema) {
    const bootstrap = new pg.Client({ connectionString: options.connectionString, connectionTimeoutMillis: CONNECT_TIMEOUT_MS });
    bootstrap.on('error', () => undefined);
    await bootstrap.connect();
    try {
      await bootstrap.query(`CREATE SCHEMA IF NOT EXISTS ${options.schema}`);
    } finally {
      await bootstrap.end();
    }
  }
  // an idle client losing its connection is dropped by the pool (the queries that need one report the outage)
  const pool = createPostgresPool(
    {
      connectionString: options.connectionString,
      max: options.poolSize,
      ...(options.schema ? { options: `-c search_path=${options.schema}` } : {}),
    },
    () => undefined,
  );
  return {
    dialect: 'postgres',
    async query<R extends object>(text: string, params: readonly unknown[] = [], options?: QueryOptions) {
      try {
        // a config object costs pg a copy per call: only a prepared statement needs one
        const result = options?.prepare
          ? await pool.query<R>(preparedStatement(text, params))
          : await pool.query<R>(text, params as unknown[]);
        return result.rows;
      } catch (error) {
        throw asDatabaseFailure(error);
      }
    },
    async script(sql: string) {
      try {
        await pool.query(sql);
      } catch (error) {
        throw asDatabaseFailure(error);
      }
    },
    async transaction<T>(work: (tx: SqlQueries) => Promise<T>) {
      let client: pg.PoolClient;
      try {
        client = await pool.connect();
      } catch (error) {
        throw asDatabaseFailure(error);
      }
      // a checked-out client has no listener of the pool's: its connection ending between two statements would
      // otherwise be an uncaught exception; the statement under way (or the next one) fails instead
      const onLost = (): void => undefined;
      client.on('error', onLost);
      try {
        await client.query('BEGIN');
        const result = await work({
          query: async <R extends object>(text: string, params: readonly unknown[] = [], options?: QueryOptions) =>
            (options?.prepare ? await client.query<R>(preparedStatement(text, params)) : await client.query<R>(text, params as unknown[]))
              .rows,
          script: async (sql: string) => {
            await client.query(sql);
          },
        });
        await client.query('COMMIT');
        return result;
      } catch (error) {
        await client.query('ROLLBACK').catch(() => undefined);
        throw asDatabaseFailure(error);
      } finally {
        client.removeListener('error', onLost);
        // the pool drops a client whose connection broke rather than handing it to the next caller
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

function isAlive(pid: number): boolean {
  try {
    process.kill(pid, 0);
    return true;
  } catch (error) {
    return (error as NodeJS.ErrnoException).code === 'EPERM';
  }
}

/**
 * Whether the directory holds a PGlite database (PostgreSQL's PG_VERSION file at its root). Opening a directory
 * that does not creates a new, empty database there.
 */
export function hasPgliteDatabase(dataDir: string): boolean {
  return existsSync(path.join(dataDir, 'PG_VERSION'));
}

/** Takes the directory's lock file (a stale one, whose process is gone, is taken over). */
function lockDataDir(dataDir: string): () => void {
  mkdirSync(dataDir, { recursive: true });
  const lockFile = path.join(dataDir, 'gateway.lock');
  for (let attempt = 0; attempt < 2; attempt++) {
    try {
      writeFileSync(lockFile, String(process.pid), { flag: 'wx' });
      return () => {
        rmSync(lockFile, { force: true });
      };
    } catch (error) {
      if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
      const holder = Number(readFileSync(lockFile, 'utf8'));
      if (Number.isInteger(holder) && holder !== process.pid && isAlive(holder)) throw new DataDirectoryInUseError(dataDir, holder);
      rmSync(lockFile, { force: true });
    }
  }
  throw new Error(`cannot lock ${dataDir}`);
}

export async function openPglite(options: PgliteOptions): Promise<SqlExecutor> {
  checkSchema(options.schema);
  const unlock = options.dataDir ? lockDataDir(options.dataDir) : () => undefined;
  let db: PGlite;
  try {
    db = options.dataDir ? await PGlite.create(options.dataDir) : await PGlite.create();
  } catch (error) {
    unlock();
    throw error;
  }
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
          query: async <R extends object>(text: string, params: readonly unknown[] = []) =>
            (await tx.query<R>(text, params as unknown[])).rows,
          script: async (sql: string) => {
            await tx.exec(sql);
          },
        }),
      );
    },
    async close() {
      if (socket) await (await socket).stop();
      await db.close();
      unlock();
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
