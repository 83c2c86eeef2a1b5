import { expect } from 'chai';
import { call, type CallResult } from './http-fixture.js';

/** Shared assertions and requests for the HTTP contract tests (test/integration/http). */

export interface FieldDetail {
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

/** Numbers with a pricing row in `seedMerchant`: 243/81 → 0.02, 243/99 → 0.03, 33/6 → 0.05; others 0.01. */
export const NUMBERS = {
  vodacom: '+243812345678',
  airtel: '+243991234567',
  orangeFr: '+33612345678',
  unpriced: '+14155550100',
} as const;

/** A well-formed key (`sk_<env>_` + 32 base62) that no merchant holds. */
export function unknownKey(env: 'test' | 'live' = 'test'): string {
  const alphabet = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
  let body = '';
  for (let i = 0; i < 32; i++) body += alphabet.charAt(Math.floor(Math.random() * alphabet.length));
  return `sk_${env}_${body}`;
}

/** `X-Request-Id` is on every response. */
export function requestIdOf(result: CallResult): string {
  const id = result.headers.get('x-request-id');
  expect(id, 'X-Request-Id header').to.be.a('string').and.not.equal('');
  return id!;
}

/** Exactly `{ detail: <text> }` at `status`; returns the text. */
export function expectDetail(result: CallResult, status: number): string {
  expect(result.status, result.text).to.equal(status);
  requestIdOf(result);
  expect(result.body).to.be.an('object');
  const body = result.body as Record<string, unknown>;
  expect(Object.keys(body)).to.deep.equal(['detail']);
  expect(body.detail).to.be.a('string').and.not.equal('');
  return body.detail as string;
}

/**
 * The service-error envelope at `status` with `error_code` (a four-digit string); `request_id` equals the
 * `X-Request-Id` header; `retry_after` and `Retry-After` go together and agree.
 */
export function expectEnvelope(result: CallResult, status: number, errorCode: string): ErrorEnvelope {
  expect(result.status, result.text).to.equal(status);
  const body = result.body as ErrorEnvelope;
  expect(body).to.be.an('object');
  expect(body.error_code)
    .to.be.a('string')
    .and.match(/^\d{4}$/);
  expect(body.error_code, result.text).to.equal(errorCode);
  expect(body.success).to.equal(false);
  expect(body.status_code).to.equal(status);
  expect(body.message).to.be.a('string').and.not.equal('');
  expect(body.request_id).to.equal(requestIdOf(result));
  const allowed = ['success', 'status_code', 'error_code', 'message', 'request_id', 'details', 'retry_after'];
  expect(Object.keys(body).filter((k) => !allowed.includes(k))).to.deep.equal([]);
  const header = result.headers.get('retry-after');
  if (body.retry_after !== undefined || header !== null) {
    expect(body.retry_after).to.be.a('number');
    expect(header).to.equal(String(body.retry_after));
  }
  return body;
}

/** 1110 at `status` whose `details[]` entries are exactly `{ field, message, type }` and name `field`. */
export function expectFieldError(result: CallResult, field: string, status = 400): readonly FieldDetail[] {
  const body = expectEnvelope(result, status, '1110');
  expect(body.details, 'details').to.be.an('array').that.is.not.empty;
  const details = body.details!;
  for (const detail of details) {
    expect(Object.keys(detail).sort()).to.deep.equal(['field', 'message', 'type']);
    expect(detail.field).to.be.a('string');
    expect(detail.message).to.be.a('string').and.not.equal('');
    expect(detail.type).to.be.a('string').and.not.equal('');
  }
  expect(
    details.map((d) => d.field),
    result.text,
  ).to.include(field);
  return details;
}

/** `{ status_code, data }` at `status`; returns `data`, typed as the caller expects it. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the shape it reads
export function dataOf<T = Record<string, unknown>>(result: CallResult, status = 200): T {
  expect(result.status, result.text).to.equal(status);
  const body = result.body as { status_code: number; data: T };
  expect(Object.keys(body).sort()).to.deep.equal(['data', 'status_code']);
  expect(body.status_code).to.equal(status);
  return body.data;
}

export interface SendData {
  readonly message_id: string;
  readonly total_recipients: number;
  readonly total_messages: number;
  readonly total_cost: number;
  readonly currency: string;
  readonly status: string;
}

export interface BalanceData {
  readonly balance: number;
  readonly sms_wallet_balance: number;
  readonly postpaid_wallet_balance: number;
  readonly currency: string;
  readonly unit_price: number;
  readonly available_sms: number;
}

/** The requests of the merchant API, bound to one API root. */
export function client(api: () => string) {
  return {
    send: (key: string | null, json: unknown, headers: Record<string, string> = {}) =>
      call(`${api()}/send`, { method: 'POST', key, json, headers }),
    status: (key: string | null, id: string) => call(`${api()}/status/${encodeURIComponent(id)}`, { key }),
    balance: (key: string | null) => call(`${api()}/balance`, { key }),
    calculate: (key: string | null, json: unknown) => call(`${api()}/calculate`, { method: 'POST', key, json }),
    cancel: (key: string | null, id: string) => call(`${api()}/cancel/${encodeURIComponent(id)}`, { method: 'DELETE', key }),
    pause: (key: string | null, id: string) => call(`${api()}/pause/${encodeURIComponent(id)}`, { method: 'POST', key }),
    resume: (key: string | null, id: string) => call(`${api()}/resume/${encodeURIComponent(id)}`, { method: 'POST', key }),
    health: (key: string | null = null) => call(`${api()}/health`, { key }),
    async balanceOf(key: string): Promise<BalanceData> {
      return dataOf<BalanceData>(await call(`${api()}/balance`, { key }));
    },
  };
}

export type ApiClient = ReturnType<typeof client>;

/** The key with its last character changed to another one (a key ending in x stays itself under `+ 'x'`). */
export const alteredKey = (key: string): string => `${key.slice(0, -1)}${key.endsWith('x') ? 'y' : 'x'}`;
