import { RECIPIENT_STATUSES } from '../../carriers/carrier-outcomes.js';
import { CARRIER_CODE_RANGE, ERROR_CATALOGUE, type ErrorName, type ServiceErrorName } from '../../libraries/errors/error-catalogue.js';
import type { FieldIssue } from '../../libraries/errors/app-error.js';
import type { SendReceipt } from '../../messaging/message-behaviour.js';
import type { MessageStatusView, OccurrenceView, RecipientView, ScheduleView } from '../../messaging/message-view.js';
import type { ScheduleActionData } from '../../messaging/manage-schedule-use-case.js';
import { SEND_LIMITS, sendBodySchema } from '../../messaging/send-request.js';
import { calculateBodySchema } from '../../pricing/calculate-request.js';
import type { CalculationData } from '../../pricing/calculate-use-case.js';
import type { BalanceData } from '../../wallets/wallet-use-cases.js';
import {
  EVENT_TYPES,
  type DeliveredData,
  type EventType,
  type FailedData,
  type ProcessingData,
  type QueuedData,
  type SentData,
} from '../../webhooks/event-envelope.js';
import type { CarrierHealth, HealthReport } from './http-app.js';
import { IDEMPOTENCY_KEY, REQUEST_ID } from './http-app.js';
import { joiToJsonSchema, type JsonSchema } from './joi-json-schema.js';
import { API_ROOT, ROUTES, type RouteName } from './routes.js';

/**
 * The OpenAPI 3.1 document of the merchant API, generated from the code it describes: request bodies from the joi
 * schemas, paths from ROUTES, error codes from ERROR_CATALOGUE, header patterns from the HTTP app. The response
 * schemas below are typed against the TypeScript types of the responses (every key, no other), and
 * test/integration/http/openapi-conformance.test.ts validates real responses against them.
 *
 * Response objects are documented open (no `additionalProperties: false`): fields may be added within v1
 * (DECISIONS.md: additions are additive), so clients must ignore unknown fields. The conformance test closes
 * them, so the code never sends a field the document does not name.
 */

type JsonObject = { readonly [key: string]: unknown };

export interface OpenApiServer {
  readonly url: string;
  readonly description?: string;
  readonly variables?: Readonly<Record<string, { readonly default: string; readonly enum?: readonly string[]; readonly description?: string }>>;
}

export interface OpenApiOptions {
  /** `info.version`: the gateway's version (config `version`). */
  readonly version: string;
  /** Defaults to the API root on the host that serves the document. */
  readonly servers?: readonly OpenApiServer[];
}

export interface OpenApiDocument {
  readonly openapi: '3.1.0';
  readonly info: JsonObject;
  readonly servers: readonly OpenApiServer[];
  readonly tags: readonly JsonObject[];
  readonly paths: Readonly<Record<string, Readonly<Record<string, JsonObject>>>>;
  readonly webhooks: Readonly<Record<string, Readonly<Record<string, JsonObject>>>>;
  readonly components: {
    readonly schemas: Readonly<Record<string, JsonSchema>>;
    readonly responses: Readonly<Record<string, JsonObject>>;
    readonly parameters: Readonly<Record<string, JsonObject>>;
    readonly headers: Readonly<Record<string, JsonObject>>;
    readonly securitySchemes: Readonly<Record<string, JsonObject>>;
  };
  readonly 'x-error-codes': readonly ErrorCodeEntry[];
}

export interface ErrorCodeEntry {
  readonly code: string;
  readonly name: ErrorName;
  /** null: carrier-level code, carried by `sms.failed` events and `GET /status` recipients, never an HTTP status. */
  readonly http_status: number | null;
  readonly delivered_as: 'service-error envelope' | 'sms.failed event and GET /status recipient';
  readonly message: string;
}

// ---------------------------------------------------------------------------------------------------------------
// JSON Schema helpers

const ref = (name: SchemaName): JsonObject => ({ $ref: `#/components/schemas/${name}` });
const nullable = (schema: JsonObject): JsonObject => ({ anyOf: [schema, { type: 'null' }] });
const text = (description: string, extra: JsonObject = {}): JsonObject => ({ type: 'string', description, ...extra });
const nullableText = (description: string, extra: JsonObject = {}): JsonObject => ({ type: ['string', 'null'], description, ...extra });
const integer = (description: string, extra: JsonObject = {}): JsonObject => ({ type: 'integer', minimum: 0, description, ...extra });
const decimal = (description: string): JsonObject => ({ type: 'number', minimum: 0, description });
const timestamp = (description: string): JsonObject => ({ type: 'string', format: 'date-time', description });
const nullableTimestamp = (description: string): JsonObject => ({ type: ['string', 'null'], format: 'date-time', description });
const oneOfValues = (values: readonly string[], description: string): JsonObject => ({ type: 'string', enum: [...values], description });

type OptionalKeys<T> = { [K in keyof T]-?: object extends Pick<T, K> ? K : never }[keyof T];

/**
 * An object schema whose properties are exactly the keys of `T` (the compiler refuses a missing or an extra one);
 * every key is required but those listed in `optional`, which must be optional in `T`.
 */
function objectOf<T>(description: string, properties: { readonly [K in keyof T]-?: JsonSchema }, optional: readonly OptionalKeys<T>[] = []): JsonObject {
  const keys = Object.keys(properties);
  return { type: 'object', description, required: keys.filter((key) => !(optional as readonly string[]).includes(key)), properties };
}

