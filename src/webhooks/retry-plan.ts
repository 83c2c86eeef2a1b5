/** How one delivery attempt ended, from the merchant endpoint's answer. */
export type AttemptResult =
  | { readonly type: 'response'; readonly status: number }
  | { readonly type: 'timeout' }
  | { readonly type: 'connection_error'; readonly reason: string };

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
