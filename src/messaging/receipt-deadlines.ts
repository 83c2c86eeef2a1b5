import type { ActorRouter } from '../cluster/actor-router.js';
import type { ReceiptDeadline } from './message-behaviour.js';

/**
 * An occurrence's receipt deadline has passed (RECEIPT_TIMEOUT_MS after its dispatch): its recipients still without
 * a final receipt fail with 1503 (the message's actor decides which).
 */
export async function expireUnansweredRecipients(router: ActorRouter, deadline: ReceiptDeadline): Promise<void> {
  await router.message(deadline.merchantId, deadline.messageId).ask({ type: 'receipt_timeout', occurrence: deadline.occurrence });
}
