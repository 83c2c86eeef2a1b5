/**
 * The one catalogue of error codes. The README's and the OpenAPI document's error tables are checked against it.
 *
 * `envelope` says how the code reaches a client:
 * - `service`: an HTTP response with the contract's error envelope;
 * - `event`:   carrier-level codes, carried by `sms.failed` events and `GET /status` recipients, never as HTTP.
 */
export const ERROR_CATALOGUE = {
  INVALID_FIELD_FORMAT: { code: '1110', httpStatus: 400, envelope: 'service', message: 'One or more fields are invalid.' },
  IDEMPOTENCY_KEY_REUSED: {
    code: '1111',
    httpStatus: 409,
    envelope: 'service',
    message: 'This Idempotency-Key was already used with a different request body.',
  },
  INVALID_STATE: {
    code: '1120',
    httpStatus: 409,
    envelope: 'service',
    message: 'The action does not apply to the message in its current state.',
  },
  INSUFFICIENT_BALANCE: {
    code: '1202',
    httpStatus: 402,
    envelope: 'service',
    message: 'The cost of this send exceeds the available balance.',
  },
  NO_WALLET: { code: '1210', httpStatus: 400, envelope: 'service', message: 'The merchant has neither a prepaid nor a postpaid wallet.' },
  NO_PRICING: { code: '1211', httpStatus: 400, envelope: 'service', message: 'The merchant has no pricing rows.' },
  RATE_LIMIT_EXCEEDED: {
    code: '1301',
    httpStatus: 429,
    envelope: 'service',
    message: 'Rate limit exceeded for this key; retry after the given delay.',
  },
  SUSPICIOUS_ACTIVITY: {
    code: '1302',
    httpStatus: 403,
    envelope: 'service',
    message: 'This key is temporarily suspended after repeated rate-limit rejections.',
  },
  INTERNAL_ERROR: {
    code: '1401',
    httpStatus: 500,
    envelope: 'service',
    message: 'Internal error; retry later and quote the request_id to support.',
  },
  SERVICE_UNAVAILABLE: { code: '1402', httpStatus: 503, envelope: 'service', message: 'Service temporarily unavailable; retry later.' },
  ROUTE_NOT_FOUND: { code: '1404', httpStatus: 404, envelope: 'service', message: 'No such route.' },
  METHOD_NOT_ALLOWED: { code: '1405', httpStatus: 405, envelope: 'service', message: 'Method not allowed on this route.' },
  CARRIER_FAILURE: {
    code: '1501',
    httpStatus: null,
    envelope: 'event',
    message: 'The carrier or connector failed to process the message.',
  },
  UNDELIVERED: {
    code: '1502',
    httpStatus: null,
    envelope: 'event',
    message: 'The carrier reported the message undelivered (number unreachable).',
  },
  SMS_TIMEOUT: { code: '1503', httpStatus: null, envelope: 'event', message: 'No final delivery receipt within 24 hours.' },
  REJECTED: { code: '1504', httpStatus: null, envelope: 'event', message: 'The carrier rejected the message before dispatch.' },
  EXPIRED: { code: '1505', httpStatus: null, envelope: 'event', message: 'The validity window passed without delivery.' },
  DELIVERY_UNKNOWN: { code: '1506', httpStatus: null, envelope: 'event', message: 'The carrier could not determine the delivery outcome.' },
  PARTIALLY_DELIVERED: {
    code: '1507',
    httpStatus: null,
    envelope: 'event',
    message: 'Some segments of the message were delivered, some were not.',
  },
} as const satisfies Record<string, CatalogueEntry>;

export interface CatalogueEntry {
  readonly code: string;
  readonly httpStatus: number | null;
  readonly envelope: 'service' | 'event';
  readonly message: string;
}

export type ErrorName = keyof typeof ERROR_CATALOGUE;
export type ServiceErrorName = {
  [N in ErrorName]: (typeof ERROR_CATALOGUE)[N]['envelope'] extends 'service' ? N : never;
}[ErrorName];
export type CarrierErrorName = Exclude<ErrorName, ServiceErrorName>;
export type ErrorCode = (typeof ERROR_CATALOGUE)[ErrorName]['code'];

/** Carrier-level codes are 1501–1599; a connector may report any of them, not only the named ones. */
export const CARRIER_CODE_RANGE = { min: 1501, max: 1599 } as const;

export function isCarrierErrorCode(code: string): boolean {
  if (!/^\d{4}$/.test(code)) return false;
  const n = Number(code);
  return n >= CARRIER_CODE_RANGE.min && n <= CARRIER_CODE_RANGE.max;
}

export function entryByCode(code: string): (CatalogueEntry & { name: ErrorName }) | undefined {
  for (const [name, entry] of Object.entries(ERROR_CATALOGUE) as [ErrorName, CatalogueEntry][]) {
    if (entry.code === code) return { ...entry, name };
  }
  return undefined;
}
