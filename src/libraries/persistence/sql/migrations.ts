import { busMigration } from './bus-migration.js';
import type { SqlExecutor } from './sql-executor.js';

/**
 * Versioned schema migrations, applied in order at start. A migration is never edited once released: add a new
 * one. An advisory lock makes nodes that start together apply each migration once.
 */
export interface Migration {
  readonly version: number;
  readonly name: string;
  readonly sql: string;
}

export const MIGRATIONS: readonly Migration[] = [
  {
    version: 1,
    name: 'journal, snapshots, outbox, directory, shard leases',
    sql: `
      CREATE TABLE journal (
        key    text   NOT NULL,
        seq    bigint NOT NULL,
        events jsonb  NOT NULL,
        at     bigint NOT NULL,
        PRIMARY KEY (key, seq)
      );
      CREATE TABLE snapshots (
        key   text PRIMARY KEY,
        seq   bigint NOT NULL,
        state jsonb  NOT NULL,
        at    bigint NOT NULL
      );
      CREATE TABLE outbox (
        id         text PRIMARY KEY,
        key        text    NOT NULL,
        seq        bigint  NOT NULL,
        topic      text    NOT NULL,
        payload    jsonb   NOT NULL,
        shard      integer NOT NULL,
        created_at bigint  NOT NULL
      );
      CREATE INDEX outbox_by_shard_and_age ON outbox (shard, created_at);
      CREATE TABLE merchants (
        id              text PRIMARY KEY,
        name            text    NOT NULL,
        timezone        text    NOT NULL,
        default_country text    NOT NULL,
        currency        text    NOT NULL,
        locale          text    NOT NULL,
        currency_symbol text,
        unit_price      bigint,
        prepaid_wallet  boolean NOT NULL DEFAULT false,
        postpaid_wallet boolean NOT NULL DEFAULT false,
        created_at      bigint  NOT NULL
      );
      CREATE TABLE pricing_rows (
        merchant_id          text   NOT NULL REFERENCES merchants (id),
        country_calling_code text   NOT NULL,
        network_prefix       text   NOT NULL,
        price                bigint NOT NULL CHECK (price > 0),
        carrier              text   NOT NULL,
        PRIMARY KEY (merchant_id, country_calling_code, network_prefix)
      );
      CREATE TABLE api_keys (
        key_id      text PRIMARY KEY,
        merchant_id text   NOT NULL REFERENCES merchants (id),
        environment text   NOT NULL,
        key_hash    text   NOT NULL UNIQUE,
        display     text   NOT NULL,
        created_at  bigint NOT NULL,
        deleted_at  bigint
      );
      CREATE INDEX api_keys_by_merchant ON api_keys (merchant_id);
      CREATE TABLE message_owners (
        message_id  text PRIMARY KEY,
        merchant_id text   NOT NULL,
        created_at  bigint NOT NULL
      );
      CREATE TABLE shard_leases (
        shard      integer PRIMARY KEY,
        owner      text        NOT NULL,
        epoch      bigint      NOT NULL,
        expires_at timestamptz NOT NULL
      );
    `,
  },
  busMigration,
  {
    version: 3,
    name: 'webhook dead letters',
    sql: `
      CREATE TABLE webhook_dead_letters (
        id          text PRIMARY KEY,
        event_id    text    NOT NULL,
        merchant_id text    NOT NULL,
        key_id      text    NOT NULL,
        url         text    NOT NULL,
        auth        text    NOT NULL,
        event       jsonb   NOT NULL,
        attempts    integer NOT NULL,
        reason      text    NOT NULL,
        last_status integer,
        last_error  text,
        dropped_at  bigint  NOT NULL
      );
      CREATE INDEX webhook_dead_letters_by_merchant ON webhook_dead_letters (merchant_id, dropped_at);
    `,
  },
  {
    version: 4,
    name: 'outbox by topic and age',
    // the relay asks per topic for entries older than a grace period (24 h for receipt deadlines)
    sql: `CREATE INDEX outbox_by_topic_and_age ON outbox (topic, created_at);`,
  },
  {
    version: 5,
    name: 'cluster nodes',
    sql: `
      CREATE TABLE cluster_nodes (
        node_id    text PRIMARY KEY,
        expires_at timestamptz NOT NULL
      );
    `,
  },
  {
    version: 6,
    name: 'outbox as a queue table',
    // The relay always asks by topic: the topic index alone serves it, with the node's shards as a filter. Beside
    // it, the shard index made the planner intersect both (one probe per owned shard, 1 024 on a single node), and
    // it cost every insert and delete. Rows live for milliseconds, so dead ones are vacuumed away early.
    sql: `
      DROP INDEX outbox_by_shard_and_age;
      ALTER TABLE outbox SET (autovacuum_vacuum_scale_factor = 0, autovacuum_vacuum_threshold = 2000, autovacuum_vacuum_cost_delay = 0);
    `,
  },
  {
    version: 7,
    name: 'gateway settings (the environment the database serves)',
    // written once by the first node to open the database; see Persistence.claimEnvironment
    sql: `
      CREATE TABLE gateway_settings (
        name  text PRIMARY KEY,
        value text NOT NULL
      );
    `,
  },
];

const MIGRATION_LOCK = 4_242_001;

export async function migrate(db: SqlExecutor, migrations: readonly Migration[] = MIGRATIONS): Promise<number[]> {
  return db.transaction(async (tx) => {
    await tx.query('SELECT pg_advisory_xact_lock($1)', [MIGRATION_LOCK]);
    await tx.query(`CREATE TABLE IF NOT EXISTS schema_migrations (
      version integer PRIMARY KEY, name text NOT NULL, applied_at timestamptz NOT NULL DEFAULT now())`);
    const rows = await tx.query<{ version: number }>('SELECT version FROM schema_migrations');
    const applied = new Set(rows.map((r) => r.version));
    const done: number[] = [];
    for (const migration of [...migrations].sort((a, b) => a.version - b.version)) {
      if (applied.has(migration.version)) continue;
      await tx.script(migration.sql);
      await tx.query('INSERT INTO schema_migrations (version, name) VALUES ($1, $2)', [migration.version, migration.name]);
      done.push(migration.version);
    }
    return done;
  });
}
