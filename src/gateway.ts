import { withMessageOwnerCache } from './libraries/persistence/message-owner-cache.js';
import { randomUUID } from 'node:crypto';
import { createApiKeyUseCases } from './api-keys/api-key-use-cases.js';
import { RATE_BUCKETS, type RateLimitPolicy } from './api-keys/rate-limiter.js';
import { createDomainHosts, createLocalActorRouter, type ActorRouter, type DomainHosts } from './cluster/actor-router.js';
import { createClusterRouter, type ClusterRouter } from './cluster/cluster-router.js';
import { createShardManager, type ShardChanges, type ShardManager } from './cluster/shard-manager.js';
import { leaseRenewerOn } from './cluster/lease-renewal-worker.js';
import { hostname } from 'node:os';
import { createActorRuntime, type ActorRuntime } from './libraries/actors/actor-runtime.js';
import { systemClock, type Clock, type IdGenerator } from './libraries/clock/clock.js';
import type { Config } from './libraries/config/config.js';
import { createDoneMarker, createOutboxRelay, runEntryTasks, type OutboxRelay, type TopicHandler } from './libraries/persistence/outbox-relay.js';
import { openPglitePersistence, openPostgresPersistence, type Persistence } from './libraries/persistence/persistence.js';
import { createMerchantCatalog } from './merchants/merchant-catalog.js';
import { createMerchantUseCases } from './merchants/merchant-use-cases.js';
import { createGetStatusUseCase } from './messaging/get-status-use-case.js';
import {
  DISPATCH_TOPIC,
  RECEIPT_TIMEOUT_TOPIC,
  SCHEDULE_REGISTER_TOPIC,
  WALLET_ADJUST_TOPIC,
  WEBHOOK_TOPIC,
  type CarrierReceipt,
  type MessageReplies,
  type MessageSpec,
  type ReceiptDeadline,
  type ScheduleRegistration,
  type WalletAdjustment,
} from './messaging/message-behaviour.js';
import type { AgendaBackend } from 'agenda';
import { createOccurrenceScheduler, type OccurrenceScheduler } from './entry-points/jobs/occurrence-scheduler.js';
import type { Transport } from './libraries/transport/transport-port.js';
import { createDispatchRelay } from './entry-points/transport/dispatch-relay.js';
import type { ApiKeyReplies } from './api-keys/api-key-behaviour.js';
import { createReceiptConsumer } from './entry-points/transport/receipt-consumer.js';
import { messageReceiptsOf, type MessageReceipts } from './carriers/message-receipts.js';
import { createShardBatches } from './cluster/shard-batches.js';
import { createWebhookRelay } from './webhooks/webhook-jobs.js';
import { createWebhookSender, type WebhookSender } from './webhooks/webhook-sender.js';
import { createWebhookWorker } from './entry-points/transport/webhook-worker.js';
import { replayDeadLetter } from './webhooks/webhook-delivery.js';
import type { WebhookUrlPolicy } from './webhooks/url-guard.js';
import { createManageScheduleUseCase } from './messaging/manage-schedule-use-case.js';
import { applyWalletAdjustment } from './wallets/wallet-adjustments.js';
import { createSendMessageUseCase, MESSAGE_CREATE_TOPIC, type SendMessageDependencies } from './messaging/send-message-use-case.js';
import { createCalculateUseCase } from './pricing/calculate-use-case.js';
import { createWalletUseCases } from './wallets/wallet-use-cases.js';
import { silentLogger, type Logger } from './libraries/logger/logger.js';
import type { Metrics } from './libraries/observability/metrics.js';
import { meteredDeadLetters, meteredJournal } from './gateway-metrics.js';
import { secretBoxOf } from './libraries/secrets/secret-keys.js';

