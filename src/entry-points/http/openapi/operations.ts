import { ROUTES, type RouteName } from '../routes.js';
import { errorResponse, headers, PARAMETERS, parameterRef, responseRef, type HeaderName, type ParameterName } from './components.js';
import type { JsonObject, OpenApiDocument } from './openapi-document.js';
import type { SchemaName } from './schema-names.js';
import { json, ref } from './schema-vocabulary.js';

// Operations, one per route of ROUTES: the paths of the document.

interface OperationSpec {
  readonly operationId: string;
  readonly tag: TagName;
  readonly summary: string;
  readonly description: string;
  /** The contract's name of the path parameter (the router calls it `messageId`). */
  readonly pathParameter?: 'MessageId' | 'Id';
  readonly headerParameters?: readonly ParameterName[];
  readonly body?: { readonly schema: 'SendRequest' | 'CalculateRequest'; readonly examples: JsonObject };
  readonly success: {
    readonly status: 200 | 201;
    readonly schema: SchemaName;
    readonly description: string;
    readonly headers?: readonly HeaderName[];
  };
  /** Route-specific responses by status; authenticated routes also get 401, 403, 429, 500 and 503. */
  readonly responses: Readonly<Record<string, JsonObject>>;
}

export const TAGS = {
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
      "A routed carrier with no live connector makes `status` `degraded` but keeps 200: the node serves, and that carrier's SMS wait for a connector.",
    success: {
      status: 200,
      schema: 'Health',
      description: 'The node serves (`status` is `degraded` when a carrier has no live connector).',
    },
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
        immediate: {
          summary: 'Immediate',
          value: { to: ['+243812345678', '0991234567'], message: 'Your code is 4321', sender_id: 'MyShop' },
        },
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
      '400': errorResponse(
        400,
        ['INVALID_FIELD_FORMAT'],
        'Invalid request (every issue in `details[]`), malformed JSON or bytes that are not valid UTF-8 (`field: "body"`), or a malformed `Idempotency-Key`.',
      ),
      '402': errorResponse(
        402,
        ['INSUFFICIENT_BALANCE'],
        'The cost exceeds prepaid + postpaid balance (also when the merchant has no wallet). Nothing is charged.',
      ),
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
      '400': errorResponse(
        400,
        ['INVALID_FIELD_FORMAT', 'NO_PRICING'],
        'Invalid `mode`, a missing `amount` or `sms_count` for the mode, a value out of range (1110), or no pricing rows (1211).',
      ),
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
    responses: {
      '404': responseRef('MessageNotFound'),
      '409': errorResponse(409, ['INVALID_STATE'], 'An immediate send cannot be cancelled.'),
    },
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
    responses: {
      '404': responseRef('MessageNotFound'),
      '409': errorResponse(409, ['INVALID_STATE'], 'Immediate send, or a cancelled or completed schedule.'),
    },
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
    responses: {
      '404': responseRef('MessageNotFound'),
      '409': errorResponse(409, ['INVALID_STATE'], 'Immediate send, or a cancelled or completed schedule.'),
    },
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
  if (names.length !== (parameter ? 1 : 0))
    throw new Error(`OpenAPI: route ${route.name} has ${names.length} path parameters, the document names ${parameter ? 1 : 0}`);
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

export function paths(): OpenApiDocument['paths'] {
  const result: Record<string, Record<string, JsonObject>> = {};
  for (const route of ROUTES) {
    const path = openApiPath(route);
    result[path] = { ...result[path], [route.method]: operation(route) };
  }
  return result;
}
