/**
 * The merchant API's public shapes, as on the wire (snake_case): the contract's fields plus the additive ones the
 * README lists. Declared here rather than imported so the client carries no server code.
 */

// ---------------------------------------------------------------------------------------------------------------
// POST /send

export type SendingType = 'immediate' | 'scheduled' | 'recurring';

/** A date and time in the merchant's time zone. */
export interface ScheduledDate {
  /** `YYYY-MM-DD` */
  readonly date: string;
  /** `HH:mm`, 24-hour */
  readonly time: string;
}

export type Frequency = 'daily' | 'weekly' | 'monthly' | 'yearly';

export interface RecurringSchedule {
  /** `YYYY-MM-DD` */
  readonly start_date: string;
  /** `YYYY-MM-DD`; absent or null: open-ended (pre-computed over 365 days). */
  readonly end_date?: string | null;
  readonly frequency: Frequency;
  /** Every N units of `frequency`, 1–1000. */
  readonly interval: number;
  /** Distinct `HH:mm` send times of each occurrence day. */
  readonly times: readonly string[];
}

interface SendFields {
  /** 1–1000 numbers; spaces and dashes are ignored. */
  readonly to: readonly string[];
  /** 1–1600 characters. */
  readonly message: string;
  /** 1–11 letters, digits, spaces and `-_.&`. */
  readonly sender_id?: string | null;
  /** An absolute `https://` URL that also receives this message's events. */
  readonly callback_url?: string | null;
}

/** The body of `POST /send`; a null optional field is the same as leaving it out. */
export type SendRequest =
  | (SendFields & { readonly sending_type?: 'immediate'; readonly scheduled_dates?: null; readonly recurring_schedule?: null })
  | (SendFields & {
      readonly sending_type: 'scheduled';
      readonly scheduled_dates: readonly ScheduledDate[];
      readonly recurring_schedule?: null;
    })
  | (SendFields & { readonly sending_type: 'recurring'; readonly recurring_schedule: RecurringSchedule; readonly scheduled_dates?: null });

export interface SendResult {
  readonly message_id: string;
  readonly total_recipients: number;
  /** Recipients × segments (× occurrences for a schedule). */
  readonly total_messages: number;
  /** Deducted at submit time. */
  readonly total_cost: number;
  readonly currency: string;
  readonly status: 'pending';
}

// ---------------------------------------------------------------------------------------------------------------
// GET /status/{message_id}

/** The contract's status values, stable within v1. */
export type MessageStatusValue =
  | 'pending'
  | 'scheduled'
  | 'processing'
  | 'accepted'
  | 'enroute'
  | 'sent'
  | 'delivered'
  | 'partially_delivered'
  | 'delivery_unknown'
  | 'undelivered'
  | 'rejected'
  | 'expired'
  | 'failed'
  | 'unknown'
  | 'none';

export type RecipientStatus = 'pending' | 'processing' | 'sent' | 'delivered' | 'failed';

export interface RecipientView {
  /** Position in the request's `to`. */
  readonly recipient_index: number;
  readonly phone: string;
  /** `cancelled` / `skipped` only when a schedule ended without dispatching any occurrence. */
  readonly status: RecipientStatus | 'cancelled' | 'skipped';
  /** The carrier's precise outcome (`accepted`, `undelivered`, …), null before the carrier answered. */
  readonly carrier_status: string | null;
  readonly segments: number;
  readonly carrier: string;
  readonly error_code: string | null;
  readonly error_message: string | null;
  readonly updated_at: string | null;
  readonly sent_at: string | null;
  readonly delivered_at: string | null;
  readonly failed_at: string | null;
}

export interface ScheduleView {
  readonly type: 'scheduled' | 'recurring';
  readonly state: 'active' | 'paused' | 'cancelled' | 'completed';
  readonly next_occurrence_at: string | null;
  readonly occurrences_total: number;
  readonly occurrences_dispatched: number;
  readonly occurrences_remaining: number;
}

export interface OccurrenceView {
  readonly occurrence_index: number;
  readonly status: RecipientStatus | 'scheduled' | 'skipped' | 'cancelled';
  readonly scheduled_at: string;
  readonly delivered: number;
  readonly failed: number;
  readonly pending: number;
  /** Every recipient of a cancelled occurrence, else 0. */
  readonly cancelled: number;
  /** Every recipient of a skipped occurrence, else 0. */
  readonly skipped: number;
}