/** Adds documentation to the schema at `path` (`a.b`, `[]` for array items) of a converted joi schema. */
function annotate(schema: JsonSchema, notes: Readonly<Record<string, JsonObject>>): JsonSchema {
  const copy = structuredClone(schema) as Record<string, unknown>;
  for (const [path, extra] of Object.entries(notes)) {
    let node: Record<string, unknown> = copy;
    for (const part of path === '' ? [] : path.split('.')) {
      const next = part === '[]' ? node.items : (node.properties as Record<string, unknown> | undefined)?.[part];
      if (typeof next !== 'object' || next === null) throw new Error(`OpenAPI: the request schema has no "${path}"`);
      node = next as Record<string, unknown>;
    }
    Object.assign(node, extra);
  }
  return copy;
}

// ---------------------------------------------------------------------------------------------------------------
// Request bodies: the joi schemas, converted, plus what joi's custom code and the use cases check

const sendRequestSchema = (): JsonSchema =>
  annotate(joiToJsonSchema(sendBodySchema), {
    '': {
      description:
        'Unknown fields are refused (1110, type `object.unknown`). A JSON `null` for an optional field is the same as leaving it out. ' +
        'All issues are reported at once in `details[]`.',
    },
    to: {
      description:
        `Recipients, 1–${SEND_LIMITS.maxRecipients}. Each entry loses its spaces and dashes, must then be at least 8 characters and parse as a ` +
        "possible number (E.164, or national format in the merchant's country), else 1110 with `field: \"to[i]\"`. Duplicates are kept: " +
        'each entry is its own recipient, identified by its position (`recipient_index`).',
    },
    message: {
      // the custom() rule of the joi schema: code points, not UTF-16 units
      maxLength: SEND_LIMITS.maxMessageCharacters,
      description:
        `1–${SEND_LIMITS.maxMessageCharacters} characters (Unicode code points); an unpaired UTF-16 surrogate is refused. ` +
        'Segments follow GSM 03.38 (extension characters `^{}\\[~]|€` and form feed count 2 septets) or UCS-2 (any other character; ' +
        'a character outside the BMP counts 2 units): 1 segment up to 160 septets / 70 units, else 153 / 67 per part, a part never ' +
        'splitting an escape or surrogate pair. Segments are counted honestly, with no 10-segment cap (1 600 characters can need 11 GSM ' +
        'or 24 UCS-2 segments).',
    },
    sender_id: { description: `1–${SEND_LIMITS.maxSenderIdLength} characters: letters, digits, space and \`-_.&\`.` },
    sending_type: {
      description:
        '`scheduled` needs `scheduled_dates` and `recurring` needs `recurring_schedule`; any other schedule field for the sending type is 1110.',
    },
    scheduled_dates: {
      description:
        "Local dates and times in the merchant's time zone (default Africa/Kinshasa), each strictly after the moment the request is " +
        'validated. A time in a spring-forward gap is 1110; an ambiguous one (fall-back hour) takes its first occurrence; two entries ' +
        'naming the same instant are 1110.',
    },
    recurring_schedule: {
      description:
        "Repeats in the merchant's time zone: weekly on `start_date`'s weekday, monthly on its day of month (months without it are " +
        'skipped), yearly on its month and day (29 February only in leap years). A past `start_date` is allowed; only future ' +
        'occurrences count and at least one is required. An occurrence in a spring-forward gap moves forward by the gap; an ambiguous ' +
        'one takes its first occurrence. The whole schedule is charged at submit; recipients × segments × occurrences may not exceed 5 000 ' +
        '(1110 naming `recurring_schedule`).',
    },
    'recurring_schedule.end_date': {
      description: 'Inclusive. Before `start_date` is 1110. `null` or absent: occurrences are pre-computed over 365 days and the schedule completes there.',
    },
    'recurring_schedule.times': { description: 'Distinct local times `HH:mm`.' },
    callback_url: {
      description:
        'An absolute `https://` URL as written (`https:host` is refused), at most 2 048 characters, without credentials. It receives the ' +
        "same events as the key's `webhook_url` (each event once per distinct URL), without Basic credentials. Production refuses one " +
        'whose host is or resolves to a non-public address (loopback, private, link-local, CGNAT, unique- or site-local, multicast, ' +
        'reserved, and IPv6 forms embedding such an IPv4: mapped, compatible, NAT64, 6to4; Teredo always); embedded mode also accepts `http://localhost`.',
    },
  });

const calculateRequestSchema = (): JsonSchema =>
  annotate(joiToJsonSchema(calculateBodySchema), {
    '': { description: "The field of the other mode, if sent, is checked but unused. Unknown fields are refused (1110)." },
    amount: { description: 'Required in `amount_to_sms` mode: a wallet amount.' },
    sms_count: { description: 'Required in `sms_to_amount` mode.' },
  });

// ---------------------------------------------------------------------------------------------------------------
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

const serviceCodes = (names: readonly ServiceErrorName[]) => names.map((name) => ERROR_CATALOGUE[name].code);
const AGGREGATE_STATUSES = ['pending', 'processing', 'sent', 'delivered', 'failed'] as const;
const ERROR_CODE: JsonObject = { type: 'string', pattern: '^[0-9]{4}$' };

const recipientRef = {
  recipient_index: integer('Position of the recipient in the `to` array of the send (additive).'),
  occurrence_index: integer('Scheduled and recurring sends only: which occurrence, in chronological order from 0 (additive).'),
  scheduled_at: timestamp('Scheduled and recurring sends only: the UTC time of that occurrence (additive).'),
} as const;

/** The names of components.schemas; `schemas()` must define exactly these. */
export const SCHEMA_NAMES = [
  'SendRequest',
  'CalculateRequest',
  'FieldIssue',
  'ServiceError',
  'Detail',
  'Health',
  'SendResult',
  'MessageStatus',
  'Recipient',
  'Schedule',
  'Occurrence',
  'Balance',
  'Calculation',
  'ScheduleActionResult',
  'QueuedEventData',
  'ProcessingEventData',
  'SentEventData',
  'DeliveredEventData',
  'FailedEventData',
  'SmsQueuedEvent',
  'SmsProcessingEvent',
  'SmsSentEvent',
  'SmsDeliveredEvent',
  'SmsFailedEvent',
] as const;
type SchemaName = (typeof SCHEMA_NAMES)[number];

