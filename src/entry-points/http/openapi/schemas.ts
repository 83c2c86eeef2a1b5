import { RECIPIENT_STATUSES } from '../../../carriers/carrier-outcomes.js';
import { CARRIER_CODE_RANGE, ERROR_CATALOGUE } from '../../../libraries/errors/error-catalogue.js';
import type { FieldIssue } from '../../../libraries/errors/app-error.js';
import type { SendReceipt } from '../../../messaging/message-behaviour.js';
import type { MessageStatusView, OccurrenceView, RecipientView, ScheduleView } from '../../../messaging/message-view.js';
import type { ScheduleActionData } from '../../../messaging/manage-schedule-use-case.js';
import type { CalculationData } from '../../../pricing/calculate-use-case.js';
import type { BalanceData } from '../../../wallets/wallet-use-cases.js';
import type { DeliveredData, EventType, FailedData, ProcessingData, QueuedData, SentData } from '../../../webhooks/event-envelope.js';
import type { CarrierHealth, HealthReport } from '../app/health.js';
import type { JsonSchema } from '../joi-json-schema.js';
import { serviceCodes } from './components.js';
import type { JsonObject } from './openapi-document.js';
import { calculateRequestSchema, sendRequestSchema } from './request-schemas.js';
import type { SchemaName } from './schema-names.js';
import {
  decimal,
  integer,
  nullable,
  nullableText,
  nullableTimestamp,
  objectOf,
  oneOfValues,
  ref,
  text,
  timestamp,
} from './schema-vocabulary.js';

// Response and event schemas, typed against the code's response types

interface HealthData {
  readonly status: 'ok' | 'degraded';
  readonly version: string;
  readonly environment: 'sandbox' | 'production';
  readonly checks: HealthReport['checks'];
}

interface ServiceErrorBody {
  readonly success: false;
  readonly status_code: number;
  readonly error_code: string;
  readonly message: string;
  readonly request_id: string;
  readonly details?: readonly FieldIssue[];
  readonly retry_after?: number;
}

const AGGREGATE_STATUSES = ['pending', 'processing', 'sent', 'delivered', 'failed'] as const;
const ERROR_CODE: JsonObject = { type: 'string', pattern: '^[0-9]{4}$' };

const recipientRef = {
  recipient_index: integer('Position of the recipient in the `to` array of the send (additive).'),
  occurrence_index: integer('Scheduled and recurring sends only: which occurrence, in chronological order from 0 (additive).'),
  scheduled_at: timestamp('Scheduled and recurring sends only: the UTC time of that occurrence (additive).'),
} as const;

