import { createHash, createHmac, timingSafeEqual } from 'node:crypto';
import { EVENT_TYPES, type EventType, type WebhookEvent } from './sms-gateway-types.js';

/** Node's `req.headers` (names in lower case) or a Fetch `Headers`. */
export type WebhookHeaders = Headers | Readonly<Record<string, string | readonly string[] | undefined>>;

export interface VerifySignatureOptions {
  /** The raw request body, exactly as received: re-serialised JSON does not verify. */
  readonly body: string | Buffer;
  readonly headers: WebhookHeaders;
  /** The key's signing secret (`whsec_…`), shown once when signing is turned on. */
  readonly secret: string;
  /** How far `X-Signature-Timestamp` may be from now, either way; default 300. */
  readonly toleranceSeconds?: number;
  /** Milliseconds since the epoch; default `Date.now()`. */
  readonly now?: number;
}

const SIGNATURE = /^sha256=([0-9a-f]{64})$/i;
const TIMESTAMP = /^\d{1,15}$/;

/**
 * Checks `X-Signature: sha256=<hex>`, the HMAC-SHA256 of `<timestamp>.<body>`, and that `X-Signature-Timestamp`
 * (Unix seconds) is within the tolerance, so a captured delivery cannot be replayed later.
 */
export function verifyWebhookSignature(options: VerifySignatureOptions): boolean {
  const timestamp = header(options.headers, 'x-signature-timestamp');
  const received = SIGNATURE.exec(header(options.headers, 'x-signature') ?? '')?.[1];
  if (timestamp === undefined || !TIMESTAMP.test(timestamp) || received === undefined) return false;
  // eslint-disable-next-line no-restricted-properties -- the client ships without the gateway's Clock; `now` is its clock
  const nowSeconds = (options.now ?? Date.now()) / 1000;
  if (Math.abs(nowSeconds - Number(timestamp)) > (options.toleranceSeconds ?? 300)) return false;
  const expected = createHmac('sha256', options.secret).update(`${timestamp}.`).update(options.body).digest();
  return timingSafeEqual(expected, Buffer.from(received, 'hex'));
}

/** Checks an `Authorization: Basic …` header against the credentials set on the key, in constant time. */
export function verifyBasicAuth(
  authorization: string | null | undefined,
  credentials: { readonly username: string; readonly password: string },
): boolean {
  const match = /^basic\s+(\S+)\s*$/i.exec(authorization ?? '');
  const presented = match?.[1] === undefined ? '' : Buffer.from(match[1], 'base64').toString('utf8');
  // digests have one length, so the comparison says nothing about the expected value's length either
  const same = timingSafeEqual(digest(presented), digest(`${credentials.username}:${credentials.password}`));
  return match !== null && same;
}

export class WebhookEventError extends Error {
  override readonly name = 'WebhookEventError';
}

type FieldType = 'string' | 'number' | 'boolean' | 'string|null';

const RECIPIENT_FIELDS = { recipient_phone: 'string', carrier: 'string', recipient_index: 'number' } as const;

/** The `data` fields each event type must carry; more may come (additive), and are kept. */
const DATA_FIELDS: Readonly<Record<EventType, Readonly<Record<string, FieldType>>>> = {
  'sms.queued': {
    total_recipients: 'number',
    total_messages: 'number',
    total_cost: 'number',
    currency: 'string',
    scheduled_at: 'string|null',
  },
  'sms.processing': RECIPIENT_FIELDS,
  'sms.sent': { ...RECIPIENT_FIELDS, sent_at: 'string' },
  'sms.delivered': { ...RECIPIENT_FIELDS, delivered_at: 'string', segments: 'number' },
  'sms.failed': { ...RECIPIENT_FIELDS, failed_at: 'string', error_code: 'string', error_message: 'string', retryable: 'boolean' },
};

const ENVELOPE_FIELDS = { event_id: 'string', timestamp: 'string', message_id: 'string' } as const;

/**
 * A webhook body (raw, or already parsed) as a typed event. Throws `WebhookEventError` naming the first field that
 * is missing or of the wrong type, or an unknown `event_type`. Verify the signature on the raw body first.
 */
export function parseWebhookEvent(body: unknown): WebhookEvent {
  const value = typeof body === 'string' || Buffer.isBuffer(body) ? parseJson(body.toString()) : body;
  if (!isObject(value)) throw new WebhookEventError('webhook body must be a JSON object');
  const eventType = value.event_type;
  if (!(EVENT_TYPES as readonly unknown[]).includes(eventType)) {
    throw new WebhookEventError(`event_type must be one of ${EVENT_TYPES.join(', ')}, got ${JSON.stringify(eventType)}`);
  }
  checkFields(value, ENVELOPE_FIELDS, '');
  if (!isObject(value.data)) throw new WebhookEventError('data must be an object');
  checkFields(value.data, DATA_FIELDS[eventType as EventType], 'data.');
  return value as unknown as WebhookEvent;
}

function checkFields(value: Record<string, unknown>, fields: Readonly<Record<string, FieldType>>, prefix: string): void {
  for (const [field, type] of Object.entries(fields)) {
    const actual = value[field];
    const ok = type === 'string|null' ? actual === null || typeof actual === 'string' : typeof actual === type;
    if (!ok) throw new WebhookEventError(`${prefix}${field} must be ${type === 'string|null' ? 'a string or null' : `a ${type}`}`);
  }
}

function header(headers: WebhookHeaders, name: string): string | undefined {
  if (headers instanceof Headers) return headers.get(name) ?? undefined;
  const key = Object.keys(headers).find((k) => k.toLowerCase() === name);
  const value = key === undefined ? undefined : headers[key];
  return typeof value === 'string' ? value : value?.[0];
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    throw new WebhookEventError('webhook body is not valid JSON');
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}