function schemas(): Record<SchemaName, JsonSchema> {
  return {
    SendRequest: sendRequestSchema(),
    CalculateRequest: calculateRequestSchema(),
    FieldIssue: objectOf<FieldIssue>('One entry of `details[]`: which field failed and why.', {
      field: text('Path of the field, such as `to[0]` or `scheduled_dates[2].time`; `body` for the body as a whole, `Idempotency-Key` for that header.'),
      message: text('Human-readable reason.'),
      type: text('Machine-readable reason: a joi error type (`string.max`, `object.unknown`, `any.required`, …) or one of the gateway (`phone.invalid`, `schedule.limit`, `body.json`, …).'),
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
        { if: { required: ['error_code'], properties: { error_code: { const: ERROR_CATALOGUE.INVALID_FIELD_FORMAT.code } } }, then: { required: ['details'] } },
        {
          if: { required: ['error_code'], properties: { error_code: { enum: serviceCodes(['RATE_LIMIT_EXCEEDED', 'SUSPICIOUS_ACTIVITY']) } } },
          then: { required: ['retry_after'] },
        },
      ],
    },
    Detail: objectOf<{ detail: string }>('Authentication failures and unknown messages: exactly `{detail}`. Branch on the HTTP status, not on the text.', {
      detail: text('Human-readable text; may be localised and change.'),
    }),
    Health: objectOf<HealthData>('`GET /health` data.', {
      status: oneOfValues(
        ['ok', 'degraded'],
        '`ok` with HTTP 200; `degraded` with HTTP 503 when the database or the transport is down, or with HTTP 200 when only a carrier is `down`.',
      ),
      version: text('Version of the gateway.'),
      environment: oneOfValues(['sandbox', 'production'], 'The environment this process serves.'),
      checks: objectOf<HealthReport['checks']>('Each dependency.', {
        database: oneOfValues(['ok', 'down'], 'The database.'),
        transport: oneOfValues(['ok', 'down'], 'The message transport to the carrier connectors.'),
        carriers: {
          type: 'object',
          description:
            'By carrier slug: every carrier this environment routes to (production: the carriers the pricing rows name and the default carrier; ' +
            'sandbox: `simulator`), and any other carrier whose connector announces itself.',
          additionalProperties: objectOf<CarrierHealth>('One carrier.', {
            status: oneOfValues(['ok', 'down'], '`ok` when at least one of its connectors is live; `down` when none is (its SMS wait in the queue).'),
            connectors: integer('Live connectors of the carrier.'),
          }),
        },
      }),
    }),
    SendResult: objectOf<SendReceipt>('`POST /send` data.', {
      message_id: text('Identifies the whole batch of recipients and dates.'),
      total_recipients: integer('Equals the length of `to` (duplicates included).'),
      total_messages: integer('Recipients × segments × occurrences (1 for an immediate send).'),
      total_cost: decimal(
        'Σ over recipients of segments × price(destination) × occurrences, in `currency` (up to 4 decimals): each destination is charged ' +
          "the price of its longest matching pricing row, `unit_price` when none matches. Deducted at submit (prepaid first, then postpaid); " +
          'equal to `total_messages × unit_price` when all destinations share one price.',
      ),
      currency: text('ISO 4217 code of the wallet.', { pattern: '^[A-Z]{3}$' }),
      status: { const: 'pending', description: 'Always `pending`, also for scheduled and recurring sends (they then show `scheduled` in `GET /status`).' },
    }),
    MessageStatus: objectOf<MessageStatusView>('`GET /status/{message_id}` data: the contract\'s Message, plus `sending_type`, `schedule` and `occurrences` (additive).', {
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
      occurrences: { type: 'array', items: ref('Occurrence'), description: 'Every occurrence of a schedule in order; empty for an immediate send (additive).' },
    }),
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
      error_code: { ...nullableText(`Carrier-level code (${CARRIER_CODE_RANGE.min}–${CARRIER_CODE_RANGE.max}) when failed.`), pattern: '^[0-9]{4}$' },
      error_message: nullableText('Text of `error_code`.'),
      updated_at: nullableTimestamp('Last change of this recipient.'),
      sent_at: nullableTimestamp('When the message centre accepted it.'),
      delivered_at: nullableTimestamp('When it was delivered.'),
      failed_at: nullableTimestamp('When it failed.'),
    }),
    Schedule: objectOf<ScheduleView>('The schedule of a scheduled or recurring send.', {
      type: oneOfValues(['scheduled', 'recurring'], 'The sending type.'),
      state: oneOfValues(['active', 'paused', 'cancelled', 'completed'], 'Changed by cancel, pause and resume; `completed` after the last occurrence.'),
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
      unit_price: decimal("The merchant's default per-segment price (0.01 unless configured), charged for destinations without a pricing row."),
      available_sms: integer('`floor(balance / unit_price)`.'),
    }),
    Calculation: objectOf<CalculationData>('`POST /calculate` data: a planning estimate; a send charges the exact price of each destination.', {
      mode: oneOfValues(['amount_to_sms', 'sms_to_amount'], 'As requested.'),
      amount: decimal('Given, or `sms_count × average_price` rounded to 2 decimals.'),
      sms_count: integer('Given, or `floor(amount / average_price)`.'),
      average_price: decimal("Plain mean of the merchant's pricing rows, rounded half-up to 4 decimals; used in both directions."),
      currency: text('ISO 4217 code of the wallet.', { pattern: '^[A-Z]{3}$' }),
      currency_symbol: text("From the merchant's locale (default `fr-CD`), unless the merchant overrides it."),
    }),
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
      { recipient_phone: text('E.164 number of the recipient.'), carrier: text('Internal connector slug; informational, not stable.'), ...recipientRef },
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
        error_code: { ...ERROR_CODE, description: `Carrier-level code (${CARRIER_CODE_RANGE.min}–${CARRIER_CODE_RANGE.max}), see \`x-error-codes\`.` },
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