export function componentSchemas(): Record<SchemaName, JsonSchema> {
  return {
    SendRequest: sendRequestSchema(),
    CalculateRequest: calculateRequestSchema(),
    FieldIssue: objectOf<FieldIssue>('One entry of `details[]`: which field failed and why.', {
      field: text(
        'Path of the field, such as `to[0]` or `scheduled_dates[2].time`; `body` for the body as a whole, `Idempotency-Key` for that header.',
      ),
      message: text('Human-readable reason.'),
      type: text(
        'Machine-readable reason: a joi error type (`string.max`, `object.unknown`, `any.required`, …) or one of the gateway (`phone.invalid`, `schedule.limit`, `body.json`, …).',
      ),
    }),
    ServiceError: {
      ...objectOf<ServiceErrorBody>(
        'The service-error envelope. `request_id` equals the `X-Request-Id` response header.',
        {
          success: { const: false },
          status_code: integer('The HTTP status.'),
          error_code: { ...ERROR_CODE, description: 'Four-digit code of the error catalogue (`x-error-codes`), always a string.' },
          message: text('Human-readable text; may change, clients branch on `error_code`.'),
          request_id: text('Quote it to support.'),
          details: { type: 'array', items: ref('FieldIssue'), minItems: 1, description: 'Present for validation errors (1110).' },
          retry_after: integer('Seconds to wait before retrying: on 429/1301, 403/1302 and 503/1402; equals the `Retry-After` header.'),
        },
        ['details', 'retry_after'],
      ),
      allOf: [
        {
          if: { required: ['error_code'], properties: { error_code: { const: ERROR_CATALOGUE.INVALID_FIELD_FORMAT.code } } },
          then: { required: ['details'] },
        },
        {
          if: {
            required: ['error_code'],
            properties: { error_code: { enum: serviceCodes(['RATE_LIMIT_EXCEEDED', 'SUSPICIOUS_ACTIVITY']) } },
          },
          then: { required: ['retry_after'] },
        },
      ],
    },
    Detail: objectOf<{ detail: string }>(
      'Authentication failures and unknown messages: exactly `{detail}`. Branch on the HTTP status, not on the text.',
      {
        detail: text('Human-readable text; may be localised and change.'),
      },
    ),
    Health: objectOf<HealthData>('`GET /health` data.', {
      status: oneOfValues(
        ['ok', 'degraded'],
        '`ok` with HTTP 200; `degraded` with HTTP 503 when the database or the transport is down or the node is stopping, or with HTTP 200 when only a carrier is `down`.',
      ),
      version: text('Version of the gateway.'),
      environment: oneOfValues(['sandbox', 'production'], 'The environment this process serves.'),
      checks: objectOf<HealthReport['checks']>(
        'Each dependency.',
        {
          database: oneOfValues(['ok', 'down'], 'The database.'),
          transport: oneOfValues(['ok', 'down'], 'The message transport to the carrier connectors.'),
          carriers: {
            type: 'object',
            description:
              'By carrier slug: every carrier this environment routes to (production: the carriers the pricing rows name and the default carrier; ' +
              'sandbox: `simulator`), and any other carrier whose connector announces itself.',
            additionalProperties: objectOf<CarrierHealth>('One carrier.', {
              status: oneOfValues(
                ['ok', 'down'],
                '`ok` when at least one of its connectors is live; `down` when none is (its SMS wait in the queue).',
              ),
              connectors: integer('Live connectors of the carrier.'),
            }),
          },
          node: oneOfValues(
            ['stopping'],
            'Present only once the node has begun to stop (a signal): it then answers 503 `degraded`, while it still serves for `SHUTDOWN_DRAIN_MS` and finishes the requests in flight, so a load balancer takes it out.',
          ),
        },
        ['node'],
      ),
    }),
    SendResult: objectOf<SendReceipt>('`POST /send` data.', {
      message_id: text('Identifies the whole batch of recipients and dates.'),
      total_recipients: integer('Equals the length of `to` (duplicates included).'),
      total_messages: integer('Recipients × segments × occurrences (1 for an immediate send).'),
      total_cost: decimal(
        'Σ over recipients of segments × price(destination) × occurrences, in `currency` (up to 4 decimals): each destination is charged ' +
          'the price of its longest matching pricing row, `unit_price` when none matches. Deducted at submit (prepaid first, then postpaid); ' +
          'equal to `total_messages × unit_price` when all destinations share one price.',
      ),
      currency: text('ISO 4217 code of the wallet.', { pattern: '^[A-Z]{3}$' }),
      status: {
        const: 'pending',
        description: 'Always `pending`, also for scheduled and recurring sends (they then show `scheduled` in `GET /status`).',
      },
    }),
    MessageStatus: objectOf<MessageStatusView>(
      "`GET /status/{message_id}` data: the contract's Message, plus `sending_type`, `schedule` and `occurrences` (additive).",
      {
        message_id: text('From `POST /send`.'),
        status: oneOfValues(
          [...AGGREGATE_STATUSES, 'scheduled'],
          'Aggregate over the recipients: all terminal → `delivered` if any was delivered, else `failed`; some pending and none terminal → ' +
            '`pending`; all handed off → `sent`; otherwise `processing`. A scheduled or recurring send shows `scheduled` until its first ' +
            'dispatch (also when cancelled before it), then the aggregate of its most recent dispatched occurrence. The other values of the ' +
            'contract (`accepted`, `enroute`, `unknown`, …) are never produced here: they are carrier outcomes, see `recipients[].carrier_status`.',
        ),
        total_recipients: integer('Entries in `to`.'),
        delivered: integer('Recipients `delivered`.'),
        failed: integer('Recipients `failed`.'),
        pending: integer(
          'Recipients not terminal (`pending`, `processing`, `sent`). `delivered + failed + pending + cancelled + skipped = total_recipients`; ' +
            'for an immediate send, or once a schedule has dispatched, `cancelled` and `skipped` are 0 and `delivered + failed + pending = total_recipients`.',
        ),
        cancelled: integer(
          'Recipients that will never be sent because the schedule was cancelled before its first dispatch (additive); then `pending` is 0.',
        ),
        skipped: integer(
          'Recipients that will never be sent because every occurrence passed while the schedule was paused (additive); then `pending` is 0.',
        ),
        created_at: timestamp('When `POST /send` was accepted (UTC).'),
        updated_at: timestamp('Last state change (UTC).'),
        recipients: {
          type: 'array',
          items: ref('Recipient'),
          description:
            'One per entry of `to`; for a schedule, as of its most recent dispatched occurrence, or `cancelled` / `skipped` when the schedule ' +
            'ended without dispatching any.',
        },
        sending_type: oneOfValues(['immediate', 'scheduled', 'recurring'], 'As sent (additive).'),
        schedule: { ...nullable(ref('Schedule')), description: '`null` for an immediate send (additive).' },
        occurrences: {
          type: 'array',
          items: ref('Occurrence'),
          description: 'Every occurrence of a schedule in order; empty for an immediate send (additive).',
        },
      },
    ),
    Recipient: objectOf<RecipientView>('One recipient of a message.', {
      recipient_index: integer('Position in `to`.'),
      phone: text('The number in E.164.'),
      status: oneOfValues(
        [...RECIPIENT_STATUSES, 'cancelled', 'skipped'],
        'Only moves forward; `delivered` and `failed` are terminal. `cancelled` / `skipped` (additive) only when a schedule ended without ' +
          'dispatching any occurrence: the recipient was never sent and never will be.',
      ),
      carrier_status: {
        type: ['string', 'null'],
        maxLength: 100,
        description:
          "The carrier's precise outcome (`accepted`, `enroute`, `undelivered`, `expired`, …), or the message centre's own words for it when " +
          'its connector gives them (`smpp:UNDELIV err:001`, `smpp:0x0000000b ESME_RINVDSTADR`, `kannel:2`); `null` before the first receipt.',
      },
      segments: integer('Segments of the message.', { minimum: 1 }),
      carrier: text('Internal connector slug; informational, not stable.'),
      error_code: {
        ...nullableText(`Carrier-level code (${CARRIER_CODE_RANGE.min}–${CARRIER_CODE_RANGE.max}) when failed.`),
        pattern: '^[0-9]{4}$',
      },
      error_message: nullableText('Text of `error_code`.'),
      updated_at: nullableTimestamp('Last change of this recipient.'),
      sent_at: nullableTimestamp('When the message centre accepted it.'),
      delivered_at: nullableTimestamp('When it was delivered.'),
      failed_at: nullableTimestamp('When it failed.'),
    }),
    Schedule: objectOf<ScheduleView>('The schedule of a scheduled or recurring send.', {
      type: oneOfValues(['scheduled', 'recurring'], 'The sending type.'),
      state: oneOfValues(
        ['active', 'paused', 'cancelled', 'completed'],
        'Changed by cancel, pause and resume; `completed` after the last occurrence.',
      ),
      next_occurrence_at: nullableTimestamp('Next occurrence still to dispatch; `null` when cancelled or completed.'),
      occurrences_total: integer('All occurrences.'),
      occurrences_dispatched: integer('Occurrences sent.'),
      occurrences_remaining: integer('Occurrences still scheduled.'),
    }),
    Occurrence: objectOf<OccurrenceView>('One occurrence of a schedule.', {
      occurrence_index: integer('Position in chronological order, from 0.'),
      status: oneOfValues(
        [...AGGREGATE_STATUSES, 'scheduled', 'skipped', 'cancelled'],
        '`scheduled` before dispatch, the aggregate of its recipients after; `skipped` (time passed while paused, refunded) or `cancelled` when it never went.',
      ),
      scheduled_at: timestamp('UTC time of the occurrence.'),
      delivered: integer('Recipients delivered in this occurrence.'),
      failed: integer('Recipients failed in this occurrence.'),
      pending: integer('Recipients not terminal in this occurrence; every recipient of an occurrence still `scheduled`.'),
      cancelled: integer('Every recipient of a `cancelled` occurrence, else 0 (additive): never sent, not pending.'),
      skipped: integer('Every recipient of a `skipped` occurrence, else 0 (additive): never sent, not pending.'),
    }),
    Balance: objectOf<BalanceData>('`GET /balance` data.', {
      balance: decimal('`sms_wallet_balance + postpaid_wallet_balance`.'),
      sms_wallet_balance: decimal('Prepaid credit; 0 without a prepaid wallet.'),
      postpaid_wallet_balance: decimal('Remaining credit line of the postpaid agreement; 0 without a postpaid wallet.'),
      currency: text('ISO 4217 code.', { pattern: '^[A-Z]{3}$' }),
      unit_price: decimal(
        "The merchant's default per-segment price (0.01 unless configured), charged for destinations without a pricing row.",
      ),
      available_sms: integer('`floor(balance / unit_price)`.'),
    }),
    Calculation: objectOf<CalculationData>(
      '`POST /calculate` data: a planning estimate; a send charges the exact price of each destination.',
      {
        mode: oneOfValues(['amount_to_sms', 'sms_to_amount'], 'As requested.'),
        amount: decimal('Given, or `sms_count × average_price` rounded to 2 decimals.'),
        sms_count: integer('Given, or `floor(amount / average_price)`.'),
        average_price: decimal("Plain mean of the merchant's pricing rows, rounded half-up to 4 decimals; used in both directions."),
        currency: text('ISO 4217 code of the wallet.', { pattern: '^[A-Z]{3}$' }),
        currency_symbol: text("From the merchant's locale (default `fr-CD`), unless the merchant overrides it."),
      },
    ),
    ScheduleActionResult: objectOf<ScheduleActionData>(
      'Cancel, pause and resume data: the schedule after the action.',
      {
        message_id: text('The message acted on.'),
        schedule: { ...nullable(ref('Schedule')), description: 'The schedule after the action.' },
        refunded_amount: decimal('Cancel and resume only: amount refunded by this call (0 when nothing was left to refund).'),
      },
      ['refunded_amount'],
    ),
    QueuedEventData: objectOf<QueuedData>('`sms.queued` data.', {
      total_recipients: integer('As in the send result.'),
      total_messages: integer('As in the send result.'),
      total_cost: decimal('As in the send result.'),
      currency: text('ISO 4217 code.'),
      scheduled_at: nullableTimestamp('UTC time of the first occurrence of a scheduled or recurring send; `null` for an immediate send.'),
    }),
    ProcessingEventData: objectOf<ProcessingData>(
      '`sms.processing` data: the connector picked the job up.',
      {
        recipient_phone: text('E.164 number of the recipient.'),
        carrier: text('Internal connector slug; informational, not stable.'),
        ...recipientRef,
      },
      ['occurrence_index', 'scheduled_at'],
    ),
    SentEventData: objectOf<SentData>(
      '`sms.sent` data: the message centre accepted it.',
      {
        recipient_phone: text('E.164 number of the recipient.'),
        carrier: text('Internal connector slug.'),
        ...recipientRef,
        sent_at: timestamp('UTC.'),
      },
      ['occurrence_index', 'scheduled_at'],
    ),
    DeliveredEventData: objectOf<DeliveredData>(
      '`sms.delivered` data: terminal for the recipient.',
      {
        recipient_phone: text('E.164 number of the recipient.'),
        carrier: text('Internal connector slug.'),
        ...recipientRef,
        delivered_at: timestamp('UTC.'),
        segments: integer('Segments of the message.', { minimum: 1 }),
      },
      ['occurrence_index', 'scheduled_at'],
    ),
    FailedEventData: objectOf<FailedData>(
      '`sms.failed` data: terminal for the recipient.',
      {
        recipient_phone: text('E.164 number of the recipient.'),
        carrier: text('Internal connector slug.'),
        ...recipientRef,
        failed_at: timestamp('UTC.'),
        error_code: {
          ...ERROR_CODE,
          description: `Carrier-level code (${CARRIER_CODE_RANGE.min}–${CARRIER_CODE_RANGE.max}), see \`x-error-codes\`.`,
        },
        error_message: text('Text of the code.'),
        retryable: { type: 'boolean', description: 'Whether a later resend may succeed: true for 1502, 1503, 1505 and 1506.' },
      },
      ['occurrence_index', 'scheduled_at'],
    ),
    SmsQueuedEvent: eventEnvelope('sms.queued'),
    SmsProcessingEvent: eventEnvelope('sms.processing'),
    SmsSentEvent: eventEnvelope('sms.sent'),
    SmsDeliveredEvent: eventEnvelope('sms.delivered'),
    SmsFailedEvent: eventEnvelope('sms.failed'),
  };
}

