import type { AgendaBackend } from 'agenda';
import type { ShardChanges } from './cluster/shard-manager.js';
import { createActorsAndCluster, type IncidentReport } from './composition/actors-and-cluster.js';
import { createFollowUps, createRelay, createScheduler } from './composition/jobs.js';
import { DEFAULT_IDS, type IdGenerators } from './composition/ids.js';
import { lifecycleOf, type Component } from './composition/lifecycle.js';
import { openPersistence } from './composition/persistence.js';
import { createTransportWorkers, createWebhookSending, deliveriesComponent } from './composition/transport-workers.js';
import { createReadModels, createUseCases } from './composition/use-cases.js';
import { systemClock, type Clock } from './libraries/clock/clock.js';
import type { Config } from './libraries/config/config.js';
import type { Logger } from './libraries/logger/logger.js';
import type { Metrics } from './libraries/observability/metrics.js';
import type { TopicHandlers } from './libraries/persistence/outbox-relay.js';
import type { OutboxPayloads } from './outbox-effects.js';
import type { Persistence } from './libraries/persistence/persistence.js';
import { secretBoxOf } from './libraries/secrets/secret-keys.js';
import type { Transport } from './libraries/transport/transport-port.js';
import type { SendMessageDependencies } from './messaging/send-message-use-case.js';
import { replayDeadLetter } from './webhooks/webhook-delivery.js';
import type { WebhookSender } from './webhooks/webhook-sender.js';

export interface GatewayOptions {
  readonly config: Config;
  /** An already open store (tests share one); otherwise opened from the config and closed on stop. */
  readonly persistence?: Persistence;
  readonly clock?: Clock;
  readonly ids?: IdGenerators;
  readonly faults?: SendMessageDependencies['faults'];
  /** Extra outbox topics carried out by this node. */
  readonly relayHandlers?: TopicHandlers<OutboxPayloads>;
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
  readonly onIncident?: IncidentReport;
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

/** The wired node: persistence, actors, use cases, the outbox relay and the workers, with one start and one stop. */
export async function createGateway(options: GatewayOptions) {
  const { config, metrics } = options;
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? DEFAULT_IDS;
  const report: IncidentReport = options.onIncident ?? (() => undefined);
  const persistence = options.persistence ?? (await openPersistence(config));
  const ownedPersistence: Component = { name: 'persistence', stop: () => (options.persistence ? undefined : persistence.close()) };
  // SECRETS_KEY, or embedded mode's own key file
  const secrets = secretBoxOf(config);
  const transport = options.transport;

  const readModels = createReadModels({ config, persistence, clock, ...(metrics ? { metrics } : {}) });
  const { catalog } = readModels;
  const actors = createActorsAndCluster({
    config,
    persistence,
    clock,
    newEventId: ids.eventId,
    ...(transport ? { transport } : {}),
    ...(options.role ? { role: options.role } : {}),
    report,
    ...(options.onShardsChanged ? { onShardsChanged: options.onShardsChanged } : {}),
    ...(metrics ? { metrics } : {}),
    currencyOf: async (merchantId) => (await catalog.merchant(merchantId))?.currency ?? 'unknown',
  });
  const { router, manager } = actors;
  const followUps = createFollowUps({ config, persistence, report });
  const { useCases, completeCreation } = createUseCases({
    config,
    router,
    readModels,
    clock,
    ids,
    secrets,
    requestBudgetMs: actors.requestBudgetMs,
    creationWithCharge: persistence.journal.writesCompanions,
    followUpDone: (id) => {
      followUps.doneMarker.mark(id);
    },
    ...(options.faults ? { faults: options.faults } : {}),
  });
  const { scheduler, component: schedulerComponent } = createScheduler({
    config,
    router,
    clock,
    ...(options.agendaBackend ? { agendaBackend: options.agendaBackend } : {}),
    ...(options.agendaLockers ? { agendaLockers: options.agendaLockers } : {}),
    ...(metrics ? { metrics } : {}),
    report,
  });
  const sending = createWebhookSending(config, report, options.webhookSender);
  const workers = createTransportWorkers({
    config,
    ...(transport ? { transport } : {}),
    router,
    clusterRouter: actors.clusterRouter,
    directory: readModels.directory,
    persistence,
    sender: sending.sender,
    clock,
    secrets,
    ...(metrics ? { metrics } : {}),
    ...(options.logger ? { logger: options.logger } : {}),
    report,
  });
  const relay = createRelay({
    config,
    persistence,
    clock,
    router,
    manager,
    ...(transport ? { transport } : {}),
    ...(workers.webhooks ? { firstAttempts: workers.webhooks.firstAttempts } : {}),
    scheduler,
    completeCreation,
    ...(options.relayHandlers ? { extraHandlers: options.relayHandlers } : {}),
    ...(metrics ? { metrics } : {}),
    report,
  });

  // started in this order, stopped in reverse: on stop, work stops being taken first (nothing in flight then waits
  // for a shard's new owner), then the shards are handed over (their actors stop there, other nodes take them at once)
  const lifecycle = lifecycleOf(
    [
      ownedPersistence,
      actors.components.metricsBinding,
      actors.components.actors,
      sending.component,
      actors.components.shards,
      followUps.component,
      deliveriesComponent(workers, relay),
      schedulerComponent,
    ],
    (name, error) => {
      report({ what: `${name}_stop_failed`, error });
    },
  );

  return {
    config,
    clock,
    requestBudgetMs: actors.requestBudgetMs,
    persistence,
    transport,
    scheduler,
    /** Operator: a dropped webhook event goes out again as a first attempt. */
    replayDeadLetter: (id: string) =>
      transport ? replayDeadLetter({ transport, deadLetters: persistence.deadLetters, clock }, id) : Promise.resolve(false),
    runtime: actors.runtime,
    hosts: actors.hosts,
    router,
    /**
     * Remembers the merchant of a message this node saw created elsewhere (a send it forwarded was answered 201):
     * receipts for it that reach this node then find their owner without the database.
     */
    rememberMessageOwner: (messageId: string, merchantId: string) => {
      readModels.directory.rememberOwner(messageId, merchantId);
    },
    /** The cluster's router (null in embedded mode): forwards merchants' requests to their shard's owner. */
    clusterRouter: actors.clusterRouter,
    nodeId: actors.nodeId,
    shardManager: manager,
    catalog,
    secrets,
    useCases,
    relay,
    start: () => lifecycle.start(),
    /** The process is stopping (a signal or a crash): from now on this node takes no shard. */
    stopAcquiring() {
      manager?.stopAcquiring();
    },
    async stop() {
      manager?.stopAcquiring();
      await lifecycle.stop();
    },
  };
}

export type Gateway = Awaited<ReturnType<typeof createGateway>>;