const EVENT_SCHEMA = {
  'sms.queued': { envelope: 'SmsQueuedEvent', data: 'QueuedEventData', operationId: 'smsQueued', when: 'Right after `POST /send` returns 201 (status `pending`).' },
  'sms.processing': {
    envelope: 'SmsProcessingEvent',
    data: 'ProcessingEventData',
    operationId: 'smsProcessing',
    when: 'A recipient goes from pending to processing (one per recipient and occurrence).',
  },
  'sms.sent': { envelope: 'SmsSentEvent', data: 'SentEventData', operationId: 'smsSent', when: 'A recipient goes from processing to sent.' },
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
      event_id: { type: 'string', format: 'uuid', description: 'Unique per event; a retry carries the same id, so treat a replay as a no-op.' },
      event_type: { const: type },
      timestamp: timestamp('When the event was emitted (UTC).'),
      message_id: text('From `POST /send`.'),
      data: ref(EVENT_SCHEMA[type].data),
    },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// Headers, parameters and responses

const HEADERS = {
  'X-Request-Id': {
    description: 'On every response: the incoming `X-Request-Id` when well formed, else a new UUID. Error envelopes repeat it as `request_id`.',
    required: true,
    schema: { type: 'string' },
  },
  'Retry-After': { description: 'Seconds to wait before retrying; equals `retry_after` of the body.', schema: { type: 'integer', minimum: 0 } },
  'Idempotent-Replayed': {
    description: 'Present (`true`) when this 201 is the stored answer to an earlier request with the same `Idempotency-Key` and body; nothing was charged again.',
    schema: { type: 'string', const: 'true' },
  },
  Allow: { description: 'Methods the path accepts.', required: true, schema: { type: 'string' } },
} as const;
type HeaderName = keyof typeof HEADERS;

const headerRef = (name: HeaderName): JsonObject => ({ $ref: `#/components/headers/${name}` });

function headers(names: readonly HeaderName[], required: readonly HeaderName[] = []): JsonObject {
  return Object.fromEntries(
    [...new Set<HeaderName>(['X-Request-Id', ...names, ...required])].map((name) => [name, required.includes(name) ? { ...HEADERS[name], required: true } : headerRef(name)]),
  );
}

const json = (schema: JsonObject): JsonObject => ({ 'application/json': { schema } });

function catalogueLines(names: readonly ServiceErrorName[]): string {
  return names.map((name) => `\`${ERROR_CATALOGUE[name].code}\` ${name}: ${ERROR_CATALOGUE[name].message}`).join(' ');
}

/** The service-error envelope narrowed to one HTTP status and the codes it can carry there. */
function errorResponse(status: number, names: readonly ServiceErrorName[], description: string, extraHeaders: readonly HeaderName[] = [], requiredHeaders: readonly HeaderName[] = []): JsonObject {
  return {
    description: `${description} ${catalogueLines(names)}`,
    headers: headers(extraHeaders, requiredHeaders),
    content: json(envelopeFor(status, names)),
    'x-error-codes': serviceCodes(names),
  };
}

function envelopeFor(status: number, names: readonly ServiceErrorName[]): JsonObject {
  const codes = serviceCodes(names);
  return {
    allOf: [ref('ServiceError'), { properties: { status_code: { const: status }, error_code: codes.length === 1 ? { const: codes[0] } : { enum: codes } } }],
  };
}

const detailResponse = (description: string): JsonObject => ({ description, headers: headers([]), content: json(ref('Detail')) });

const RESPONSES = {
  Unauthorized: detailResponse(
    '`{detail}`: the `app-key` header is absent or empty, the key has the wrong prefix for this environment (an `sk_live_` key on the ' +
      'sandbox or `sk_test_` on production), is malformed, unknown, deleted, or rotated away. The body does not say which.',
  ),
  Forbidden: {
    description:
      'Either `{detail}`: the key status is `pending_validation`, `suspended`, `revoqued`, `locked`, `expired` (also a key past its ' +
      '`expires_at`) or `rejected`; or the service-error envelope with 1302 SUSPICIOUS_ACTIVITY: the key was rejected 20 times within one ' +
      'minute by a rate bucket and is suspended for 15 minutes (persisted); every call then gets 1302 with `retry_after` and `Retry-After`.',
    headers: headers(['Retry-After']),
    content: json({ oneOf: [ref('Detail'), envelopeFor(403, ['SUSPICIOUS_ACTIVITY'])] }),
    'x-error-codes': serviceCodes(['SUSPICIOUS_ACTIVITY']),
  },
  RateLimited: errorResponse(
    429,
    ['RATE_LIMIT_EXCEEDED'],
    'The rate bucket of this key is full (sliding 60-second window; a rejected request does not use a slot), or this client address had ' +
      'its 401s (60 a minute by default) and this node has not found the key (an existing key) within the last minute.',
    [],
    ['Retry-After'],
  ),
  InternalError: {
    description: '`{detail}` when the key could not be verified (retry), else the service-error envelope with 1401 INTERNAL_ERROR. 1401 means the outcome is unknown (a command was taken and never answered): after it a `POST /send` may still go out, so retry with the same `Idempotency-Key`.',
    headers: headers([]),
    content: json({ oneOf: [ref('Detail'), envelopeFor(500, ['INTERNAL_ERROR'])] }),
    'x-error-codes': serviceCodes(['INTERNAL_ERROR']),
  },
  ServiceUnavailable: errorResponse(503, ['SERVICE_UNAVAILABLE'], 'Nothing was applied: the request reached its deadline before a step could start, or no node served its data in time (no charge, no message, no refund). Safe to retry after `Retry-After`, with or without an Idempotency-Key.', ['Retry-After']),
  MessageNotFound: detailResponse('`{detail}`: no such message for this merchant (an unknown id and another merchant\'s id answer the same).'),
  PayloadTooLarge: errorResponse(413, ['INVALID_FIELD_FORMAT'], 'The body is over the limit (256 KiB by default): one detail with `field: "body"`. Answered as soon as the declared length or the bytes received pass the limit, with `Connection: close`: the rest of the body is not read.'),
  UnsupportedMediaType: errorResponse(
    415,
    ['INVALID_FIELD_FORMAT'],
    'A body sent without `Content-Type: application/json` (or with a charset other than UTF-8, or an unknown `Content-Encoding`): one detail with `field: "body"`.',
  ),
  RouteNotFound: errorResponse(404, ['ROUTE_NOT_FOUND'], 'Any path that is not an endpoint (under the API root or elsewhere).'),
  MethodNotAllowed: errorResponse(405, ['METHOD_NOT_ALLOWED'], 'A known path with another method; `Allow` lists the methods of the path.', [], ['Allow']),
} as const satisfies Record<string, JsonObject>;
type ResponseName = keyof typeof RESPONSES;

