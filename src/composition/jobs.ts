import type { AgendaBackend } from 'agenda';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { ShardManager } from '../cluster/shard-manager.js';
import { adjustWallets, expireReceipts, finishInterruptedSends, registerSchedules } from '../entry-points/jobs/outbox-jobs.js';
import { createOccurrenceScheduler, type OccurrenceScheduler } from '../entry-points/jobs/occurrence-scheduler.js';
import { createDispatchRelay } from '../entry-points/transport/dispatch-relay.js';
import type { Clock } from '../libraries/clock/clock.js';
import type { Config } from '../libraries/config/config.js';
import type { Metrics } from '../libraries/observability/metrics.js';
import { createDoneMarker, createOutboxRelay, type OutboxRelay, type TopicHandlers } from '../libraries/persistence/outbox-relay.js';
import type { Persistence } from '../libraries/persistence/persistence.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import { DISPATCH_TOPIC } from '../carriers/dispatch-outbox.js';
import type { MessageSpec } from '../messaging/message-behaviour.js';
import { RECEIPT_TIMEOUT_TOPIC } from '../messaging/receipt-deadlines.js';
import { MESSAGE_CREATE_TOPIC } from '../messaging/send-message-use-case.js';
import type { OutboxPayloads } from '../outbox-effects.js';
import { SCHEDULE_REGISTER_TOPIC } from '../scheduling/schedule-registration.js';
import { WALLET_ADJUST_TOPIC } from '../wallets/wallet-adjustments.js';
import { createWebhookRelay, WEBHOOK_TOPIC, type FirstAttempts } from '../webhooks/webhook-jobs.js';
import type { IncidentReport } from './actors-and-cluster.js';
import type { Component } from './lifecycle.js';

/** Outbox entries a request finished itself, marked done together; flushed on stop. */
export function createFollowUps(options: { readonly config: Config; readonly persistence: Persistence; readonly report: IncidentReport }) {
  const doneMarker = createDoneMarker(options.persistence.outbox, options.config.tuning.outboxDoneFlushMs, (error) => {
    options.report({ what: 'outbox_mark_done_failed', error });
  });
  const component: Component = { name: 'follow-ups', stop: () => doneMarker.flush() };
  return { doneMarker, component };
}

export interface SchedulerOptions {
  readonly config: Config;
  readonly router: ActorRouter;
  readonly clock: Clock;
  /** Agenda's storage for scheduled occurrences; without it, scheduled sends wait in the outbox. */
  readonly agendaBackend?: AgendaBackend;
  readonly agendaLockers?: readonly AgendaBackend[];
  readonly metrics?: Metrics;
  readonly report: IncidentReport;
}

/** Wakes scheduled and recurring messages at their occurrences (none without Agenda's storage). */
export function createScheduler(options: SchedulerOptions) {
  const { config, clock, metrics, report } = options;
  const scheduler: OccurrenceScheduler | null = options.agendaBackend
    ? createOccurrenceScheduler({
        backend: options.agendaBackend,
        ...(options.agendaLockers ? { extraLockers: options.agendaLockers } : {}),
        router: options.router,
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
  const component: Component = { name: 'scheduler', start: () => scheduler?.start(), stop: () => scheduler?.stop() };
  return { scheduler, component };
}

export interface RelayOptions {
  readonly config: Config;
  readonly persistence: Persistence;
  readonly clock: Clock;
  readonly router: ActorRouter;
  /** In a cluster, each node relays what its own shards wrote. */
  readonly manager: ShardManager | null;
  /** Where dispatches and webhook events go; without one they stay in the outbox. */
  readonly transport?: Transport;
  /** This node's webhook worker, which may make a batch's first attempts at once instead of through the transport. */
  readonly firstAttempts?: FirstAttempts;
  readonly scheduler: OccurrenceScheduler | null;
  readonly completeCreation: (spec: MessageSpec) => Promise<void>;
  /** Extra outbox topics carried out by this node. */
  readonly extraHandlers?: TopicHandlers<OutboxPayloads>;
  /** Counts the webhook batches by the way they went (taken by `firstAttempts` or published). */
  readonly metrics?: Metrics;
  readonly report: IncidentReport;
}

/** The outbox relay: every topic's entries to the background job or the transport that carries them out. */
export function createRelay(options: RelayOptions): OutboxRelay {
  const { config, clock, router, manager, transport, scheduler, metrics, report } = options;
  const graceMs = config.tuning.outboxFollowUpGraceMs;
  const schedulerHandlers: TopicHandlers<OutboxPayloads> = scheduler
    ? {
        [SCHEDULE_REGISTER_TOPIC]: registerSchedules(scheduler, config.tuning.scheduleRegistrationsInFlight, (error) => {
          report({ what: 'schedule_register_failed', error });
        }),
      }
    : {};
  const transportHandlers: TopicHandlers<OutboxPayloads> = transport
    ? {
        [DISPATCH_TOPIC]: createDispatchRelay({
          transport,
          clock,
          onError: (error) => {
            report({ what: 'dispatch_relay_failed', error });
          },
        }),
        [WEBHOOK_TOPIC]: createWebhookRelay({
          router,
          transport,
          clock,
          ...(options.firstAttempts ? { firstAttempts: options.firstAttempts } : {}),
          onError: (error) => {
            report({ what: 'webhook_relay_failed', error });
          },
          onBatch: (sample) => {
            metrics?.webhookBatch(sample.path, sample.events);
          },
        }),
      }
    : {};
  return createOutboxRelay({
    outbox: options.persistence.outbox,
    clock,
    handlers: {
      [MESSAGE_CREATE_TOPIC]: finishInterruptedSends(options.completeCreation, graceMs),
      [WALLET_ADJUST_TOPIC]: adjustWallets(router, graceMs),
      [RECEIPT_TIMEOUT_TOPIC]: expireReceipts(router, config.scheduling.receiptTimeoutMs),
      ...schedulerHandlers,
      ...transportHandlers,
      ...options.extraHandlers,
    },
    pollIntervalMs: config.outbox.pollIntervalMs,
    batchSize: config.tuning.outboxBatchSize,
    ...(manager ? { shards: () => manager.ownedShards() } : {}),
    onError: (error) => {
      report({ what: 'outbox_relay_failed', error });
    },
  });
}
