import type { ApiKeyReplies } from '../api-keys/api-key-behaviour.js';
import { messageReceiptsOf, type MessageReceipts } from '../carriers/message-receipts.js';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { ClusterRouter } from '../cluster/cluster-router.js';
import { createShardBatches } from '../cluster/shard-batches.js';
import { createReceiptConsumer } from '../entry-points/transport/receipt-consumer.js';
import { createWebhookWorker } from '../entry-points/transport/webhook-worker.js';
import { meteredDeadLetters } from '../gateway-metrics.js';
import type { Clock } from '../libraries/clock/clock.js';
import type { Config } from '../libraries/config/config.js';
import { silentLogger, type Logger } from '../libraries/logger/logger.js';
import type { Metrics } from '../libraries/observability/metrics.js';
import type { Directory } from '../libraries/persistence/directory-port.js';
import type { OutboxRelay } from '../libraries/persistence/outbox-relay.js';
import type { Persistence } from '../libraries/persistence/persistence.js';
import type { SecretBox } from '../libraries/secrets/secret-box.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { CarrierReceipt, MessageReplies } from '../messaging/message-behaviour.js';
import { webhookUrlPolicyOf } from '../webhooks/url-guard.js';
import { createThreadedWebhookSender } from '../webhooks/threaded-webhook-sender.js';
import { createWebhookSender, type WebhookSender } from '../webhooks/webhook-sender.js';
import type { IncidentReport } from './actors-and-cluster.js';
import type { Component } from './lifecycle.js';

/**
 * How webhooks are sent: the given sender (its owner closes it), or one of this node's, closed on stop: in a worker
 * thread when WEBHOOK_SENDER_THREAD says so.
 */
export function createWebhookSending(config: Config, report: IncidentReport, given?: WebhookSender) {
  const options = { timeoutMs: config.webhooks.timeoutMs, policy: webhookUrlPolicyOf(config), userAgent: `sms-gateway/${config.version}` };
  const sender =
    given ??
    (config.webhooks.senderThread
      ? createThreadedWebhookSender({
          ...options,
          onError: (error) => {
            report({ what: 'webhook_sender_thread', error });
          },
        })
      : createWebhookSender(options));
  const component: Component = { name: 'webhook-sender', stop: () => (given ? undefined : sender.close()) };
  return { sender, component };
}

export interface TransportWorkerOptions {
  readonly config: Config;
  readonly transport?: Transport;
  readonly router: ActorRouter;
  readonly clusterRouter: ClusterRouter | null;
  readonly directory: Directory;
  readonly persistence: Persistence;
  readonly sender: WebhookSender;
  readonly clock: Clock;
  readonly secrets: SecretBox;
  readonly metrics?: Metrics;
  readonly logger?: Logger;
  readonly report: IncidentReport;
}

/** The consumers of the transport's subjects: carriers' receipts and webhook jobs (none without a transport). */
export function createTransportWorkers(options: TransportWorkerOptions) {
  const { config, transport, router, clusterRouter, metrics, report } = options;
  // in a cluster, the receipts of many messages reach their shard's owner in one hop per shard
  const receiptBatches = clusterRouter
    ? createShardBatches<MessageReceipts, MessageReplies['apply_receipts']>({
        name: 'receipts',
        router: clusterRouter,
        itemOf: messageReceiptsOf,
        maxBatch: config.tuning.clusterReceiptBatchMax,
        perform: (merchantId, item, scope) =>
          router.message(merchantId, item.messageId).ask({ type: 'apply_receipts', receipts: item.receipts }, { scope }),
      })
    : null;
  const receipts = transport
    ? createReceiptConsumer({
        transport,
        router,
        directory: options.directory,
        concurrency: config.tuning.receiptConcurrency,
        ...(receiptBatches
          ? {
              applyReceipts: (merchantId: string, messageId: string, carrierReceipts: readonly CarrierReceipt[]) =>
                receiptBatches.run(merchantId, { messageId, receipts: carrierReceipts }),
            }
          : {}),
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
        itemOf: (value) =>
          typeof value === 'object' && value !== null && 'keyId' in value && typeof value.keyId === 'string'
            ? { keyId: value.keyId }
            : null,
        maxBatch: config.tuning.clusterWebhookTargetBatchMax,
        perform: (merchantId, item, scope) => router.apiKey(merchantId, item.keyId).ask({ type: 'webhook_target' }, { scope }),
      })
    : null;
  const deadLetters = options.persistence.deadLetters;
  const webhooks = transport
    ? createWebhookWorker({
        transport,
        router,
        sender: options.sender,
        ...(targetBatches ? { webhookTarget: (merchantId: string, keyId: string) => targetBatches.run(merchantId, { keyId }) } : {}),
        deadLetters: metrics ? meteredDeadLetters(deadLetters, metrics) : deadLetters,
        clock: options.clock,
        retryDelaysMs: config.webhooks.retryDelaysMs,
        secrets: options.secrets,
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
  return { receipts, webhooks };
}

/**
 * The consumers and the outbox relay as one part: the consumers' durables exist before the relay publishes (their
 * streams drop what no durable wants), and the relay stops after them (what they wrote while draining still goes
 * out).
 */
export function deliveriesComponent(workers: ReturnType<typeof createTransportWorkers>, relay: OutboxRelay): Component {
  return {
    name: 'deliveries',
    async start() {
      await workers.receipts?.start();
      await workers.webhooks?.start();
      relay.start();
    },
    async stop() {
      await workers.receipts?.stop();
      await workers.webhooks?.stop();
      await relay.stop();
    },
  };
}