const responseRef = (name: ResponseName): JsonObject => ({ $ref: `#/components/responses/${name}` });

const PARAMETERS = {
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description: 'Optional correlation id, echoed in the `X-Request-Id` response header (and `request_id` of error envelopes) when it matches the pattern; otherwise a new one is generated.',
    schema: { type: 'string', pattern: REQUEST_ID.source },
  },
  IdempotencyKey: {
    name: 'Idempotency-Key',
    in: 'header',
    required: false,
    description:
      'Optional (additive). The same key with the same body (compared canonically) within 24 h answers the original 201, with ' +
      '`Idempotent-Replayed: true`, without charging again; with another body it is 409/1111. The replay is checked before validation, ' +
      'so a replayed scheduled send answers its original 201 even after its dates have passed. A malformed key is 400/1110 with ' +
      '`field: "Idempotency-Key"`.',
    schema: { type: 'string', pattern: IDEMPOTENCY_KEY.source },
  },
  MessageId: { name: 'message_id', in: 'path', required: true, description: 'From `POST /send`.', schema: { type: 'string' } },
  Id: { name: 'id', in: 'path', required: true, description: 'The `message_id` of a scheduled or recurring send.', schema: { type: 'string' } },
} as const;
type ParameterName = keyof typeof PARAMETERS;
const parameterRef = (name: ParameterName): JsonObject => ({ $ref: `#/components/parameters/${name}` });

// ---------------------------------------------------------------------------------------------------------------
// Operations, one per route of ROUTES

interface OperationSpec {
  readonly operationId: string;
  readonly tag: TagName;
  readonly summary: string;
  readonly description: string;
  /** The contract's name of the path parameter (the router calls it `messageId`). */
  readonly pathParameter?: 'MessageId' | 'Id';
  readonly headerParameters?: readonly ParameterName[];
  readonly body?: { readonly schema: 'SendRequest' | 'CalculateRequest'; readonly examples: JsonObject };
  readonly success: { readonly status: 200 | 201; readonly schema: SchemaName; readonly description: string; readonly headers?: readonly HeaderName[] };
  /** Route-specific responses by status; authenticated routes also get 401, 403, 429, 500 and 503. */
  readonly responses: Readonly<Record<string, JsonObject>>;
}

const TAGS = {
  Messages: 'Send messages and follow their delivery.',
  Schedules: 'Cancel, pause and resume scheduled and recurring sends.',
  Wallet: 'Remaining credit.',
  Pricing: 'Conversions between an amount and an SMS count.',
  Service: 'Health of the service; no key needed.',
  Webhooks: 'Events the gateway POSTs to your endpoint.',
} as const;
type TagName = keyof typeof TAGS;

const SCHEDULE_RULES =
  'Any of cancel, pause and resume on an immediate send, and pause or resume of a cancelled or completed schedule, is 409/1120. ' +
  "An unknown or another merchant's id is 404 `{detail}`, as for `GET /status`. No body is read.";

