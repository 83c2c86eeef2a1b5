import type { ActorRouter } from '../../cluster/actor-router.js';
import { ActorFailureError } from '../../libraries/errors/internal-errors.js';
import { systemClock, type Clock } from '../../libraries/clock/clock.js';
import type { Directory } from '../../libraries/persistence/directory-port.js';
import { RECEIPTS_DURABLE, receiptSubject } from '../../libraries/transport/nats-names.js';
import {
  ACK,
  DROP,
  retryAfter,
  type Consumer,
  type Delivery,
  type Disposition,
  type Transport,
} from '../../libraries/transport/transport-port.js';
import type { CarrierReceipt, MessageReplies } from '../../messaging/message-behaviour.js';
import { readReceipts } from '../../carriers/carrier-protocol.js';
import { receiptsByMessage, type AddressedReceipt } from '../../carriers/message-receipts.js';

export interface ReceiptConsumerOptions {
  readonly transport: Transport;
  readonly router: ActorRouter;
  /** Finds a message's merchant (the gateway's directory remembers owners). */
  readonly directory: Directory;
  readonly concurrency: number;
  /** Measures the receipts' lag (default: the system clock). */
  readonly clock?: Clock;
  /**
   * Hands one message's receipts to its actor (by default one ask through the router; in a cluster, batched per
   * shard so that the receipts of many messages reach their owner in one hop).
   */
  readonly applyReceipts?: (
    merchantId: string,
    messageId: string,
    receipts: readonly CarrierReceipt[],
  ) => Promise<MessageReplies['apply_receipts']>;
  readonly onReceipt?: (sample: { lagSeconds: number; changed: boolean }) => void;
  readonly onRejected?: (reason: string, delivery: Delivery) => void;
}

/**
 * Receipts from every connector → the message's actor (forward-only merge there). A NATS message holds one receipt
 * or a batch; the receipts of one message in it go to its actor in one ask, journaled as one record. The NATS
 * message is acknowledged only once every actor it concerns has journaled its effect; an invalid receipt or one for
 * an unknown dispatch is left out and reported, and a message with nothing valid in it is dropped.
 */
export function createReceiptConsumer(options: ReceiptConsumerOptions) {
  const clock = options.clock ?? systemClock;
  let consumer: Consumer | null = null;
  const reject = (reason: string, delivery: Delivery): void => options.onRejected?.(reason, delivery);
  const applyReceipts =
    options.applyReceipts ??
    ((merchantId: string, messageId: string, receipts: readonly CarrierReceipt[]) =>
      options.router.message(merchantId, messageId).ask({ type: 'apply_receipts', receipts }));

  /** Applies one message's receipts; false when its actor failed and the whole delivery must come again. */
  async function applyToMessage(messageId: string, receipts: readonly AddressedReceipt[], delivery: Delivery): Promise<boolean> {
    const merchantId = await options.directory.messageOwner(messageId);
    if (!merchantId) {
      for (const { receipt } of receipts) reject(`receipt for an unknown dispatch ${receipt.dispatch_id}`, delivery);
      return true;
    }
    let reply: MessageReplies['apply_receipts'];
    try {
      reply = await applyReceipts(
        merchantId,
        messageId,
        receipts.map((r) => r.carrierReceipt),
      );
    } catch (error) {
      if (error instanceof ActorFailureError) return false;
      throw error;
    }
    const now = clock.now();
    receipts.forEach(({ receipt, carrierReceipt }, index) => {
      const outcome = reply.ok ? reply.outcomes[index] : undefined;
      if (!outcome?.ok) {
        reject(`receipt for a dispatch the message does not have: ${receipt.dispatch_id}`, delivery);
        return;
      }
      options.onReceipt?.({ lagSeconds: Math.max(0, (now - carrierReceipt.at) / 1000), changed: outcome.changed });
    });
    return true;
  }

  async function handle(delivery: Delivery): Promise<Disposition> {
    const read = readReceipts(delivery.payload);
    for (const reason of read.rejected) reject(reason, delivery);
    const byMessage = receiptsByMessage(read.receipts, (reason) => {
      reject(reason, delivery);
    });
    if (byMessage.size === 0) return DROP;
    const applied = await Promise.all([...byMessage].map(([messageId, receipts]) => applyToMessage(messageId, receipts, delivery)));
    // receipts already applied change nothing when the delivery comes again
    return applied.every(Boolean) ? ACK : retryAfter(1_000);
  }

  return {
    async start(): Promise<void> {
      consumer = await options.transport.consume({
        stream: 'receipts',
        filter: receiptSubject('>'),
        durable: RECEIPTS_DURABLE,
        concurrency: options.concurrency,
        ackWaitMs: 30_000,
        handler: handle,
      });
    },
    async stop(): Promise<void> {
      await consumer?.stop();
      consumer = null;
    },
  };
}