export const EVENT_SCHEMA = {
  'sms.queued': {
    envelope: 'SmsQueuedEvent',
    data: 'QueuedEventData',
    operationId: 'smsQueued',
    when: 'Right after `POST /send` returns 201 (status `pending`).',
  },
  'sms.processing': {
    envelope: 'SmsProcessingEvent',
    data: 'ProcessingEventData',
    operationId: 'smsProcessing',
    when: 'A recipient goes from pending to processing (one per recipient and occurrence).',
  },
  'sms.sent': {
    envelope: 'SmsSentEvent',
    data: 'SentEventData',
    operationId: 'smsSent',
    when: 'A recipient goes from processing to sent.',
  },
  'sms.delivered': {
    envelope: 'SmsDeliveredEvent',
    data: 'DeliveredEventData',
    operationId: 'smsDelivered',
    when: 'A recipient is delivered; terminal: no further event for that dispatch.',
  },
  'sms.failed': {
    envelope: 'SmsFailedEvent',
    data: 'FailedEventData',
    operationId: 'smsFailed',
    when: 'A recipient fails (carrier outcome, gateway failure, or no final receipt within 24 h: 1503); terminal.',
  },
} as const satisfies Record<EventType, { envelope: SchemaName; data: SchemaName; operationId: string; when: string }>;

function eventEnvelope(type: EventType): JsonObject {
  return {
    type: 'object',
    description: `The \`${type}\` event. ${EVENT_SCHEMA[type].when}`,
    required: ['event_id', 'event_type', 'timestamp', 'message_id', 'data'],
    properties: {
      event_id: {
        type: 'string',
        format: 'uuid',
        description: 'Unique per event; a retry carries the same id, so treat a replay as a no-op.',
      },
      event_type: { const: type },
      timestamp: timestamp('When the event was emitted (UTC).'),
      message_id: text('From `POST /send`.'),
      data: ref(EVENT_SCHEMA[type].data),
    },
  };
}