const OPERATIONS: Record<RouteName, OperationSpec> = {
  health: {
    operationId: 'getHealth',
    tag: 'Service',
    summary: 'Health of the service',
    description:
      'Unauthenticated and never rate-limited. 200 when the database and the transport answer, 503 (same body, `status: "degraded"`) when one is down. ' +
      'A routed carrier with no live connector makes `status` `degraded` but keeps 200: the node serves, and that carrier\'s SMS wait for a connector.',
    success: { status: 200, schema: 'Health', description: 'The node serves (`status` is `degraded` when a carrier has no live connector).' },
    responses: {
      '503': { description: 'A dependency is down.', headers: headers([]), content: json(successEnvelope(503, 'Health')) },
    },
  },
  send: {
    operationId: 'sendMessage',
    tag: 'Messages',
    summary: 'Submit a message',
    description:
      'Validates the request, prices it (each destination at the price of its longest matching pricing row of country calling code + ' +
      'network prefix, `unit_price` when none matches), charges the whole cost at once (prepaid first, then postpaid, all-or-nothing, ' +
      'never below 0) and answers 201 with status `pending`; event `sms.queued` follows. Scheduled and recurring sends are charged for ' +
      'every occurrence at submit; the cost stays reserved. All validation issues are reported together in `details[]`.',
    headerParameters: ['IdempotencyKey'],
    body: {
      schema: 'SendRequest',
      examples: {
        immediate: { summary: 'Immediate', value: { to: ['+243812345678', '0991234567'], message: 'Your code is 4321', sender_id: 'MyShop' } },
        scheduled: {
          summary: 'Scheduled on two dates',
          value: {
            to: ['+243812345678'],
            message: 'Reminder: your appointment is tomorrow',
            sending_type: 'scheduled',
            scheduled_dates: [
              { date: '2031-04-01', time: '09:30' },
              { date: '2031-04-08', time: '09:30' },
            ],
          },
        },
        recurring: {
          summary: 'Weekly, for three months',
          value: {
            to: ['+243812345678'],
            message: 'Weekly digest',
            sending_type: 'recurring',
            recurring_schedule: { start_date: '2031-04-01', end_date: '2031-06-30', frequency: 'weekly', interval: 1, times: ['08:00'] },
            callback_url: 'https://example.com/sms-events',
          },
        },
      },
    },
    success: { status: 201, schema: 'SendResult', description: 'Accepted and charged.', headers: ['Idempotent-Replayed'] },
    responses: {
      '400': errorResponse(400, ['INVALID_FIELD_FORMAT'], 'Invalid request (every issue in `details[]`), malformed JSON or bytes that are not valid UTF-8 (`field: "body"`), or a malformed `Idempotency-Key`.'),
      '402': errorResponse(402, ['INSUFFICIENT_BALANCE'], 'The cost exceeds prepaid + postpaid balance (also when the merchant has no wallet). Nothing is charged.'),
      '409': errorResponse(409, ['IDEMPOTENCY_KEY_REUSED'], 'The `Idempotency-Key` was used within 24 h with another body.'),
      '413': responseRef('PayloadTooLarge'),
      '415': responseRef('UnsupportedMediaType'),
    },
  },
  status: {
    operationId: 'getMessageStatus',
    tag: 'Messages',
    summary: 'Status of a message',
    description:
      'The aggregate, the counters and every recipient. A recipient moves forward only (`pending` → `processing` → `sent` → ' +
      '`delivered` | `failed`); receipts that arrive late, twice or out of order change nothing backwards. For a schedule, recipients ' +
      'and the aggregate reflect the most recent dispatched occurrence.',
    pathParameter: 'MessageId',
    success: { status: 200, schema: 'MessageStatus', description: 'The message.' },
    responses: { '404': responseRef('MessageNotFound') },
  },
  balance: {
    operationId: 'getBalance',
    tag: 'Wallet',
    summary: 'Remaining credit',
    description: 'Prepaid credit plus the remaining postpaid credit line. A missing wallet reports 0; no wallet at all is 400/1210.',
    success: { status: 200, schema: 'Balance', description: 'The balance.' },
    responses: { '400': errorResponse(400, ['NO_WALLET'], 'The merchant has neither a prepaid nor a postpaid wallet.') },
  },
  calculate: {
    operationId: 'calculate',
    tag: 'Pricing',
    summary: 'Convert between an amount and an SMS count',
    description:
      "Uses the plain mean of the merchant's pricing rows (no weighting), rounded half-up to 4 decimals, in both directions: " +
      '`amount_to_sms`: `sms_count = floor(amount / average_price)`; `sms_to_amount`: `amount = sms_count × average_price` rounded to 2 decimals. ' +
      'Input 0 yields 0.',
    body: {
      schema: 'CalculateRequest',
      examples: {
        amountToSms: { summary: 'How many SMS for 10.00?', value: { mode: 'amount_to_sms', amount: 10 } },
        smsToAmount: { summary: 'What do 500 SMS cost?', value: { mode: 'sms_to_amount', sms_count: 500 } },
      },
    },
    success: { status: 200, schema: 'Calculation', description: 'The conversion.' },
    responses: {
      '400': errorResponse(400, ['INVALID_FIELD_FORMAT', 'NO_PRICING'], 'Invalid `mode`, a missing `amount` or `sms_count` for the mode, a value out of range (1110), or no pricing rows (1211).'),
      '413': responseRef('PayloadTooLarge'),
      '415': responseRef('UnsupportedMediaType'),
    },
  },
  cancel: {
    operationId: 'cancelSchedule',
    tag: 'Schedules',
    summary: 'Cancel a scheduled or recurring send',
    description:
      'Remaining occurrences never dispatch and their reserved cost is refunded at once (to postpaid first, then prepaid). Cancelling ' +
      `a cancelled or completed schedule is 200 with \`refunded_amount: 0\`. ${SCHEDULE_RULES}`,
    pathParameter: 'Id',
    success: { status: 200, schema: 'ScheduleActionResult', description: 'Cancelled; `refunded_amount` is what this call refunded.' },
    responses: { '404': responseRef('MessageNotFound'), '409': errorResponse(409, ['INVALID_STATE'], 'An immediate send cannot be cancelled.') },
  },
  pause: {
    operationId: 'pauseSchedule',
    tag: 'Schedules',
    summary: 'Pause a scheduled or recurring send',
    description:
      'Occurrences stop dispatching; their cost stays reserved. Pausing a paused schedule is an idempotent 200. A schedule still paused ' +
      `when its last occurrence time passes completes, and every skipped occurrence is refunded. ${SCHEDULE_RULES}`,
    pathParameter: 'Id',
    success: { status: 200, schema: 'ScheduleActionResult', description: 'Paused (no `refunded_amount`).' },
    responses: { '404': responseRef('MessageNotFound'), '409': errorResponse(409, ['INVALID_STATE'], 'Immediate send, or a cancelled or completed schedule.') },
  },
  resume: {
    operationId: 'resumeSchedule',
    tag: 'Schedules',
    summary: 'Resume a paused send',
    description:
      'Occurrences whose time passed while paused are skipped and refunded (`refunded_amount`); later ones proceed. Resuming an active ' +
      `schedule is an idempotent 200. ${SCHEDULE_RULES}`,
    pathParameter: 'Id',
    success: { status: 200, schema: 'ScheduleActionResult', description: 'Active again; `refunded_amount` is what this call refunded.' },
    responses: { '404': responseRef('MessageNotFound'), '409': errorResponse(409, ['INVALID_STATE'], 'Immediate send, or a cancelled or completed schedule.') },
  },
};