/** Agenda job saves in flight at once while the relay registers a batch of schedules. */
const SCHEDULE_REGISTRATIONS_IN_FLIGHT = 32;

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
  /** Extra outbox topics carried out by this node. */
  readonly relayHandlers?: Readonly<Record<string, TopicHandler>>;
  /**
   * Where dispatches, receipts and webhook jobs travel. Without one, the node keeps them in its outbox (tests of
   * the core alone); the composition root always gives one.
   */
  readonly transport?: Transport;
  /** How webhooks are sent (tests may replace it). */
  readonly webhookSender?: WebhookSender;
  /** Agenda's storage for scheduled occurrences; without it, scheduled sends wait in the outbox. */
  readonly agendaBackend?: AgendaBackend;
  /** More Agenda instances running the same jobs (see OccurrenceSchedulerOptions.extraLockers). */
  readonly agendaLockers?: readonly AgendaBackend[];
  /**
   * `client`: reach the cluster's actors without joining it (the operator CLI): owns no shard, asks every actor on
   * its owner's node. Default `node`.
   */
  readonly role?: 'node' | 'client';
  readonly onIncident?: (incident: { readonly what: string; readonly error: unknown }) => void;
  /**
   * This node took shards, lost their leases (expired or superseded), or handed them over (cluster mode): once per
   * round of the shard manager that changed anything, with every shard that round changed.
   */
  readonly onShardsChanged?: (changes: ShardChanges) => void;
  /** Where the components' numbers go (the node serves them on its operator port); none without it. */
  readonly metrics?: Metrics;
  /** Where the components' own lines go (each failed webhook attempt); silent without it. */
  readonly logger?: Logger;
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

/** Where webhooks may go: production only public addresses over https; the sandbox also http://localhost when allowed. */
export function webhookUrlPolicyOf(config: Config): WebhookUrlPolicy {
  const production = config.environment === 'production';
  return { publicAddressesOnly: production, allowHttpLocalhost: !production && (config.mode === 'embedded' || config.webhooks.allowHttpLocalhost) };
}

/** The configured database, claimed for the configured environment (one database serves one environment). */
export async function openPersistence(config: Config): Promise<Persistence> {
  const persistence = await openConfiguredPersistence(config);
  try {
    await persistence.claimEnvironment(config.environment);
  } catch (error) {
    await persistence.close().catch(() => undefined);
    throw error;
  }
  return persistence;
}

async function openConfiguredPersistence(config: Config): Promise<Persistence> {
  if (config.mode === 'embedded') return openPglitePersistence({ dataDir: config.database.dataDir });
  if (config.database.url) return openPostgresPersistence({ url: config.database.url, poolSize: config.database.poolSize });
  if (config.database.mongoUrl) {
    const { openMongoPersistence } = await import('./libraries/persistence/mongo/mongo-persistence.js');
    return openMongoPersistence({ url: config.database.mongoUrl });
  }
  throw new Error('server mode needs DATABASE_URL (PostgreSQL) or MONGO_URL (MongoDB)');
}

/** Message owners each node remembers (about 100 bytes each). */
const MESSAGE_OWNER_CACHE_SIZE = 200_000;

/** A cluster client owns nothing: every ask goes to the shard's owner. */
const NO_SHARDS: ShardManager = {
  owns: () => false,
  ownedShards: () => [],
  fenceOf: (shard) => ({ shard, owner: '', epoch: -1 }),
  start: () => Promise.resolve(),
  stopAcquiring: () => undefined,
  stop: () => Promise.resolve(),
  tick: () => Promise.resolve(),
};