export interface MessageStatus {
  readonly message_id: string;
  readonly status: MessageStatusValue;
  readonly total_recipients: number;
  readonly delivered: number;
  readonly failed: number;
  readonly pending: number;
  /** Recipients never to be sent: the schedule was cancelled before its first dispatch. */
  readonly cancelled: number;
  /** Recipients never to be sent: every occurrence passed while the schedule was paused. */
  readonly skipped: number;
  readonly created_at: string;
  readonly updated_at: string;
  /** For a schedule: the most recent dispatched occurrence. */
  readonly recipients: readonly RecipientView[];
  readonly sending_type: SendingType;
  /** Null for an immediate send. */
  readonly schedule: ScheduleView | null;
  /** Empty for an immediate send. */
  readonly occurrences: readonly OccurrenceView[];
}

// ---------------------------------------------------------------------------------------------------------------
// GET /balance, POST /calculate

export interface Balance {
  readonly balance: number;
  readonly sms_wallet_balance: number;
  readonly postpaid_wallet_balance: number;
  readonly currency: string;
  readonly unit_price: number;
  readonly available_sms: number;
}

export type CalculationMode = 'amount_to_sms' | 'sms_to_amount';

export type CalculateRequest =
  { readonly mode: 'amount_to_sms'; readonly amount: number } | { readonly mode: 'sms_to_amount'; readonly sms_count: number };

export interface CalculationResult<M extends CalculationMode = CalculationMode> {
  readonly mode: M;
  /** Rounded to 2 decimals when computed. */
  readonly amount: number;
  /** Floored when computed. */
  readonly sms_count: number;
  readonly average_price: number;
  readonly currency: string;
  readonly currency_symbol: string;
}

// ---------------------------------------------------------------------------------------------------------------
// DELETE /cancel/{id}, POST /pause/{id}, POST /resume/{id}

export interface ScheduleActionResult {
  readonly message_id: string;
  readonly schedule: ScheduleView | null;
}

/** Cancel and resume also say what went back to the wallets. */
export interface ScheduleRefundResult extends ScheduleActionResult {
  readonly refunded_amount: number;
}

// ---------------------------------------------------------------------------------------------------------------
// GET /health

export interface Health {
  readonly status: 'ok' | 'degraded';
  readonly version: string;
  readonly environment: 'sandbox' | 'production';
  readonly checks: {
    readonly database: 'ok' | 'down';
    readonly transport: 'ok' | 'down';
    /** By carrier slug: whether a connector of the carrier is live, and how many are. */
    readonly carriers: Readonly<Record<string, { readonly status: 'ok' | 'down'; readonly connectors: number }>>;
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Errors

export interface FieldDetail {
  /** A path such as `scheduled_dates[2].time`. */
  readonly field: string;
  readonly message: string;
  readonly type: string;
}

/** The contract's service-error envelope. */
export interface ErrorEnvelope {
  readonly success: false;
  readonly status_code: number;
  readonly error_code: string;
  readonly message: string;
  readonly request_id: string;
  readonly details?: readonly FieldDetail[];
  readonly retry_after?: number;
}

// ---------------------------------------------------------------------------------------------------------------
// Webhook events

export const EVENT_TYPES = ['sms.queued', 'sms.processing', 'sms.sent', 'sms.delivered', 'sms.failed'] as const;
export type EventType = (typeof EVENT_TYPES)[number];

export interface QueuedData {
  readonly total_recipients: number;
  readonly total_messages: number;
  readonly total_cost: number;
  readonly currency: string;
  /** First occurrence of a schedule (UTC), null for an immediate send. */
  readonly scheduled_at: string | null;
}

export interface ProcessingData {
  readonly recipient_phone: string;
  /** Connector slug; informational, not stable. */
  readonly carrier: string;
  readonly recipient_index: number;
  /** Scheduled and recurring sends only. */
  readonly occurrence_index?: number;
  readonly scheduled_at?: string;
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
  /** A carrier-level code, 1501–1599. */
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

/** One webhook delivery: discriminated on `event_type`. A retry carries the same `event_id`. */
export type WebhookEvent = {
  [T in EventType]: {
    readonly event_id: string;
    readonly event_type: T;
    readonly timestamp: string;
    readonly message_id: string;
    readonly data: EventDataByType[T];
  };
}[EventType];