function successEnvelope(status: number, schema: SchemaName): JsonObject {
  return {
    type: 'object',
    required: ['status_code', 'data'],
    properties: { status_code: { const: status }, data: ref(schema) },
  };
}

/** `/status/:messageId` → `/status/{message_id}`: Express parameters become the contract's names. */
export function openApiPath(route: (typeof ROUTES)[number]): string {
  const parameter = OPERATIONS[route.name].pathParameter;
  const names = route.path.match(/:[A-Za-z_]+/g) ?? [];
  if (names.length !== (parameter ? 1 : 0)) throw new Error(`OpenAPI: route ${route.name} has ${names.length} path parameters, the document names ${parameter ? 1 : 0}`);
  return parameter ? route.path.replace(/:[A-Za-z_]+/, `{${PARAMETERS[parameter].name}}`) : route.path;
}

function operation(route: (typeof ROUTES)[number]): JsonObject {
  const spec = OPERATIONS[route.name];
  const authenticated = route.bucket !== null;
  const responses: Record<string, JsonObject> = {
    [String(spec.success.status)]: {
      description: spec.success.description,
      headers: headers(spec.success.headers ?? []),
      content: json(successEnvelope(spec.success.status, spec.success.schema)),
    },
    ...spec.responses,
    ...(authenticated
      ? {
          '401': responseRef('Unauthorized'),
          '403': responseRef('Forbidden'),
          '429': responseRef('RateLimited'),
          '500': responseRef('InternalError'),
          '503': responseRef('ServiceUnavailable'),
        }
      : {}),
  };
  const sorted = Object.fromEntries(Object.entries(responses).sort(([a], [b]) => a.localeCompare(b)));
  return {
    operationId: spec.operationId,
    tags: [spec.tag],
    summary: spec.summary,
    description: spec.description,
    security: authenticated ? [{ 'app-key': [] }] : [],
    parameters: [
      ...(spec.pathParameter ? [parameterRef(spec.pathParameter)] : []),
      ...(spec.headerParameters ?? []).map(parameterRef),
      parameterRef('RequestId'),
    ],
    ...(spec.body
      ? {
          requestBody: {
            required: true,
            content: { 'application/json': { schema: ref(spec.body.schema), examples: spec.body.examples } },
          },
        }
      : {}),
    responses: sorted,
    ...(authenticated ? { 'x-rate-limit-bucket': route.bucket } : {}),
  };
}

function paths(): OpenApiDocument['paths'] {
  const result: Record<string, Record<string, JsonObject>> = {};
  for (const route of ROUTES) {
    const path = openApiPath(route);
    result[path] = { ...result[path], [route.method]: operation(route) };
  }
  return result;
}

// ---------------------------------------------------------------------------------------------------------------
// Webhooks

function webhooks(): OpenApiDocument['webhooks'] {
  return Object.fromEntries(
    EVENT_TYPES.map((type) => [
      type,
      {
        post: {
          operationId: EVENT_SCHEMA[type].operationId,
          tags: ['Webhooks'],
          summary: `${type} event`,
          description:
            `${EVENT_SCHEMA[type].when} POSTed to the key's \`webhook_url\` and to the send's \`callback_url\` (each event once per distinct URL), ` +
            'one event per request, `Content-Type: application/json`. See the webhook rules in the description of the API.',
          security: [{}, { 'webhook-basic': [] }],
          parameters: [
            {
              name: 'X-Signature',
              in: 'header',
              required: false,
              description:
                "Only on deliveries to the key's `webhook_url`, for keys with HMAC signing enabled (additive, opt-in); never on `callback_url` " +
                'deliveries: `sha256=<hex>`, the HMAC-SHA256 with the signing secret of `<X-Signature-Timestamp>.<raw body>`.',
              schema: { type: 'string', pattern: '^sha256=[0-9a-f]{64}$' },
            },
            {
              name: 'X-Signature-Timestamp',
              in: 'header',
              required: false,
              description: 'Only with `X-Signature`: Unix time in seconds of the signing; reject stale ones to prevent replays.',
              schema: { type: 'string', pattern: '^[0-9]+$' },
            },
          ],
          requestBody: { required: true, content: json(ref(EVENT_SCHEMA[type].envelope)) },
          responses: {
            '2XX': { description: 'Acknowledged (200, 201, 204, …); the body is ignored.' },
            '4XX': { description: 'Permanent failure: the event is not retried.' },
            '5XX': { description: 'Retried (as are timeouts over 5 s and connection failures) after 30 s, 2 min, 10 min and 1 h, then dropped.' },
          },
        },
      },
    ]),
  );
}

// ---------------------------------------------------------------------------------------------------------------
// Error catalogue and the API description

export function errorCodeEntries(): ErrorCodeEntry[] {
  return (Object.entries(ERROR_CATALOGUE) as [ErrorName, (typeof ERROR_CATALOGUE)[ErrorName]][]).map(([name, entry]) => ({
    code: entry.code,
    name,
    http_status: entry.httpStatus,
    delivered_as: entry.envelope === 'service' ? 'service-error envelope' : 'sms.failed event and GET /status recipient',
    message: entry.message,
  }));
}

function catalogueTable(): string {
  const rows = errorCodeEntries().map((entry) => {
    const status = entry.http_status === null ? 'event only' : entry.code === ERROR_CATALOGUE.INVALID_FIELD_FORMAT.code ? `${entry.http_status} (413, 415 for the body)` : String(entry.http_status);
    return `| ${entry.code} | ${entry.name} | ${status} | ${entry.message} |`;
  });
  return ['| error_code | Name | HTTP | Meaning |', '|---|---|---|---|', ...rows].join('\n');
}