/** The wired node: persistence, actors, use cases and the outbox relay, with one start and one stop. */
export async function createGateway(options: GatewayOptions) {
  const { config } = options;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? DEFAULT_IDS;
  const ownsPersistence = !options.persistence;
  const persistence = options.persistence ?? (await openPersistence(config));
  const report = options.onIncident ?? (() => undefined);
  const metrics = options.metrics;
  // SECRETS_KEY, or embedded mode's own key file
  const secrets = secretBoxOf(config);

  // a message's owner never changes: status reads and receipts ask the database once per message at most
  const directory = withMessageOwnerCache(persistence.directory, MESSAGE_OWNER_CACHE_SIZE);
  const catalog = createMerchantCatalog({ directory, clock, ttlMs: 5_000, defaultUnitPrice: config.merchantDefaults.unitPrice });
  const runtime: ActorRuntime = createActorRuntime({
    journal: metrics
      ? meteredJournal(persistence.journal, metrics, async (merchantId) => (await catalog.merchant(merchantId))?.currency ?? 'unknown', (error) => {
          report({ what: 'metrics_failed', error });
        })
      : persistence.journal,
    clock,
    newId: ids.eventId,
    onIncident: (incident) => {
      report({ what: `${incident.what} ${incident.key}`, error: incident.error });
    },
  });
  // server mode with a transport is a cluster (of one node or many): shards by lease, fenced appends, routing
  const clusterTransport = config.mode === 'server' ? options.transport : undefined;
  const clustered = clusterTransport !== undefined;
  /**
   * A request's deadline, from its arrival: ACTOR_ASK_TIMEOUT_MS, or in a cluster CLUSTER_FAILOVER_DEADLINE_MS when
   * longer (a request may wait that long for a shard's new owner). A decided request waits as long again to finish.
   */
  const requestBudgetMs = clustered ? Math.max(config.actors.askTimeoutMs, config.cluster.failoverDeadlineMs) : config.actors.askTimeoutMs;
  const client = clustered && options.role === 'client';
  const nodeId = config.cluster.nodeId || `${hostname()}-${process.pid}-${ids.eventId().slice(0, 8)}`;
  let clusterRouter: ClusterRouter | null = null;
  const manager: ShardManager | null = clustered && !client
    ? createShardManager({
        nodeId,
        shards: config.cluster.shards,
        leases: persistence.leases,
        ttlMs: config.cluster.leaseTtlMs,
        // on PostgreSQL a worker thread renews too (its own connection), so a busy main thread keeps its shards
        ...(persistence.kind === 'postgres' && persistence.sql
          ? {
              renewer: leaseRenewerOn(persistence.sql, nodeId, config.cluster, (error) => {
                report({ what: 'shard_lease_renewal_failed', error });
              }),
            }
          : {}),
        onAcquired: async (shard) => {
          await clusterRouter?.serveShard(shard);
        },
        onLost: async (shard) => {
          await clusterRouter?.leaveShard(shard);
        },
        onRebalanced: (changes) => {
          options.onShardsChanged?.(changes);
        },
        onError: (error) => {
          report({ what: 'shard_lease_failed', error });
        },
      })
    : null;
  const hosts: DomainHosts = createDomainHosts(runtime, {
    host: {
      askTimeoutMs: config.actors.askTimeoutMs,
      idleShutdownMs: config.actors.idleShutdownMs,
      settledIdleMs: config.actors.settledIdleMs,
      snapshotEvery: config.actors.snapshotEvery,
      ...(manager ? { fenceOf: (shard: number) => manager.fenceOf(shard) } : {}),
    },
    ratePolicy: ratePolicyOf(config),
    idempotencyTtlMs: config.idempotency.ttlMs,
    ...(metrics
      ? {
          onRecipientTransition: (status: string) => {
            metrics.recipientTransition(status);
          },
        }
      : {}),
  });
  if (clusterTransport) {
    clusterRouter = createClusterRouter({
      hosts,
      shards: config.cluster.shards,
      manager: manager ?? NO_SHARDS,
      transport: clusterTransport,
      clock,
      requestTimeoutMs: config.actors.askTimeoutMs,
      failoverDeadlineMs: config.cluster.failoverDeadlineMs,
      onRemoteHop: (seconds) => {
        metrics?.remoteHop(seconds);
      },
    });
  }
  const router: ActorRouter = clusterRouter ?? createLocalActorRouter(hosts, config.cluster.shards);
  const doneMarker = createDoneMarker(persistence.outbox, 20, (error) => {
    report({ what: 'outbox_mark_done_failed', error });
  });

  const sending = createSendMessageUseCase({
    router,
    directory,
    catalog,
    clock,
    newMessageId: ids.messageId,
    environment: config.environment,
    defaultCarrier: config.carriers.defaultCarrier,
    scheduling: { horizonDays: config.scheduling.openEndedHorizonDays, maxScheduledSms: config.scheduling.maxScheduledSms },
    webhookUrlPolicy: webhookUrlPolicyOf(config),
    decidedWaitMs: requestBudgetMs,
    followUpDone: (id) => {
      doneMarker.mark(id);
    },
    ...(options.faults ? { faults: options.faults } : {}),
  });

  const useCases = {
    sendMessage: sending.sendMessage,
    getStatus: createGetStatusUseCase({ router, directory }),
    manageSchedule: createManageScheduleUseCase({
      router,
      directory,
      clock,
      decidedWaitMs: requestBudgetMs,
      followUpDone: (id) => {
        doneMarker.mark(id);
      },
    }),
    calculate: createCalculateUseCase({ catalog }),
    wallets: createWalletUseCases({ router, directory, catalog }),
    apiKeys: createApiKeyUseCases({
      router,
      directory,
      clock,
      newKeyId: ids.keyId,
      environment: config.environment,
      lookupCacheMs: 60_000,
      secrets,
      guards: config.auth,
    }),
    merchants: createMerchantUseCases({ directory, catalog, clock, newMerchantId: ids.merchantId, defaults: config.merchantDefaults }),
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
  const scheduler: OccurrenceScheduler | null = options.agendaBackend
    ? createOccurrenceScheduler({
        backend: options.agendaBackend,
        ...(options.agendaLockers ? { extraLockers: options.agendaLockers } : {}),
        router,
        name: config.cluster.nodeId || 'sms-gateway',
        processEveryMs: config.scheduling.processEveryMs,
        now: () => clock.now(),
        onError: (error) => {
          report({ what: 'occurrence_dispatch_failed', error });
        },
        onTick: (sample) => {
          metrics?.schedulerTick(sample.lagSeconds);
        },
      })
    : null;
  const schedulerHandlers: Record<string, TopicHandler> = scheduler
    ? {
        [SCHEDULE_REGISTER_TOPIC]: {
          // registrations of a batch saved concurrently (bounded): one at a time, a burst of scheduled sends
          // would reach Agenda long after their 201s
          handle: (entries) =>
            runEntryTasks(entries, (entry) => [() => scheduler.register(entry.payload as ScheduleRegistration)], SCHEDULE_REGISTRATIONS_IN_FLIGHT, (error) => {
              report({ what: 'schedule_register_failed', error });
            }),
        },
      }
    : {};
  // a dispatched occurrence leaves its deadline in the outbox; 24 h later unanswered recipients fail with 1503
  const expireReceipts: TopicHandler = {
    graceMs: config.scheduling.receiptTimeoutMs,
    async handle(entries) {
      for (const entry of entries) {
        const deadline = entry.payload as ReceiptDeadline;
        await router.message(deadline.merchantId, deadline.messageId).ask({ type: 'receipt_timeout', occurrence: deadline.occurrence });
      }
      return entries.map((entry) => entry.id);
    },
  };

  const transport = options.transport;
  const transportHandlers: Record<string, TopicHandler> = transport
    ? { [DISPATCH_TOPIC]: createDispatchRelay({
          transport,
          clock,
          onError: (error) => {
            report({ what: 'dispatch_relay_failed', error });
          },
        }), [WEBHOOK_TOPIC]: createWebhookRelay({
          router,
          transport,
          clock,
          onError: (error) => {
            report({ what: 'webhook_relay_failed', error });
          },
        }) }
    : {};
  const relay: OutboxRelay = createOutboxRelay({
    outbox: persistence.outbox,
    clock,
    handlers: {
      [MESSAGE_CREATE_TOPIC]: finishInterruptedSends,
      [WALLET_ADJUST_TOPIC]: adjustWallets,
      [RECEIPT_TIMEOUT_TOPIC]: expireReceipts,
      ...schedulerHandlers,
      ...transportHandlers,
      ...options.relayHandlers,
    },
    pollIntervalMs: config.outbox.pollIntervalMs,
    batchSize: 200,
    // in a cluster each node relays what its own shards wrote
    ...(manager ? { shards: () => manager.ownedShards() } : {}),
    onError: (error) => {
      report({ what: 'outbox_relay_failed', error });
    },
  });

  const sender =
    options.webhookSender ?? createWebhookSender({ timeoutMs: config.webhooks.timeoutMs, policy: webhookUrlPolicyOf(config), userAgent: `sms-gateway/${config.version}` });
  // in a cluster, the receipts of many messages reach their shard's owner in one hop per shard
  const receiptBatches = clusterRouter
    ? createShardBatches<MessageReceipts, MessageReplies['apply_receipts']>({
        name: 'receipts',
        router: clusterRouter,
        itemOf: messageReceiptsOf,
        maxBatch: 256,
        perform: (merchantId, item) => router.message(merchantId, item.messageId).ask({ type: 'apply_receipts', receipts: item.receipts }),
      })
    : null;
  const receipts = transport
    ? createReceiptConsumer({
        transport,
        router,
        directory,
        concurrency: 64,
        ...(receiptBatches ? { applyReceipts: (merchantId: string, messageId: string, carrierReceipts: readonly CarrierReceipt[]) => receiptBatches.run(merchantId, { messageId, receipts: carrierReceipts }) } : {}),
        onRejected: (reason) => {
          report({ what: 'receipt_rejected', error: new Error(reason) });
        },
        onReceipt: (sample) => {
          metrics?.receipt(sample);
        },
      })
    : null;
  const targetBatches = clusterRouter
    ? createShardBatches<{ readonly keyId: string }, ApiKeyReplies['webhook_target']>({
        name: 'webhook-targets',
        router: clusterRouter,
        itemOf: (value) => (typeof value === 'object' && value !== null && typeof (value as { keyId?: unknown }).keyId === 'string' ? { keyId: (value as { keyId: string }).keyId } : null),
        maxBatch: 256,
        perform: (merchantId, item) => router.apiKey(merchantId, item.keyId).ask({ type: 'webhook_target' }),
      })
    : null;
  const webhooks = transport
    ? createWebhookWorker({
        transport,
        router,
        sender,
        ...(targetBatches ? { webhookTarget: (merchantId: string, keyId: string) => targetBatches.run(merchantId, { keyId }) } : {}),
        deadLetters: metrics ? meteredDeadLetters(persistence.deadLetters, metrics) : persistence.deadLetters,
        clock,
        retryDelaysMs: config.webhooks.retryDelaysMs,
        secrets,
        concurrencyPerMerchant: config.webhooks.concurrencyPerMerchant,
        concurrency: config.webhooks.concurrency,
        logger: options.logger ?? silentLogger,
        onError: (error) => {
          report({ what: 'webhook_delivery_failed', error });
        },
        onAttempt: (outcome) => {
          metrics?.webhookAttempt(outcome.verdict, outcome.seconds);
        },
      })
    : null;
  let unbindMetrics = (): void => undefined;

  return {
    config,
    clock,
    requestBudgetMs,
    persistence,
    transport,
    scheduler,
    /** Operator: a dropped webhook event goes out again as a first attempt. */
    replayDeadLetter: (id: string) =>
      transport ? replayDeadLetter({ transport, deadLetters: persistence.deadLetters, clock }, id) : Promise.resolve(false),
    runtime,
    hosts,
    router,
    /** The cluster's router (null in embedded mode): forwards merchants' requests to their shard's owner. */
    clusterRouter,
    nodeId,
    shardManager: manager,
    catalog,
    secrets,
    useCases,
    relay,
    async start() {
      unbindMetrics =
        metrics?.bind({
          actorsActive: () => ({ wallet: hosts.wallets.activeCount(), api_key: hosts.apiKeys.activeCount(), message: hosts.messages.activeCount() }),
          outboxBacklog: () => persistence.outbox.backlog(),
          ...(manager ? { shardsOwned: () => manager.ownedShards().length } : {}),
          // a client node holds no shard but knows how many the cluster has
          ...(clustered ? { shardsTotal: () => config.cluster.shards } : {}),
        }) ?? unbindMetrics;
      await manager?.start();
      // the consumers' durables exist before the relay publishes: their streams drop what no durable wants
      await receipts?.start();
      await webhooks?.start();
      relay.start();
      await scheduler?.start();
    },
    /** The process is stopping (a signal or a crash): from now on this node takes no shard. */
    stopAcquiring() {
      manager?.stopAcquiring();
    },
    async stop() {
      manager?.stopAcquiring();
      // stop taking work first (nothing in flight then waits for a shard's new owner), then hand the shards over:
      // their actors stop here and other nodes take them at once
      await scheduler?.stop();
      await receipts?.stop();
      await webhooks?.stop();
      await relay.stop();
      await doneMarker.flush();
      await manager?.stop();
      if (!options.webhookSender) await sender.close();
      runtime.stop();
      unbindMetrics();
      if (ownsPersistence) await persistence.close();
    },
  };
}

export type Gateway = Awaited<ReturnType<typeof createGateway>>;
