import type { Migration } from './migrations.js';

/**
 * Tables of the database bus (embedded-mode transport, `src/libraries/transport/database-bus.ts`).
 *
 * - `bus_messages`: what was published, one row per publish id (the primary key is the dedupe). Kept while a
 *   delivery is pending, then for the dedupe window.
 * - `bus_consumers`: the durables and their subject filters (`pattern` is the filter as a POSIX regex).
 * - `bus_deliveries`: one row per (durable, message) — each durable gets its own copy, like JetStream consumers.
 *   A row is claimable when `done_at IS NULL AND deliver_at <= now`; a claim pushes `deliver_at` to the end of
 *   the ack wait, so an unsettled claim becomes claimable again by itself.
 */
export const busMigration: Migration = {
  version: 2,
  name: 'database bus',
  sql: `
    CREATE TABLE bus_messages (
      id         text   PRIMARY KEY,
      stream     text   NOT NULL,
      subject    text   NOT NULL,
      payload    jsonb  NOT NULL,
      headers    jsonb  NOT NULL,
      created_at bigint NOT NULL
    );
    CREATE INDEX bus_messages_by_stream ON bus_messages (stream, created_at);
    CREATE INDEX bus_messages_by_age ON bus_messages (created_at);
    CREATE TABLE bus_consumers (
      name       text   PRIMARY KEY,
      stream     text   NOT NULL,
      filter     text   NOT NULL,
      pattern    text   NOT NULL,
      created_at bigint NOT NULL
    );
    CREATE TABLE bus_deliveries (
      consumer       text    NOT NULL,
      message_id     text    NOT NULL REFERENCES bus_messages (id) ON DELETE CASCADE,
      deliver_at     bigint  NOT NULL,
      locked_until   bigint  NOT NULL DEFAULT 0,
      delivery_count integer NOT NULL DEFAULT 0,
      done_at        bigint,
      PRIMARY KEY (consumer, message_id)
    );
    CREATE INDEX bus_deliveries_due ON bus_deliveries (consumer, deliver_at) WHERE done_at IS NULL;
    CREATE INDEX bus_deliveries_by_message ON bus_deliveries (message_id);
  `,
};
