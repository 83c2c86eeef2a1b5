import { randomUUID } from 'node:crypto';
import { Kvm, type KV } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { systemClock, toIsoUtc, type Clock } from '../../libraries/clock/clock.js';
import { PRESENCE_BUCKET, type NatsNames } from '../../libraries/transport/nats-names.js';
import { PRESENCE_INTERVAL_MS, PRESENCE_TTL_MS, presenceKey, type ConnectorPresence } from './connector-presence.js';

/**
 * Presence for a connector that does not run the connector runtime (the simulator, a third party's written in this
 * code base): one entry kept fresh in the presence bucket while it runs, deleted when it stops. The entry says live
 * and active; such a connector has no failover order of its own (priority 1, weight 1).
 */
export interface PresenceAnnouncer {
  readonly connectorId: string;
  stop(): Promise<void>;
}

export async function announcePresence(options: {
  readonly nc: NatsConnection;
  /** The deployment's names on NATS (`NATS_NAMESPACE`). */
  readonly names: NatsNames;
  readonly carrier: string;
  readonly name: string;
  readonly kind: string;
  readonly clock?: Clock;
  readonly intervalMs?: number;
  readonly onError?: (error: unknown) => void;
}): Promise<PresenceAnnouncer> {
  const clock = options.clock ?? systemClock;
  const connectorId = `${options.name}-${randomUUID().slice(0, 8)}`;
  const kvm = new Kvm(options.nc);
  const bucket = options.names.bucket(PRESENCE_BUCKET);
  const kv: KV = await kvm.create(bucket, { history: 1, ttl: PRESENCE_TTL_MS }).catch(() => kvm.open(bucket));
  const key = presenceKey(options.carrier, connectorId);
  const put = async (): Promise<void> => {
    const entry: ConnectorPresence = {
      version: 1,
      carrier: options.carrier,
      connector_id: connectorId,
      name: options.name,
      kind: options.kind,
      priority: 1,
      weight: 1,
      live: true,
      active: true,
      binds_up: 1,
      binds_total: 1,
      window_in_use: 0,
      window_size: 0,
      submits_per_second: 0,
      updated_at: toIsoUtc(clock.now()),
    };
    try {
      await kv.put(key, new TextEncoder().encode(JSON.stringify(entry)));
    } catch (error) {
      options.onError?.(error);
    }
  };
  await put();
  let round: Promise<void> = Promise.resolve();
  const timer = setInterval(() => {
    round = round.then(put);
  }, options.intervalMs ?? PRESENCE_INTERVAL_MS);
  timer.unref();
  return {
    connectorId,
    async stop() {
      clearInterval(timer);
      await round;
      await kv.delete(key).catch((error: unknown) => options.onError?.(error));
    },
  };
}
