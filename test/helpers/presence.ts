import type { KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/transport-node';
import { presenceKey, type ConnectorPresence } from '../../src/carriers/connector/connector-presence.js';
import { openPresenceBucket } from '../../src/carriers/connector/presence-reader.js';
import { NO_NAMESPACE } from '../../src/libraries/transport/nats-names.js';

/** A presence entry as a connector writes it; `overrides` change any field (`updated_at` defaults to now). */
export function presenceEntry(carrier: string, name: string, overrides: Partial<ConnectorPresence> = {}): ConnectorPresence {
  return {
    version: 1,
    carrier,
    connector_id: `${name}-abc123`,
    name,
    kind: 'smpp',
    priority: 0,
    weight: 1,
    live: true,
    active: true,
    binds_up: 2,
    binds_total: 2,
    window_in_use: 3,
    window_size: 10,
    submits_per_second: 12.5,
    updated_at: new Date().toISOString(),
    ...overrides,
  };
}

const buckets = new WeakMap<NatsConnection, Promise<KV>>();
/** The presence bucket, opened once per connection (created if missing). */
function bucket(nats: NatsConnection): Promise<KV> {
  let opened = buckets.get(nats);
  if (!opened) {
    opened = openPresenceBucket(nats, NO_NAMESPACE);
    buckets.set(nats, opened);
  }
  return opened;
}

/** Writes entries into the presence bucket with the KV API, as connectors do (the bucket is created if missing). */
export async function writePresence(nats: NatsConnection, entry: ConnectorPresence): Promise<void> {
  const kv = await bucket(nats);
  await kv.put(presenceKey(entry.carrier, entry.connector_id), JSON.stringify(entry));
}

/** Deletes an entry, as a stopping connector does. */
export async function deletePresence(nats: NatsConnection, entry: ConnectorPresence): Promise<void> {
  const kv = await bucket(nats);
  await kv.delete(presenceKey(entry.carrier, entry.connector_id));
}
