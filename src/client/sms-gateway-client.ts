import { setTimeout as delay } from 'node:timers/promises';
import pRetry from 'p-retry';
import {
  SmsGatewayAuthError,
  SmsGatewayError,
  SmsGatewayNetworkError,
  SmsGatewayNotFoundError,
  SmsGatewayResponseError,
} from './sms-gateway-errors.js';
import type {
  Balance,
  CalculateRequest,
  CalculationMode,
  CalculationResult,
  ErrorEnvelope,
  Health,
  MessageStatus,
  ScheduleActionResult,
  ScheduleRefundResult,
  SendRequest,
  SendResult,
} from './sms-gateway-types.js';

export const API_ROOT = '/api/v1/messaging/sms-api';

export interface RetryOptions {
  /** Retries after the first attempt; 0 surfaces the first 429 at once. */
  readonly maxRetries: number;
  /** Total seconds the client may wait across retries; a longer `Retry-After` surfaces the error instead. */
  readonly maxWaitSeconds: number;
}

export interface SmsGatewayClientOptions {
  /** The environment's base URL, without `/api/v1/...`. */
  readonly baseUrl: string;
  /** `sk_test_…` for the sandbox, `sk_live_…` for production. Server-side only. */
  readonly apiKey: string;
  readonly fetch?: typeof fetch;
  /** Per attempt; default 30 s. */
  readonly timeoutMs?: number;
  readonly retry?: Partial<RetryOptions>;
  /** How the client waits before a retry (tests inject their own); default real timers. */
  readonly sleep?: (ms: number) => Promise<void>;
}

export interface SendOptions {
  /** The same key and body within 24 h answer the original 201 without charging again. */
  readonly idempotencyKey?: string;
}

export interface SmsGatewayClient {
  send(request: SendRequest, options?: SendOptions): Promise<SendResult>;
  status(messageId: string): Promise<MessageStatus>;
  balance(): Promise<Balance>;
  calculate<M extends CalculationMode>(request: Extract<CalculateRequest, { mode: M }>): Promise<CalculationResult<M>>;
  cancel(messageId: string): Promise<ScheduleRefundResult>;
  pause(messageId: string): Promise<ScheduleActionResult>;
  resume(messageId: string): Promise<ScheduleRefundResult>;
  /** Resolves on 503 too, with `status: 'degraded'`. */
  health(): Promise<Health>;
}

export const DEFAULT_RETRY: RetryOptions = { maxRetries: 3, maxWaitSeconds: 60 };
const DEFAULT_TIMEOUT_MS = 30_000;

interface Call {
  readonly method: 'GET' | 'POST' | 'DELETE';
  readonly path: string;
  readonly body?: unknown;
  readonly headers?: Readonly<Record<string, string>>;
  /** Whether a 503 with Retry-After may be retried: not for a send that could be charged twice. */
  readonly safeToRepeat: boolean;
  /** Statuses other than 2xx whose `{ data }` is still an answer (health's 503). */
  readonly dataStatuses?: readonly number[];
}

