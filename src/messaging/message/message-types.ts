import type { COMPACT_JOURNAL, CompactJournalReply } from '../../libraries/actors/behaviour.js';
import type { CarrierStatus } from '../../carriers/carrier-outcomes.js';
import { isFiniteNumber, isInteger, isListOf, isNullableText, isOneOf, isRecord, isText } from '../../libraries/validation/guards.js';
import { isMoney, toDecimalNumber, type Money } from '../../pricing/money.js';
import { isRecurrenceRule, type RecurrenceRule } from '../../scheduling/recurrence.js';
import type { WalletAdjustment } from '../../wallets/wallet-adjustments.js';
import type { EventType } from '../../webhooks/event-envelope.js';
import type { RecipientSignal, RecipientState } from '../recipient-state.js';
import { ENCODINGS, type Encoding } from '../segments.js';
import { SENDING_TYPES, type SendingType } from '../send-request.js';

/**
 * MessageActor (`message:<messageId>`): one submitted message, all its recipients and occurrences. Every state
 * change the contract turns into a webhook event writes an outbox entry with the event (its id fixed now) in the
 * same append, when the event can go somewhere (webhook-presence.ts); so does every dispatch to a carrier.
 */

/** The message behaviour's kind: the prefix of its journal keys, and how a charge names the message it creates. */
export const MESSAGE_KIND = 'message';

export interface MessageRecipient {
  readonly index: number;
  readonly phone: string;
  readonly price: Money;
  readonly carrier: string;
}

export type OccurrenceStatus = 'scheduled' | 'dispatched' | 'skipped' | 'cancelled';

export interface Occurrence {
  readonly index: number;
  readonly scheduledAt: number;
  readonly status: OccurrenceStatus;
  readonly dispatchedAt: number | null;
  /** Per recipient, once dispatched. */
  readonly recipients: readonly RecipientState[] | null;
}

export type ScheduleState = 'active' | 'paused' | 'cancelled' | 'completed';

export interface MessageSpec {
  readonly messageId: string;
  readonly merchantId: string;
  readonly keyId: string;
  readonly text: string;
  readonly senderId: string | null;
  readonly encoding: Encoding;
  readonly segments: number;
  readonly callbackUrl: string | null;
  readonly currency: string;
  readonly sendingType: SendingType;
  readonly recipients: readonly MessageRecipient[];
  /** Occurrence instants for scheduled and recurring sends; empty for immediate ones. */
  readonly occurrences: readonly number[];
  readonly recurrence: RecurrenceRule | null;
  readonly totalMessages: number;
  readonly totalCost: Money;
  readonly costPerOccurrence: Money;
}

export interface MessageState {
  readonly created: boolean;
  readonly spec: MessageSpec | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly occurrences: readonly Occurrence[];
  readonly schedule: ScheduleState | null;
  readonly refunded: Money;
}

export type MessageEvent =
  | { readonly type: 'message_created'; readonly spec: MessageSpec; readonly at: number }
  | { readonly type: 'occurrence_dispatched'; readonly occurrence: number; readonly at: number }
  | {
      readonly type: 'recipient_signal';
      readonly occurrence: number;
      readonly recipient: number;
      readonly signal: RecipientSignal;
      readonly at: number;
    }
  | { readonly type: 'schedule_paused'; readonly at: number }
  | { readonly type: 'schedule_resumed'; readonly at: number }
  /** Occurrences that will never go, and the cost returned for them. */
  | { readonly type: 'occurrences_skipped'; readonly occurrences: readonly number[]; readonly refund: Money; readonly at: number }
  | { readonly type: 'schedule_cancelled'; readonly occurrences: readonly number[]; readonly refund: Money; readonly at: number };

export interface CarrierReceipt {
  readonly occurrence: number;
  readonly recipient: number;
  readonly status: CarrierStatus;
  /** When the carrier says it happened. */
  readonly at: number;
  readonly errorCode?: string | null;
  readonly errorMessage?: string | null;
  /** The carrier's own words for the outcome (`smpp:UNDELIV err:001`); absent: the status is the recipient's carrier_status. */
  readonly carrierStatus?: string;
}

/**
 * What the node knew, when the command was decided, of a webhook on the message's key: `none` when the key is known
 * to have none (its events then go nowhere unless the message has a callback_url), `maybe` otherwise. Absent: `maybe`.
 * Put into the commands that can yield webhook events by the message host's policy (message-decide.ts).
 */
export type KeyWebhook = 'maybe' | 'none';

