/** Why an attempt got no answer, in a word an operator can count and grep (the log line's `outcome`). */
export type ConnectionFailure =
  | 'connection_refused'
  | 'connection_reset'
  | 'connection_closed'
  | 'dns_failure'
  | 'host_unreachable'
  | 'tls_error'
  | 'invalid_response'
  | 'invalid_url'
  /** The address dialled is not public (production's address policy): nothing was sent. */
  | 'refused_address'
  /** The key's Basic password or signing secret could not be opened: nothing was sent. */
  | 'secret_unreadable'
  | 'connection_error';

/** How one delivery attempt ended, from the merchant endpoint's answer. */
export type AttemptResult =
  | { readonly type: 'response'; readonly status: number }
  | { readonly type: 'timeout' }
  | { readonly type: 'connection_error'; readonly kind: ConnectionFailure; readonly reason: string };

/** The attempt's outcome in one word: `http_<status>`, `timeout`, or the connection failure's kind. */
export function attemptOutcome(result: AttemptResult): string {
  switch (result.type) {
    case 'response':
      return `http_${result.status}`;
    case 'timeout':
      return 'timeout';
    case 'connection_error':
      return result.kind;
  }
}

export type AttemptVerdict =
  | { readonly verdict: 'acknowledged' }
  | { readonly verdict: 'rejected' }
  | { readonly verdict: 'retry'; readonly delayMs: number; readonly retryNumber: number }
  | { readonly verdict: 'dropped' };

/**
 * Any 2xx acknowledges; any 4xx ends the event at once; 5xx, other statuses (redirects are not followed),
 * timeouts and connection failures are retried after each delay of `retryDelaysMs` in turn; when the last retry
 * fails the event is dropped. `attempt` counts from 1 (the first delivery).
 */
export function judgeAttempt(result: AttemptResult, attempt: number, retryDelaysMs: readonly number[]): AttemptVerdict {
  if (result.type === 'response') {
    if (result.status >= 200 && result.status < 300) return { verdict: 'acknowledged' };
    if (result.status >= 400 && result.status < 500) return { verdict: 'rejected' };
  }
  const delayMs = retryDelaysMs[attempt - 1];
  if (delayMs === undefined) return { verdict: 'dropped' };
  return { verdict: 'retry', delayMs, retryNumber: attempt };
}

/** Total deliveries an always-failing endpoint receives: the first attempt plus one per retry delay. */
export function maxAttempts(retryDelaysMs: readonly number[]): number {
  return retryDelaysMs.length + 1;
}
