import { jetstreamManager } from '@nats-io/jetstream';
import { Kvm, type KV, type KvWatchEntry } from '@nats-io/kv';
import type { NatsConnection, QueuedIterator } from '@nats-io/transport-node';
import { bucketKeys } from '../../libraries/transport/bucket-keys.js';
import { PRESENCE_BUCKET, type NatsNames } from '../../libraries/transport/nats-names.js';
import { CARRIER_SLUG } from '../carrier-protocol.js';
import { PRESENCE_TTL_MS, liveConnectors, presenceKey, type ConnectorPresence } from './connector-presence.js';

/**
 * What the gateway, its metrics and the operator CLI know of the connectors: the presence bucket, watched. The
 * reader keeps the last entry of every key in memory (puts replace, deletes remove); the bucket's own expiry sends
 * no event, so an entry is dropped from the answers once its `updated_at` is older than `PRESENCE_TTL_MS` by the
 * caller's clock. Answering reads the memory only: a health check or a scrape costs NATS nothing.
 */

/** Opens the deployment's presence bucket, creating it when missing with the settings every connector uses. */
export async function openPresenceBucket(nats: NatsConnection, names: NatsNames): Promise<KV> {
  const kvm = new Kvm(nats);
  const bucket = names.bucket(PRESENCE_BUCKET);
  try {
    return await kvm.create(bucket, { history: 1, ttl: PRESENCE_TTL_MS });
  } catch (error) {
    // created by another process with other limits: use it as it is
    return kvm.open(bucket).catch(() => {
      throw error;
    });
  }
}

const isCount = (value: unknown): value is number => typeof value === 'number' && Number.isFinite(value) && value >= 0;

/** An entry as a connector wrote it, or null when it is not one (another version, a third party's mistake). */
export function parsePresence(key: string, value: unknown): ConnectorPresence | null {
  if (typeof value !== 'object' || value === null) return null;
  const entry = value as Record<string, unknown>;
  const { carrier, connector_id: connectorId } = entry;
  if (entry.version !== 1 || typeof carrier !== 'string' || !CARRIER_SLUG.test(carrier)) return null;
  if (typeof connectorId !== 'string' || key !== presenceKey(carrier, connectorId)) return null;
  if (typeof entry.name !== 'string' || typeof entry.kind !== 'string') return null;
  if (typeof entry.priority !== 'number' || !isCount(entry.weight) || typeof entry.live !== 'boolean' || typeof entry.active !== 'boolean')
    return null;
  const counts = [entry.binds_up, entry.binds_total, entry.window_in_use, entry.window_size, entry.submits_per_second];
  if (!counts.every(isCount)) return null;
  if (typeof entry.updated_at !== 'string' || Number.isNaN(Date.parse(entry.updated_at))) return null;
  return entry as unknown as ConnectorPresence;
}

/** Entries written within `PRESENCE_TTL_MS` of `now`, live or not. */
export function freshEntries(entries: Iterable<ConnectorPresence>, now: number): ConnectorPresence[] {
  return [...entries].filter((entry) => now - Date.parse(entry.updated_at) <= PRESENCE_TTL_MS);
}

/** Fresh entries by carrier, each carrier's in failover order (priority, then name, then id). */
export function groupByCarrier(entries: Iterable<ConnectorPresence>, now: number): Map<string, ConnectorPresence[]> {
  const byCarrier = new Map<string, ConnectorPresence[]>();
  for (const entry of freshEntries(entries, now)) byCarrier.set(entry.carrier, [...(byCarrier.get(entry.carrier) ?? []), entry]);
  for (const list of byCarrier.values()) {
    list.sort((a, b) => a.priority - b.priority || a.name.localeCompare(b.name) || a.connector_id.localeCompare(b.connector_id));
  }
  return byCarrier;
}

/** How many connectors of each carrier are live at `now`. */
export function liveCountByCarrier(entries: Iterable<ConnectorPresence>, now: number): Map<string, number> {
  const counts = new Map<string, number>();
  for (const entry of liveConnectors([...entries], now)) counts.set(entry.carrier, (counts.get(entry.carrier) ?? 0) + 1);
  return counts;
}

