import { ERROR_CATALOGUE, type ServiceErrorName } from '../../../libraries/errors/error-catalogue.js';
import { IDEMPOTENCY_KEY } from '../app/merchant-router.js';
import { REQUEST_ID } from '../app/request-context.js';
import type { JsonObject } from './openapi-document.js';
import { json, ref } from './schema-vocabulary.js';

// Headers, parameters and responses: components.headers, components.parameters and components.responses of the document.

export const serviceCodes = (names: readonly ServiceErrorName[]) => names.map((name) => ERROR_CATALOGUE[name].code);

export const HEADERS = {
  'X-Request-Id': {
    description:
      'On every response: the incoming `X-Request-Id` when well formed, else a new UUID. Error envelopes repeat it as `request_id`.',
    required: true,
    schema: { type: 'string' },
  },
  'Retry-After': {
    description: 'Seconds to wait before retrying; equals `retry_after` of the body.',
    schema: { type: 'integer', minimum: 0 },
  },
  'Idempotent-Replayed': {
    description:
      'Present (`true`) when this 201 is the stored answer to an earlier request with the same `Idempotency-Key` and body; nothing was charged again.',
    schema: { type: 'string', const: 'true' },
  },
  Allow: { description: 'Methods the path accepts.', required: true, schema: { type: 'string' } },
} as const;
export type HeaderName = keyof typeof HEADERS;

const headerRef = (name: HeaderName): JsonObject => ({ $ref: `#/components/headers/${name}` });

export function headers(names: readonly HeaderName[], required: readonly HeaderName[] = []): JsonObject {
  return Object.fromEntries(
    [...new Set<HeaderName>(['X-Request-Id', ...names, ...required])].map((name) => [
      name,
      required.includes(name) ? { ...HEADERS[name], required: true } : headerRef(name),
    ]),
  );
}

function catalogueLines(names: readonly ServiceErrorName[]): string {
  return names.map((name) => `\`${ERROR_CATALOGUE[name].code}\` ${name}: ${ERROR_CATALOGUE[name].message}`).join(' ');
}

/** The service-error envelope narrowed to one HTTP status and the codes it can carry there. */
export function errorResponse(
  status: number,
  names: readonly ServiceErrorName[],
  description: string,
  extraHeaders: readonly HeaderName[] = [],
  requiredHeaders: readonly HeaderName[] = [],
): JsonObject {
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
    allOf: [
      ref('ServiceError'),
      { properties: { status_code: { const: status }, error_code: codes.length === 1 ? { const: codes[0] } : { enum: codes } } },
    ],
  };
}

const detailResponse = (description: string): JsonObject => ({ description, headers: headers([]), content: json(ref('Detail')) });

export const RESPONSES = {
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
    description:
      '`{detail}` when the key could not be verified (retry), else the service-error envelope with 1401 INTERNAL_ERROR. 1401 means the outcome is unknown (a command was taken and never answered): after it a `POST /send` may still go out, so retry with the same `Idempotency-Key`.',
    headers: headers([]),
    content: json({ oneOf: [ref('Detail'), envelopeFor(500, ['INTERNAL_ERROR'])] }),
    'x-error-codes': serviceCodes(['INTERNAL_ERROR']),
  },
  ServiceUnavailable: errorResponse(
    503,
    ['SERVICE_UNAVAILABLE'],
    'Nothing was applied: the request reached its deadline before a step could start, or no node served its data in time (no charge, no message, no refund). Safe to retry after `Retry-After`, with or without an Idempotency-Key.',
    ['Retry-After'],
  ),
  MessageNotFound: detailResponse(
    "`{detail}`: no such message for this merchant (an unknown id and another merchant's id answer the same).",
  ),
  PayloadTooLarge: errorResponse(
    413,
    ['INVALID_FIELD_FORMAT'],
    'The body is over the limit (256 KiB by default): one detail with `field: "body"`. Answered as soon as the declared length or the bytes received pass the limit, with `Connection: close`: the rest of the body is not read.',
  ),
  UnsupportedMediaType: errorResponse(
    415,
    ['INVALID_FIELD_FORMAT'],
    'A body sent without `Content-Type: application/json` (or with a charset other than UTF-8, or an unknown `Content-Encoding`): one detail with `field: "body"`.',
  ),
  RouteNotFound: errorResponse(404, ['ROUTE_NOT_FOUND'], 'Any path that is not an endpoint (under the API root or elsewhere).'),
  MethodNotAllowed: errorResponse(
    405,
    ['METHOD_NOT_ALLOWED'],
    'A known path with another method; `Allow` lists the methods of the path.',
    [],
    ['Allow'],
  ),
} as const satisfies Record<string, JsonObject>;
type ResponseName = keyof typeof RESPONSES;

export const responseRef = (name: ResponseName): JsonObject => ({ $ref: `#/components/responses/${name}` });

export const PARAMETERS = {
  RequestId: {
    name: 'X-Request-Id',
    in: 'header',
    required: false,
    description:
      'Optional correlation id, echoed in the `X-Request-Id` response header (and `request_id` of error envelopes) when it matches the pattern; otherwise a new one is generated.',
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
  Id: {
    name: 'id',
    in: 'path',
    required: true,
    description: 'The `message_id` of a scheduled or recurring send.',
    schema: { type: 'string' },
  },
} as const;
export type ParameterName = keyof typeof PARAMETERS;
export const parameterRef = (name: ParameterName): JsonObject => ({ $ref: `#/components/parameters/${name}` });