export type MessageCommand =
  | { readonly type: 'create'; readonly spec: MessageSpec; readonly keyWebhook?: KeyWebhook }
  | { readonly type: 'dispatch_occurrence'; readonly occurrence: number }
  /** The scheduler's tick: dispatch every occurrence whose time has come; answers when to come back. */
  | { readonly type: 'dispatch_due' }
  /** 24 hours after an occurrence left: recipients without a final receipt fail with 1503. */
  | { readonly type: 'receipt_timeout'; readonly occurrence: number; readonly keyWebhook?: KeyWebhook }
  | { readonly type: 'apply_receipt'; readonly receipt: CarrierReceipt; readonly keyWebhook?: KeyWebhook }
  /** Several receipts of this message applied in order, journaled as one record (a connector's receipt batch). */
  | { readonly type: 'apply_receipts'; readonly receipts: readonly CarrierReceipt[]; readonly keyWebhook?: KeyWebhook }
  | { readonly type: 'status'; readonly merchantId: string }
  | { readonly type: 'cancel'; readonly merchantId: string }
  | { readonly type: 'pause'; readonly merchantId: string }
  | { readonly type: 'resume'; readonly merchantId: string }
  | { readonly type: typeof COMPACT_JOURNAL };

export interface SendReceipt {
  readonly message_id: string;
  readonly total_recipients: number;
  readonly total_messages: number;
  readonly total_cost: number;
  readonly currency: string;
  readonly status: 'pending';
}

export type NotFound = { readonly ok: false; readonly code: 'NOT_FOUND' };

/** What one receipt did: `changed` false for a duplicate or stale one, which emits nothing. */
export interface ReceiptOutcome {
  readonly ok: true;
  readonly changed: boolean;
  readonly events: readonly EventType[];
}

export interface MessageReplies {
  readonly create: { readonly ok: true; readonly created: boolean; readonly receipt: SendReceipt };
  readonly dispatch_occurrence:
    | { readonly ok: true; readonly dispatched: boolean }
    | NotFound
    | { readonly ok: false; readonly code: 'INVALID_STATE'; readonly state: OccurrenceStatus };
  readonly apply_receipt: ReceiptOutcome | NotFound;
  /** One outcome per receipt, in the order given; NOT_FOUND for a receipt naming a dispatch the message does not have. */
  readonly apply_receipts: { readonly ok: true; readonly outcomes: readonly (ReceiptOutcome | NotFound)[] } | NotFound;
  /** `lateMs`: how long after its instant the earliest occurrence dispatched now was due (null: none dispatched). */
  readonly dispatch_due:
    { readonly ok: true; readonly dispatched: readonly number[]; readonly next: number | null; readonly lateMs?: number | null } | NotFound;
  readonly receipt_timeout: { readonly ok: true; readonly failed: number } | NotFound;
  readonly status: { readonly ok: true; readonly state: MessageState } | NotFound;
  readonly cancel: ManagementReply;
  readonly pause: ManagementReply;
  readonly resume: ManagementReply;
  readonly compact_journal: CompactJournalReply;
}

/** Cancel, pause and resume: the state after, and what was refunded by this call. */
export type ManagementReply =
  | { readonly ok: true; readonly state: MessageState; readonly refunded: Money; readonly adjustment: WalletAdjustment | null }
  | NotFound
  | { readonly ok: false; readonly code: 'INVALID_STATE' };

const isMessageRecipient = (value: unknown): value is MessageRecipient =>
  isRecord(value) && isInteger(value.index) && isText(value.phone) && isMoney(value.price) && isText(value.carrier);

/** A message's spec read back from storage (the `message.create` outbox entry of a send charged but not yet created). */
export function isMessageSpec(value: unknown): value is MessageSpec {
  return (
    isRecord(value) &&
    isText(value.messageId) &&
    isText(value.merchantId) &&
    isText(value.keyId) &&
    isText(value.text) &&
    isNullableText(value.senderId) &&
    isOneOf(ENCODINGS, value.encoding) &&
    isInteger(value.segments) &&
    isNullableText(value.callbackUrl) &&
    isText(value.currency) &&
    isOneOf(SENDING_TYPES, value.sendingType) &&
    isListOf(value.recipients, isMessageRecipient) &&
    isListOf(value.occurrences, isFiniteNumber) &&
    (value.recurrence === null || isRecurrenceRule(value.recurrence)) &&
    isInteger(value.totalMessages) &&
    isMoney(value.totalCost) &&
    isMoney(value.costPerOccurrence)
  );
}

export function sendReceipt(spec: MessageSpec): SendReceipt {
  return {
    message_id: spec.messageId,
    total_recipients: spec.recipients.length,
    total_messages: spec.totalMessages,
    total_cost: toDecimalNumber(spec.totalCost),
    currency: spec.currency,
    status: 'pending',
  };
}
