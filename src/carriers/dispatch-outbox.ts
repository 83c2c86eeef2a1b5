import type { EffectOf } from '../libraries/actors/behaviour.js';
import { isInteger, isListOf, isNullableText, isOneOf, isRecord, isText } from '../libraries/validation/guards.js';
import { ENCODINGS, type Encoding } from '../messaging/segments.js';

/** Outbox topic of a message's dispatch to its carriers (carried out by dispatch-relay.ts). */
export const DISPATCH_TOPIC = 'carrier.dispatch';

/** One recipient of a dispatch, and the carrier that takes it. */
export interface DispatchRecipient {
  readonly index: number;
  readonly phone: string;
  readonly carrier: string;
}

/** Payload of a `carrier.dispatch` outbox entry: one occurrence to every recipient. */
export interface DispatchOutboxPayload {
  readonly messageId: string;
  readonly merchantId: string;
  readonly occurrence: number;
  readonly senderId: string | null;
  readonly text: string;
  readonly encoding: Encoding;
  readonly segments: number;
  readonly recipients: readonly DispatchRecipient[];
}

export type DispatchEffect = EffectOf<typeof DISPATCH_TOPIC, DispatchOutboxPayload>;

const isDispatchRecipient = (value: unknown): value is DispatchRecipient =>
  isRecord(value) && isInteger(value.index) && isText(value.phone) && isText(value.carrier);

/** A `carrier.dispatch` payload read back from the outbox. */
export function isDispatchOutboxPayload(value: unknown): value is DispatchOutboxPayload {
  return (
    isRecord(value) &&
    isText(value.messageId) &&
    isText(value.merchantId) &&
    isInteger(value.occurrence) &&
    isNullableText(value.senderId) &&
    isText(value.text) &&
    isOneOf(ENCODINGS, value.encoding) &&
    isInteger(value.segments) &&
    isListOf(value.recipients, isDispatchRecipient)
  );
}
