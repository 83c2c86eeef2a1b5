import type { ActorRouter } from '../cluster/actor-router.js';
import type { EffectOf } from '../libraries/actors/behaviour.js';
import { isInteger, isRecord, isText } from '../libraries/validation/guards.js';

/** Outbox topic of an occurrence's receipt deadline: left at dispatch, carried out once the receipt timeout has passed. */
export const RECEIPT_TIMEOUT_TOPIC = 'receipt.timeout';

/** Payload of a `receipt.timeout` outbox entry. */
export interface ReceiptDeadline {
  readonly merchantId: string;
  readonly messageId: string;
  readonly occurrence: number;
}

export type ReceiptDeadlineEffect = EffectOf<typeof RECEIPT_TIMEOUT_TOPIC, ReceiptDeadline>;

/** A `receipt.timeout` payload read back from the outbox. */
export function isReceiptDeadline(value: unknown): value is ReceiptDeadline {
  return isRecord(value) && isText(value.merchantId) && isText(value.messageId) && isInteger(value.occurrence);
}

/** The outbox id of an occurrence's receipt deadline. */
export function receiptDeadlineId(messageId: string, occurrence: number): string {
  return `timeout:${messageId}:${occurrence}`;
}

/**
 * An occurrence's receipt deadline has passed (RECEIPT_TIMEOUT_MS after its dispatch): its recipients still without
 * a final receipt fail with 1503 (the message's actor decides which).
 */
export async function expireUnansweredRecipients(router: ActorRouter, deadline: ReceiptDeadline): Promise<void> {
  await router.message(deadline.merchantId, deadline.messageId).ask({ type: 'receipt_timeout', occurrence: deadline.occurrence });
}