export interface PresenceReader {
  /** Opens (or creates) the bucket and starts watching it; resolves once the watch is set up. */
  start(): Promise<void>;
  /** Fresh entries by carrier (see `groupByCarrier`), from memory. */
  connectorsByCarrier(now: number): Map<string, ConnectorPresence[]>;
  /** Every entry held, fresh or not (the caller filters by its clock). */
  entries(): ConnectorPresence[];
  stop(): Promise<void>;
}

export interface PresenceReaderOptions {
  readonly nats: NatsConnection;
  /** The deployment's names on NATS (`NATS_NAMESPACE`). */
  readonly names: NatsNames;
  /** A watch that ended on an error (it is set up again), an entry that is not one. */
  readonly onError?: (error: unknown, context: string) => void;
  /** Pause before watching again after the watch ended on its own. */
  readonly rewatchDelayMs?: number;
}

export function createPresenceReader(options: PresenceReaderOptions): PresenceReader {
  const onError = options.onError ?? (() => undefined);
  const rewatchDelayMs = options.rewatchDelayMs ?? 1_000;
  const held = new Map<string, ConnectorPresence>();
  // read after awaits, where stop() may have run meanwhile
  const state = { stopped: false };
  const isStopped = (): boolean => state.stopped;
  let watcher: { stop(): void } | null = null;
  let watching: Promise<void> | null = null;

  function apply(entry: KvWatchEntry): void {
    if (entry.operation !== 'PUT') {
      held.delete(entry.key);
      return;
    }
    let value: unknown;
    try {
      value = entry.json<unknown>();
    } catch (error) {
      held.delete(entry.key);
      onError(error, `presence entry ${entry.key}`);
      return;
    }
    const presence = parsePresence(entry.key, value);
    if (presence) held.set(entry.key, presence);
    else {
      held.delete(entry.key);
      onError(new Error(`not a connector presence entry: ${entry.key}`), 'presence entry');
    }
  }

  const pause = (): Promise<void> =>
    new Promise<void>((resolve) => {
      setTimeout(resolve, rewatchDelayMs).unref();
    });

  /** Follows the watch; when it ends (not stopped), watches again from an empty memory: a new watch replays every key. */
  async function follow(kv: KV, first: QueuedIterator<KvWatchEntry>): Promise<void> {
    let iterator: QueuedIterator<KvWatchEntry> | null = first;
    while (!isStopped()) {
      if (iterator) {
        watcher = iterator;
        try {
          for await (const entry of iterator) apply(entry);
        } catch (error) {
          if (!isStopped()) onError(error, 'presence watch');
        }
        if (isStopped()) return;
        held.clear();
      }
      await pause();
      if (isStopped()) return;
      iterator = await kv.watch().catch((error: unknown) => {
        onError(error, 'presence watch');
        return null;
      });
    }
  }

  return {
    async start() {
      const kv = await openPresenceBucket(options.nats, options.names);
      const first = await kv.watch();
      watching = follow(kv, first);
    },
    connectorsByCarrier: (now) => groupByCarrier(held.values(), now),
    entries: () => [...held.values()],
    async stop() {
      state.stopped = true;
      watcher?.stop();
      await watching;
    },
  };
}

/** Every entry of the bucket now (one read per key): for one-shot readers such as the CLI. */
export async function readPresenceOnce(
  nats: NatsConnection,
  names: NatsNames,
  onError: (error: unknown, context: string) => void = () => undefined,
): Promise<ConnectorPresence[]> {
  const kv = await openPresenceBucket(nats, names);
  const keys = await bucketKeys(await jetstreamManager(nats), names.bucket(PRESENCE_BUCKET));
  const entries: ConnectorPresence[] = [];
  for (const key of keys) {
    const entry = await kv.get(key);
    if (!entry || entry.operation !== 'PUT') continue;
    let value: unknown;
    try {
      value = entry.json<unknown>();
    } catch (error) {
      onError(error, `presence entry ${key}`);
      continue;
    }
    const presence = parsePresence(key, value);
    if (presence) entries.push(presence);
    else onError(new Error(`not a connector presence entry: ${key}`), 'presence entry');
  }
  return entries;
}