function apiDescription(): string {
  return `HTTP/JSON gateway for sending SMS on behalf of a merchant: immediate, scheduled and recurring sends, charged to a prepaid then a postpaid wallet, with delivery status and webhooks.

All endpoints are under \`{base_url}${API_ROOT}\` (v1). Every endpoint but \`GET /health\` needs the merchant key in the \`app-key\` header (\`sk_test_…\` keys on the sandbox, \`sk_live_…\` on production). This document and its reference page are served outside the API root (\`/docs/openapi.json\`, \`/docs\`) without a key.

Beyond the v1 contract, this document describes additions that a client written against the contract alone never notices: \`Idempotency-Key\`, HMAC-signed webhooks, the OpenAPI document itself, and extra fields in \`data\` (marked *additive*). Responses may gain fields within v1: ignore the ones you do not know.

## Requests and errors
- Every authenticated endpoint runs authenticate → rate limit → read and validate the body → act: a request with no key and a bad body gets 401, and invalid requests count against the rate limit.
- Successful responses are \`{status_code, data}\`. Service errors use the envelope \`{success: false, status_code, error_code, message, request_id, details?, retry_after?}\`; \`error_code\` is always a four-digit string, \`details[]\` entries are \`{field, message, type}\`. Authentication failures and unknown messages are exactly \`{detail}\`.
- Every response carries \`X-Request-Id\`. Unknown paths are 404/1404 and known paths with another method 405/1405 with \`Allow\` (\`#/components/responses/RouteNotFound\`, \`MethodNotAllowed\`).
- Malformed JSON or bytes that are not valid UTF-8 (400), a body without \`Content-Type: application/json\` or with a charset other than UTF-8 (415) and a body over 256 KiB (413) are 1110 with one detail whose \`field\` is \`body\` (the request body, not the SMS text, which is \`message\`).
- Rate limits per key, each bucket independent, sliding 60-second window: send 60, status 120, balance 30, calculate 60, cancel/pause/resume together 60 requests per minute; health is unlimited. Over the limit: 429/1301 with \`Retry-After\`. The 20th rejection within a minute suspends the key for 15 minutes (that one is still a 429, with \`Retry-After: 900\`); every call then gets 403/1302 with \`retry_after\`.
- Failed authentication is limited per client address: past 60 401s a minute (configurable), the address's requests with keys the node has not found within the last minute get 429/1301 with \`Retry-After\`, without a key lookup.
- Money is exact decimal (up to 4 fractional digits); only \`/calculate\` rounds (\`amount\` to 2, \`average_price\` to 4 decimals). 1202 INSUFFICIENT_BALANCE is HTTP 402.

## Error catalogue
Also in machine-readable form as \`x-error-codes\`. Carrier-level codes ${CARRIER_CODE_RANGE.min}–${CARRIER_CODE_RANGE.max} reach clients only in \`sms.failed\` events and \`GET /status\` recipients; a connector may report codes of that range beyond the named ones.

${catalogueTable()}

## Webhooks
Configured on the API key (\`webhook_url\`, optional Basic credentials, optional HMAC signing) and per send (\`callback_url\`: neither Basic credentials nor signature; a \`callback_url\` equal to the key's \`webhook_url\` gets each event once, as the key's). Events are POSTed one per request; deliveries to the key's \`webhook_url\` carry HTTP Basic when credentials are set and, for keys with signing enabled, \`X-Signature: sha256=<hex>\` of \`<timestamp>.<body>\` with \`X-Signature-Timestamp\`. Any 2xx acknowledges; any 4xx ends delivery at once; 5xx, timeouts (over 5 s) and connection failures are retried after 30 s, 2 min, 10 min and 1 h, then the event is dropped (operators can replay it). Delivery order is not guaranteed: correlate by \`message_id\` and \`recipient_index\`; \`GET /status\` is authoritative. Each \`event_id\` is unique and a retry repeats it. No event follows a terminal one (\`sms.delivered\`, \`sms.failed\`) for the same dispatch (message, occurrence, recipient).`;
}

// ---------------------------------------------------------------------------------------------------------------

export function buildOpenApiDocument(options: OpenApiOptions): OpenApiDocument {
  return {
    openapi: '3.1.0',
    info: {
      title: 'SMS gateway API',
      summary: 'Send SMS, follow their delivery, read the balance, convert amounts; webhooks for status changes.',
      version: options.version,
      description: apiDescription(),
    },
    servers: options.servers ?? [{ url: API_ROOT, description: 'This gateway (sandbox or production, as the host serves).' }],
    tags: Object.entries(TAGS).map(([name, description]) => ({ name, description })),
    paths: paths(),
    webhooks: webhooks(),
    components: {
      schemas: schemas(),
      responses: RESPONSES,
      parameters: PARAMETERS,
      headers: HEADERS,
      securitySchemes: {
        'app-key': {
          type: 'apiKey',
          in: 'header',
          name: 'app-key',
          description: 'The merchant key `sk_<test|live>_<32 base62>`, per merchant and environment. Keep it server-side.',
        },
        'webhook-basic': {
          type: 'http',
          scheme: 'basic',
          description: 'Webhooks only: the gateway sends the Basic credentials configured on the key, when set (not on `callback_url` deliveries).',
        },
      },
    },
    'x-error-codes': errorCodeEntries(),
  };
}

/**
 * The form of docs/openapi.json: 2-space indent, final newline, keys in the order the generator builds them (the
 * conventional OpenAPI order: openapi, info, servers, tags, paths, webhooks, components), which depends on the code
 * alone, so the same code always writes the same bytes.
 */
export function serialiseOpenApiDocument(document: OpenApiDocument): string {
  return `${JSON.stringify(document, null, 2)}\n`;
}
