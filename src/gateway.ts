import { randomUUID } from 'node:crypto';
import { createApiKeyUseCases } from './api-keys/api-key-use-cases.js';
import { RATE_BUCKETS, type RateLimitPolicy } from './api-keys/rate-limiter.js';
import { createDomainHosts, createLocalActorRouter, type ActorRouter, type DomainHosts } from './cluster/actor-router.js';
import { createActorRuntime, type ActorRuntime } from './libraries/actors/actor-runtime.js';
import { systemClock, type Clock, type IdGenerator } from './libraries/clock/clock.js';
import type { Config } from './libraries/config/config.js';
import { createDoneMarker, createOutboxRelay, type OutboxRelay, type TopicHandler } from './libraries/persistence/outbox-relay.js';
import { openPglitePersistence, openPostgresPersistence, type Persistence } from './libraries/persistence/persistence.js';
import { createMerchantCatalog } from './merchants/merchant-catalog.js';
import { createMerchantUseCases } from './merchants/merchant-use-cases.js';
import { createGetStatusUseCase } from './messaging/get-status-use-case.js';
import { WALLET_ADJUST_TOPIC, type MessageSpec, type WalletAdjustment } from './messaging/message-behaviour.js';
import { createManageScheduleUseCase } from './messaging/manage-schedule-use-case.js';
import { applyWalletAdjustment } from './wallets/wallet-adjustments.js';
import { createSendMessageUseCase, MESSAGE_CREATE_TOPIC, type SendMessageDependencies } from './messaging/send-message-use-case.js';
import { createCalculateUseCase } from './pricing/calculate-use-case.js';
import { createWalletUseCases } from './wallets/wallet-use-cases.js';

/** Fresh ids: UUID v4 for events, prefixed random ids for the rest. */
export interface IdGenerators {
  readonly eventId: IdGenerator;
  readonly messageId: IdGenerator;
  readonly keyId: IdGenerator;
  readonly merchantId: IdGenerator;
}

const compactUuid = () => randomUUID().replace(/-/g, '');
export const DEFAULT_IDS: IdGenerators = {
  eventId: () => randomUUID(),
  messageId: () => `msg_${compactUuid()}`,
  keyId: () => `key_${compactUuid().slice(0, 20)}`,
  merchantId: () => `mer_${compactUuid().slice(0, 20)}`,
};

export interface GatewayOptions {
  readonly config: Config;
  /** An already open store (tests share one); otherwise opened from the config and closed on stop. */
  readonly persistence?: Persistence;
  readonly clock?: Clock;
  readonly ids?: IdGenerators;
  readonly faults?: SendMessageDependencies['faults'];
  /** Extra outbox topics carried out by this node (transport publishing is wired by its own module). */
  readonly relayHandlers?: Readonly<Record<string, TopicHandler>>;
  readonly onIncident?: (incident: { readonly what: string; readonly error: unknown }) => void;
}

export function ratePolicyOf(config: Config): RateLimitPolicy {
  const limits = Object.fromEntries(RATE_BUCKETS.map((bucket) => [bucket, config.rateLimits[bucket]])) as RateLimitPolicy['limits'];
  return {
    windowMs: config.rateLimits.windowMs,
    limits,
    suspendAfterRejections: config.rateLimits.suspendAfterRejections,
    suspensionMs: config.rateLimits.suspensionMs,
  };
}

export async function openPersistence(config: Config): Promise<Persistence> {
  if (config.mode === 'embedded') return openPglitePersistence({ dataDir: config.database.dataDir });
  if (config.database.url) return openPostgresPersistence({ url: config.database.url, poolSize: config.database.poolSize });
  if (config.database.mongoUrl) {
    const { openMongoPersistence } = await import('./libraries/persistence/mongo/mongo-persistence.js');
    return openMongoPersistence({ url: config.database.mongoUrl });
  }
  throw new Error('server mode needs DATABASE_URL (PostgreSQL) or MONGO_URL (MongoDB)');
}

