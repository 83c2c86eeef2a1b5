import { createHmac } from 'node:crypto';
import { lookup as dnsLookup, type LookupAddress } from 'node:dns';
import { Agent, request } from 'undici';
import type { AttemptResult } from './retry-plan.js';
import { isPublicAddress, type WebhookUrlPolicy } from './url-guard.js';

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

/** `X-Signature: sha256=<hex>` of `<timestamp>.<body>`, timestamp in Unix seconds. */
export function signature(secret: string, timestampSeconds: number, body: string): string {
  return `sha256=${createHmac('sha256', secret).update(`${timestampSeconds}.${body}`).digest('hex')}`;
}

class RefusedAddressError extends Error {
  constructor(address: string) {
    super(`${REFUSED_ADDRESS}: ${address} is not a public address`);
  }
}

export function createWebhookSender(options: { timeoutMs: number; policy: WebhookUrlPolicy; userAgent: string }): WebhookSender {
  // every connection resolves its host here, so the address check covers the address actually dialled
  const agent = new Agent({
    connect: {
      timeout: options.timeoutMs,
      ...(options.policy.publicAddressesOnly
        ? {
            lookup: (hostname: string, lookupOptions: object, callback: (error: Error | null, address: string | LookupAddress[], family?: number) => void) => {
              dnsLookup(hostname, { ...lookupOptions, all: true }, (error, addresses) => {
                if (error) {
                  callback(error, []);
                  return;
                }
                const refused = addresses.find((a) => !isPublicAddress(a.address));
                if (refused) callback(new RefusedAddressError(refused.address), []);
                else callback(null, addresses);
              });
            },
          }
        : {}),
    },
    keepAliveTimeout: 4_000,
  });

  return {
    async send(url, body, credentials, nowMs) {
      const headers: Record<string, string> = { 'content-type': 'application/json', 'user-agent': options.userAgent };
      if (credentials.username !== null) {
        headers.authorization = `Basic ${Buffer.from(`${credentials.username}:${credentials.password ?? ''}`).toString('base64')}`;
      }
      if (credentials.signingSecret !== null) {
        const timestamp = Math.floor(nowMs / 1000);
        headers['x-signature-timestamp'] = String(timestamp);
        headers['x-signature'] = signature(credentials.signingSecret, timestamp, body);
      }
      // the whole attempt (connect, send, answer) within the timeout. A plain timer and controller, not
      // AbortSignal.timeout: that costs ~20 µs per call on Node 20, a few per cent of a node delivering thousands a second
      const deadline = new AbortController();
      const timer = setTimeout(() => {
        deadline.abort(new DOMException(`no answer within ${options.timeoutMs} ms`, 'TimeoutError'));
      }, options.timeoutMs);
      try {
        const response = await request(url, {
          method: 'POST',
          headers,
          body,
          dispatcher: agent,
          signal: deadline.signal,
          headersTimeout: options.timeoutMs,
          bodyTimeout: options.timeoutMs,
        });
        // the answer's body is ignored, but read so the connection can be reused
        await response.body.dump({ limit: 64 * 1024 }).catch(() => undefined);
        return { type: 'response', status: response.statusCode };
      } catch (error) {
        if (isTimeout(error)) return { type: 'timeout' };
        return { type: 'connection_error', reason: errorText(error) };
      } finally {
        clearTimeout(timer);
      }
    },
    close: () => agent.close(),
  };
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