export function createSmsGatewayClient(options: SmsGatewayClientOptions): SmsGatewayClient {
  const fetchFn = options.fetch ?? fetch;
  const timeoutMs = options.timeoutMs ?? DEFAULT_TIMEOUT_MS;
  const retry: RetryOptions = { ...DEFAULT_RETRY, ...options.retry };
  const sleep = options.sleep ?? ((ms: number) => delay(ms));
  const root = `${options.baseUrl.replace(/\/+$/, '')}${API_ROOT}`;

  async function attempt<T>(call: Call): Promise<T> {
    const headers: Record<string, string> = { accept: 'application/json', 'app-key': options.apiKey, ...call.headers };
    if (call.body !== undefined) headers['content-type'] = 'application/json';
    let response: Response;
    let text: string;
    try {
      response = await fetchFn(`${root}${call.path}`, {
        method: call.method,
        headers,
        ...(call.body !== undefined ? { body: JSON.stringify(call.body) } : {}),
        signal: AbortSignal.timeout(timeoutMs),
      });
      text = await response.text();
    } catch (error) {
      throw new SmsGatewayNetworkError(call.method, call.path, error);
    }
    const body = parseJson(text);
    if ((response.ok || call.dataStatuses?.includes(response.status)) && isObject(body) && 'data' in body) return body.data as T;
    throw errorOf(response, body, text);
  }

  function request<T>(call: Call): Promise<T> {
    let waitedSeconds = 0;
    return pRetry(() => attempt<T>(call), {
      retries: retry.maxRetries,
      minTimeout: 0, // the server says how long to wait; p-retry only counts attempts
      // only called while retries are left; waiting here keeps the wait and the decision together
      shouldRetry: async ({ error }) => {
        const wait = retryDelaySeconds(error, call.safeToRepeat);
        if (wait === null || waitedSeconds + wait > retry.maxWaitSeconds) return false;
        waitedSeconds += wait;
        await sleep(wait * 1000);
        return true;
      },
    });
  }

  const id = (messageId: string) => encodeURIComponent(messageId);

  return {
    send: (body, sendOptions = {}) => {
      const key = sendOptions.idempotencyKey;
      const headers: Record<string, string> = key === undefined ? {} : { 'idempotency-key': key };
      return request({ method: 'POST', path: '/send', body, headers, safeToRepeat: key !== undefined });
    },
    status: (messageId) => request({ method: 'GET', path: `/status/${id(messageId)}`, safeToRepeat: true }),
    balance: () => request({ method: 'GET', path: '/balance', safeToRepeat: true }),
    calculate: (body) => request({ method: 'POST', path: '/calculate', body, safeToRepeat: true }),
    // all three are idempotent on the server: a repeat refunds nothing more
    cancel: (messageId) => request({ method: 'DELETE', path: `/cancel/${id(messageId)}`, safeToRepeat: true }),
    pause: (messageId) => request({ method: 'POST', path: `/pause/${id(messageId)}`, safeToRepeat: true }),
    resume: (messageId) => request({ method: 'POST', path: `/resume/${id(messageId)}`, safeToRepeat: true }),
    health: () => request({ method: 'GET', path: '/health', safeToRepeat: true, dataStatuses: [503] }),
  };
}

/**
 * Seconds to wait before retrying, or null when the error is not retried. A 429 is answered before the request is
 * acted on, so it is always safe to repeat; a 503 only says to when it carries Retry-After.
 */
function retryDelaySeconds(error: Error, safeToRepeat: boolean): number | null {
  if (!(error instanceof SmsGatewayError)) return null;
  if (error.status === 429) return error.retryAfter ?? 1;
  if (error.status === 503 && safeToRepeat && error.retryAfter !== undefined) return error.retryAfter;
  return null;
}

function errorOf(response: Response, body: unknown, text: string): Error {
  const requestId = response.headers.get('x-request-id');
  if (isEnvelope(body)) {
    const envelope = { ...body, request_id: body.request_id ?? requestId ?? '' };
    return new SmsGatewayError(response.status, envelope, body.retry_after ?? retryAfterHeader(response));
  }
  if (isObject(body) && typeof body.detail === 'string') {
    return response.status === 404
      ? new SmsGatewayNotFoundError(body.detail, requestId)
      : new SmsGatewayAuthError(response.status, body.detail, requestId);
  }
  return new SmsGatewayResponseError(response.status, text);
}

function retryAfterHeader(response: Response): number | undefined {
  const header = response.headers.get('retry-after');
  return header !== null && /^\d+$/.test(header) ? Number(header) : undefined;
}

/** The service-error envelope; `request_id` is checked by the caller (the header carries it too). */
function isEnvelope(body: unknown): body is Omit<ErrorEnvelope, 'request_id'> & { request_id?: string } {
  return isObject(body) && body.success === false && typeof body.error_code === 'string' && typeof body.message === 'string';
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null && !Array.isArray(value);
}

function parseJson(text: string): unknown {
  try {
    return JSON.parse(text) as unknown;
  } catch {
    return undefined;
  }
}
