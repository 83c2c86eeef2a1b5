import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress, type LookupOptions } from 'node:dns';
import { isIP } from 'node:net';
import { Agent, buildConnector, type Dispatcher } from 'undici';
import type { AttemptResult, ConnectionFailure } from './retry-plan.js';
import { isPublicAddress, type WebhookUrlPolicy } from './url-guard.js';
import { InternalError } from '../libraries/errors/internal-errors.js';

export interface WebhookCredentials {
  readonly username: string | null;
  readonly password: string | null;
  /** HMAC signing secret (opt-in per key). */
  readonly signingSecret: string | null;
}

export interface WebhookSender {
  /** One delivery attempt: POST the exact body; never follows redirects. */
  send(url: string, body: string, credentials: WebhookCredentials, nowMs: number): Promise<AttemptResult>;
  close(): Promise<void>;
}

export const REFUSED_ADDRESS = 'refused_address';
/** More answer body than this is not read: the connection is closed instead of reused. */
const MAX_ANSWER_BYTES = 64 * 1024;

/** Origin and path of a webhook URL, parsed once per URL (a node sends to a few URLs many times). */
const targets = new Map<string, { readonly origin: string; readonly path: string }>();
function targetOf(url: string): { readonly origin: string; readonly path: string } {
  let target = targets.get(url);
  if (!target) {
    const parsed = new URL(url);
    target = { origin: parsed.origin, path: `${parsed.pathname}${parsed.search}` };
    if (targets.size >= 10_000) targets.clear();
    targets.set(url, target);
  }
  return target;
}

/** `X-Signature: sha256=<hex>` of `<timestamp>.<body>`, timestamp in Unix seconds. */
export function signature(secret: string, timestampSeconds: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestampSeconds}.${body}`).digest('hex')}`;
}

class RefusedAddressError extends InternalError {
  readonly kind = 'refused_address';

  constructor(address: string) {
    super(`${REFUSED_ADDRESS}: ${address} is not a public address`);
  }
}

type LookupCallback = (error: NodeJS.ErrnoException | null, address: string | LookupAddress[], family?: number) => void;

/** DNS as the socket asks for it, refusing every answer that holds a non-public address. */
function publicOnlyLookup(hostname: string, lookupOptions: LookupOptions, callback: LookupCallback): void {
  dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
    if (error) {
      callback(error, []);
      return;
    }
    const refused = addresses.find((a) => !isPublicAddress(a.address));
    if (refused) callback(new RefusedAddressError(refused.address), []);
    else if (lookupOptions.all === true) callback(null, addresses);
    else if (addresses[0]) callback(null, addresses[0].address, addresses[0].family);
    else callback(Object.assign(new Error(`${hostname} has no address`), { code: 'ENOTFOUND' }), []);
  });
}

/**
 * The connector every delivery dials with. Under the public-only policy it judges the address actually dialled: an
 * IP literal before connecting (sockets skip DNS for those), a host name through its DNS answer at connection time
 * (so an answer that changes after acceptance cannot redirect a delivery inside).
 */
function connectorOf(options: Pick<WebhookSenderOptions, 'timeoutMs' | 'policy'>): buildConnector.connector {
  if (!options.policy.publicAddressesOnly) return buildConnector({ timeout: options.timeoutMs });
  const connect = buildConnector({ timeout: options.timeoutMs, lookup: publicOnlyLookup });
  return (connectOptions, callback) => {
    const host = connectOptions.hostname.replace(/^\[|\]$/g, '');
    if (isIP(host) !== 0 && !isPublicAddress(host)) {
      callback(new RefusedAddressError(host), null);
      return;
    }
    connect(connectOptions, callback);
  };
}

export interface WebhookSenderOptions {
  readonly timeoutMs: number;
  readonly policy: WebhookUrlPolicy;
  readonly userAgent: string;
}

