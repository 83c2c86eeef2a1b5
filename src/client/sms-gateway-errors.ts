import type { ErrorEnvelope, FieldDetail } from './sms-gateway-types.js';

/** A service error: the contract's envelope (`error_code`, `request_id`, `details`, `retry_after`). */
export class SmsGatewayError extends Error {
  override readonly name = 'SmsGatewayError';
  readonly status: number;
  /** Four digits, for instance `"1110"`; branch on this, not on the message. */
  readonly errorCode: string;
  /** Quote it to support. */
  readonly requestId: string;
  /** Seconds; set on 429 (and on 1302 and 503 answers). */
  readonly retryAfter: number | undefined;
  /** Which fields failed validation (1110); empty otherwise. */
  readonly details: readonly FieldDetail[];

  constructor(status: number, envelope: ErrorEnvelope, retryAfter: number | undefined) {
    super(`${envelope.error_code}: ${envelope.message}`);
    this.status = status;
    this.errorCode = envelope.error_code;
    this.requestId = envelope.request_id;
    this.retryAfter = retryAfter;
    this.details = envelope.details ?? [];
  }
}

/** Authentication failed: 401 (no, unknown or wrong-environment key), 403 (key status) or 500 (retry). */
export class SmsGatewayAuthError extends Error {
  override readonly name = 'SmsGatewayAuthError';

  /** `detail` may be localised: branch on `status`. */
  constructor(
    readonly status: number,
    readonly detail: string,
    readonly requestId: string | null,
  ) {
    super(`${status}: ${detail}`);
  }
}

/** The message is unknown or belongs to another merchant (the two are indistinguishable). */
export class SmsGatewayNotFoundError extends Error {
  override readonly name = 'SmsGatewayNotFoundError';
  readonly status = 404;

  constructor(
    readonly detail: string,
    readonly requestId: string | null,
  ) {
    super(`404: ${detail}`);
  }
}

/** The request never got an answer: connection refused or reset, DNS, or `timeoutMs` elapsed. */
export class SmsGatewayNetworkError extends Error {
  override readonly name = 'SmsGatewayNetworkError';

  constructor(method: string, path: string, cause: unknown) {
    super(`${method} ${path} failed: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
  }
}

/** An answer that is none of the API's shapes (a proxy's HTML page, for instance). */
export class SmsGatewayResponseError extends Error {
  override readonly name = 'SmsGatewayResponseError';

  constructor(
    readonly status: number,
    readonly body: string,
  ) {
    super(`unexpected response ${status}: ${body.slice(0, 200)}`);
  }
}
