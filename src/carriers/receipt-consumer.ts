import type { ActorRouter } from '../cluster/actor-router.js';
import { ActorFailureError } from '../libraries/actors/actor-runtime.js';
import type { Directory } from '../libraries/persistence/directory-port.js';
import { ACK, DROP, retryAfter, type Consumer, type Delivery, type Disposition, type Transport } from '../libraries/transport/transport-port.js';
import { checkReceipt, parseDispatchId } from './carrier-protocol.js';

export interface ReceiptConsumerOptions {
  readonly transport: Transport;
  readonly router: ActorRouter;
  /** Finds a message's merchant (the gateway's directory remembers owners). */
  readonly directory: Directory;
  readonly concurrency: number;
  readonly onReceipt?: (sample: { lagSeconds: number; changed: boolean }) => void;
  readonly onRejected?: (reason: string, delivery: Delivery) => void;
}

/**
 * Receipts from every connector → the message's actor (forward-only merge there). A receipt is acknowledged only
 * once the actor has journaled its effect; an invalid one or one for an unknown message is dropped and reported.
 */
export function createReceiptConsumer(options: ReceiptConsumerOptions) {
  let consumer: Consumer | null = null;

  async function handle(delivery: Delivery): Promise<Disposition> {
    const checked = checkReceipt(delivery.payload);
    if (!checked.ok) {
      options.onRejected?.(`invalid receipt: ${checked.errors.join('; ')}`, delivery);
      return DROP;
    }
    const receipt = checked.value;
    const dispatch = parseDispatchId(receipt.dispatch_id);
    const merchantId = dispatch ? await options.directory.messageOwner(dispatch.messageId) : null;
    if (!dispatch || !merchantId) {
      options.onRejected?.(`receipt for an unknown dispatch ${receipt.dispatch_id}`, delivery);
      return DROP;
    }
    const at = Date.parse(receipt.occurred_at);
    try {
      const reply = await options.router.message(merchantId, dispatch.messageId).ask({
        type: 'apply_receipt',
        receipt: {
          occurrence: dispatch.occurrence,
          recipient: dispatch.recipient,
          status: receipt.status,
          at,
          errorCode: receipt.error_code ?? null,
          errorMessage: receipt.error_message ?? null,
        },
      });
      if (!reply.ok) {
        options.onRejected?.(`receipt for a dispatch the message does not have: ${receipt.dispatch_id}`, delivery);
        return DROP;
      }
      options.onReceipt?.({ lagSeconds: Math.max(0, (Date.now() - at) / 1000), changed: reply.changed });
      return ACK;
    } catch (error) {
      if (error instanceof ActorFailureError) return retryAfter(1_000);
      throw error;
    }
  }

  return {
    async start(): Promise<void> {
      consumer = await options.transport.consume({
        stream: 'receipts',
        filter: 'sms.receipts.>',
        durable: 'gateway-receipts',
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