/** The wired node: persistence, actors, use cases and the outbox relay, with one start and one stop. */
export async function createGateway(options: GatewayOptions) {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? DEFAULT_IDS;
  const ownsPersistence = !options.persistence;
  const persistence = options.persistence ?? (await openPersistence(config));
  const report = options.onIncident ?? (() => undefined);

  const runtime: ActorRuntime = createActorRuntime({
    journal: persistence.journal,
    clock,
    newId: ids.eventId,
    onIncident: (incident) => {
      report({ what: `${incident.what} ${incident.key}`, error: incident.error });
    },
  });
  const hosts: DomainHosts = createDomainHosts(runtime, {
    host: { askTimeoutMs: config.actors.askTimeoutMs, idleShutdownMs: config.actors.idleShutdownMs, snapshotEvery: config.actors.snapshotEvery },
    ratePolicy: ratePolicyOf(config),
    idempotencyTtlMs: config.idempotency.ttlMs,
  });
  const router: ActorRouter = createLocalActorRouter(hosts, config.cluster.shards);
  const catalog = createMerchantCatalog({ directory: persistence.directory, clock, ttlMs: 5_000, defaultUnitPrice: config.merchantDefaults.unitPrice });
  const doneMarker = createDoneMarker(persistence.outbox, 20, (error) => {
    report({ what: 'outbox_mark_done_failed', error });
  });

  const sending = createSendMessageUseCase({
    router,
    directory: persistence.directory,
    catalog,
    clock,
    newMessageId: ids.messageId,
    environment: config.environment,
    defaultCarrier: config.carriers.defaultCarrier,
    scheduling: { horizonDays: config.scheduling.openEndedHorizonDays, maxScheduledSms: config.scheduling.maxScheduledSms },
    allowHttpLocalhostCallbacks: config.mode === 'embedded',
    followUpDone: (id) => {
      doneMarker.mark(id);
    },
    ...(options.faults ? { faults: options.faults } : {}),
  });

  const useCases = {
    sendMessage: sending.sendMessage,
    getStatus: createGetStatusUseCase({ router, directory: persistence.directory }),
    manageSchedule: createManageScheduleUseCase({
      router,
      directory: persistence.directory,
      followUpDone: (id) => {
        doneMarker.mark(id);
      },
    }),
    calculate: createCalculateUseCase({ catalog }),
    wallets: createWalletUseCases({ router, directory: persistence.directory, catalog }),
    apiKeys: createApiKeyUseCases({
      router,
      directory: persistence.directory,
      clock,
      newKeyId: ids.keyId,
      environment: config.environment,
      lookupCacheMs: 60_000,
    }),
    merchants: createMerchantUseCases({ directory: persistence.directory, catalog, clock, newMerchantId: ids.merchantId, defaults: config.merchantDefaults }),
  };

  // a send charged but not yet created (the process died in between) is finished from its outbox entry
  const finishInterruptedSends: TopicHandler = {
    graceMs: 2_000,
    async handle(entries) {
      const done: string[] = [];
      for (const entry of entries) {
        await sending.completeCreation(entry.payload as MessageSpec);
        done.push(entry.id);
      }
      return done;
    },
  };
  // refunds and settlements a message journaled, carried to its wallet (idempotent per refund id)
  const adjustWallets: TopicHandler = {
    graceMs: 2_000,
    async handle(entries) {
      for (const entry of entries) await applyWalletAdjustment(router, entry.payload as WalletAdjustment);
      return entries.map((entry) => entry.id);
    },
  };
  const relay: OutboxRelay = createOutboxRelay({
    outbox: persistence.outbox,
    clock,
    handlers: { [MESSAGE_CREATE_TOPIC]: finishInterruptedSends, [WALLET_ADJUST_TOPIC]: adjustWallets, ...options.relayHandlers },
    pollIntervalMs: config.outbox.pollIntervalMs,
    batchSize: 200,
    onError: (error) => {
      report({ what: 'outbox_relay_failed', error });
    },
  });

  return {
    config,
    clock,
    persistence,
    runtime,
    hosts,
    router,
    catalog,
    useCases,
    relay,
    start() {
      relay.start();
    },
    async stop() {
      await relay.stop();
      await doneMarker.flush();
      runtime.stop();
      if (ownsPersistence) await persistence.close();
    },
  };
}

export type Gateway = Awaited<ReturnType<typeof createGateway>>;