export function createWebhookSender(options: WebhookSenderOptions): WebhookSender {
  const agent = new Agent({ connect: connectorOf(options), keepAliveTimeout: 4_000 });

  return {
    send(url, body, credentials, nowMs) {
      const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': options.userAgent };
      if (credentials.username !== null) {
        headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password ?? ''}`).toString('base64')}`;
      }
      if (credentials.signingSecret !== null) {
        const timestamp = Math.floor(nowMs / 1000);
        headers['x-signature-timestamp'] = String(timestamp);
        headers['x-signature'] = signature(credentials.signingSecret, timestamp, body);
      }
      return new Promise<AttemptResult>((resolve) => {
        let status: number | null = null;
        let controller: Dispatcher.DispatchController | null = null;
        let over = false;
        let answerBytes = 0;
        let answered = false;
        // the answer is its status: it counts as soon as it arrives, while the body is still read (bounded by the
        // timer and MAX_ANSWER_BYTES) so that the connection can be reused
        const answer = (result: AttemptResult): void => {
          if (answered) return;
          answered = true;
          resolve(result);
        };
        const end = (result: AttemptResult): void => {
          over = true;
          clearTimeout(timer);
          answer(result);
        };
        // the whole attempt (connect, send, answer) within the timeout; whatever is still under way then is abandoned
        const timer = setTimeout(() => {
          over = true;
          answer({ type: 'timeout' });
          controller?.abort(new DOMException(`no answer within ${options.timeoutMs} ms`, 'TimeoutError'));
        }, options.timeoutMs);
        // undici's dispatcher API, not request(): no response stream, body reader or abort signal per attempt, which
        // cost a node delivering thousands of events a second a tenth of its time
        const handler: Dispatcher.DispatchHandler = {
          onRequestStart(started) {
            controller = started;
            if (over) started.abort(new DOMException('the attempt is over', 'AbortError'));
          },
          onResponseStart(_controller, statusCode) {
            // 1xx informational answers are not the answer
            if (statusCode < 200) return;
            status = statusCode;
            answer({ type: 'response', status: statusCode });
          },
          onResponseData(receiving, chunk) {
            answerBytes += chunk.length;
            if (answerBytes > MAX_ANSWER_BYTES && status !== null) {
              end({ type: 'response', status });
              receiving.abort(new Error(`answer body over ${MAX_ANSWER_BYTES} bytes`));
            }
          },
          onResponseEnd() {
            end(
              status === null
                ? { type: 'connection_error', kind: 'connection_closed', reason: 'the connection ended without an answer' }
                : { type: 'response', status },
            );
          },
          onResponseError(_controller, error) {
            end(isTimeout(error) ? { type: 'timeout' } : connectionError(error));
          },
        };
        try {
          const { origin, path } = targetOf(url);
          agent.dispatch(
            { origin, path, method: 'POST', headers, body, headersTimeout: options.timeoutMs, bodyTimeout: options.timeoutMs },
            handler,
          );
        } catch (error) {
          end(connectionError(error));
        }
      });
    },
    close: () => agent.close(),
  };
}

function connectionError(error: unknown): AttemptResult {
  return { type: 'connection_error', kind: failureKind(error), reason: errorText(error) };
}

const FAILURE_BY_CODE: ReadonlyMap<string, ConnectionFailure> = new Map(
  Object.entries({
    ECONNREFUSED: 'connection_refused',
    ECONNRESET: 'connection_reset',
    EPIPE: 'connection_reset',
    UND_ERR_SOCKET: 'connection_closed',
    UND_ERR_CLOSED: 'connection_closed',
    ENOTFOUND: 'dns_failure',
    EAI_AGAIN: 'dns_failure',
    EAI_FAIL: 'dns_failure',
    EAI_NODATA: 'dns_failure',
    ENODATA: 'dns_failure',
    EHOSTUNREACH: 'host_unreachable',
    ENETUNREACH: 'host_unreachable',
    EHOSTDOWN: 'host_unreachable',
    ENETDOWN: 'host_unreachable',
    EPROTO: 'tls_error',
    ERR_INVALID_URL: 'invalid_url',
  } satisfies Record<string, ConnectionFailure>),
);

/** The kind of a failed connection, from the error or the first of its causes that tells. */
function failureKind(error: unknown): ConnectionFailure {
  let current = error;
  for (let depth = 0; current instanceof Error && depth < 5; depth += 1, current = current.cause) {
    if (current instanceof RefusedAddressError) return 'refused_address';
    if (current.name === 'HTTPParserError' || current.name === 'ResponseExceededMaxSizeError') return 'invalid_response';
    const code = (current as { code?: unknown }).code;
    if (typeof code !== 'string') continue;
    const known = FAILURE_BY_CODE.get(code);
    if (known) return known;
    // Node's TLS and OpenSSL certificate codes (ERR_TLS_CERT_ALTNAME_INVALID, CERT_HAS_EXPIRED, DEPTH_ZERO_SELF_SIGNED_CERT…)
    if (/^ERR_(TLS|SSL)_|CERT|UNABLE_TO_(GET|VERIFY)/.test(code)) return 'tls_error';
  }
  return 'connection_error';
}

function errorText(error: unknown): string {
  if (error instanceof Error) {
    const cause = error.cause instanceof Error ? `: ${error.cause.message}` : '';
    return `${error.message}${cause}`;
  }
  return String(error);
}

function isTimeout(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  return (
    error.name === 'TimeoutError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT' ||
    (error.name === 'AbortError' && error.cause instanceof Error && error.cause.name === 'TimeoutError')
  );
}
