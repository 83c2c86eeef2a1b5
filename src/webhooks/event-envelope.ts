import { failureMessage, isRetryable } from '../carriers/carrier-outcomes.js';
import { toIsoUtc } from '../libraries/clock/clock.js';
import { isFiniteNumber, isFlag, isNullableText, isOneOf, isRecord, isText } from '../libraries/validation/guards.js';

export const EVENT_TYPES = ['sms.queued', 'sms.processing', 'sms.sent', 'sms.delivered', 'sms.failed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

/** Present on every recipient event (additive to the contract): which recipient and which occurrence. */
interface DispatchRef {
  readonly recipient_index: number;
  /** Only for scheduled and recurring sends. */
  readonly occurrence_index?: number;
  readonly scheduled_at?: string;
}

export interface QueuedData {
  readonly total_recipients: number;
  readonly total_messages: number;
  readonly total_cost: number;
  readonly currency: string;
  readonly scheduled_at: string | null;
}
export interface ProcessingData extends DispatchRef {
  readonly recipient_phone: string;
  readonly carrier: string;
}
export interface SentData extends ProcessingData {
  readonly sent_at: string;
}
export interface DeliveredData extends ProcessingData {
  readonly delivered_at: string;
  readonly segments: number;
}
export interface FailedData extends ProcessingData {
  readonly failed_at: string;
  readonly error_code: string;
  readonly error_message: string;
  readonly retryable: boolean;
}

export interface EventDataByType {
  'sms.queued': QueuedData;
  'sms.processing': ProcessingData;
  'sms.sent': SentData;
  'sms.delivered': DeliveredData;
  'sms.failed': FailedData;
}

/** The contract's envelope; `event_id` is fixed when the event is recorded, so every retry carries it. */
export type WebhookEvent = {
  [T in EventType]: {
    readonly event_id: string;
    readonly event_type: T;
    readonly timestamp: string;
    readonly message_id: string;
    readonly data: EventDataByType[T];
  };
}[EventType];

type FieldCheck = (value: unknown) => boolean;

const RECIPIENT_FIELDS: Readonly<Record<string, FieldCheck>> = {
  recipient_index: isFiniteNumber,
  recipient_phone: isText,
  carrier: isText,
};

/** The `data` fields each event type carries (recipient events may add `occurrence_index` and `scheduled_at`). */
const DATA_FIELDS: Readonly<Record<EventType, Readonly<Record<string, FieldCheck>>>> = {
  'sms.queued': {
    total_recipients: isFiniteNumber,
    total_messages: isFiniteNumber,
    total_cost: isFiniteNumber,
    currency: isText,
    scheduled_at: isNullableText,
  },
  'sms.processing': RECIPIENT_FIELDS,
  'sms.sent': { ...RECIPIENT_FIELDS, sent_at: isText },
  'sms.delivered': { ...RECIPIENT_FIELDS, delivered_at: isText, segments: isFiniteNumber },
  'sms.failed': { ...RECIPIENT_FIELDS, failed_at: isText, error_code: isText, error_message: isText, retryable: isFlag },
};

/** An event read back from storage: the envelope, a known type, and the data fields of that type. */
export function isWebhookEvent(value: unknown): value is WebhookEvent {
  if (!isRecord(value) || !isText(value.event_id) || !isText(value.timestamp) || !isText(value.message_id)) return false;
  const type = value.event_type;
  const data = value.data;
  if (!isOneOf(EVENT_TYPES, type) || !isRecord(data)) return false;
  return Object.entries(DATA_FIELDS[type]).every(([field, check]) => check(data[field]));
}

export function buildEvent<T extends EventType>(
  type: T,
  messageId: string,
  data: EventDataByType[T],
  eventId: string,
  emittedAt: number,
): Extract<WebhookEvent, { event_type: T }> {
  return { event_id: eventId, event_type: type, timestamp: toIsoUtc(emittedAt), message_id: messageId, data } as Extract<
    WebhookEvent,
    { event_type: T }
  >;
}

export interface RecipientEventFacts {
  readonly type: Exclude<EventType, 'sms.queued'>;
  readonly phone: string;
  readonly carrier: string;
  readonly recipientIndex: number;
  readonly occurrence: { readonly index: number; readonly scheduledAt: number } | null;
  readonly at: number;
  readonly segments: number;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
}

/** The `data` of a recipient event: exactly the contract's fields for its type, plus the dispatch reference. */
export function recipientEventData(facts: RecipientEventFacts): EventDataByType[Exclude<EventType, 'sms.queued'>] {
  const base: ProcessingData = {
    recipient_phone: facts.phone,
    carrier: facts.carrier,
    recipient_index: facts.recipientIndex,
    ...(facts.occurrence ? { occurrence_index: facts.occurrence.index, scheduled_at: toIsoUtc(facts.occurrence.scheduledAt) } : {}),
  };
  const at = toIsoUtc(facts.at);
  switch (facts.type) {
    case 'sms.processing':
      return base;
    case 'sms.sent':
      return { ...base, sent_at: at };
    case 'sms.delivered':
      return { ...base, delivered_at: at, segments: facts.segments };
    case 'sms.failed': {
      const code = facts.errorCode ?? '1501';
      return {
        ...base,
        failed_at: at,
        error_code: code,
        error_message: facts.errorMessage ?? failureMessage(code),
        retryable: isRetryable(code),
      };
    }
  }
}
