import type { Worker } from 'node:worker_threads';
import { spawnModuleThread, within } from '../libraries/lifecycle/module-thread.js';
import type { AttemptResult } from './retry-plan.js';
import type { WebhookCredentials, WebhookSender, WebhookSenderOptions } from './webhook-sender.js';

/** One attempt handed to the sender thread; `id` pairs it with its result. */
export interface ThreadAttempt {
  readonly id: number;
  readonly url: string;
  readonly body: string;
  readonly credentials: WebhookCredentials;
  readonly nowMs: number;
}

/** To the sender thread: the attempts of one turn of the event loop, or the order to finish and close. */
export type ToSenderThread = { readonly type: 'attempts'; readonly attempts: readonly ThreadAttempt[] } | { readonly type: 'close' };

/** From the sender thread: the results of one of its turns (`[id, result]`), then `closed` once its agent is. */
export type FromSenderThread =
  { readonly type: 'results'; readonly results: readonly (readonly [number, AttemptResult])[] } | { readonly type: 'closed' };

export interface ThreadedWebhookSenderOptions extends WebhookSenderOptions {
  /**
   * The sender thread failed, or none could be started; the attempts it held end as connection errors and the next
   * attempt starts another.
   */
  readonly onError?: (error: unknown) => void;
  /** Starts the thread (by default webhook-sender-thread beside this module); tests give their own. */
  readonly spawn?: (options: WebhookSenderOptions) => Worker;
}

/** What an attempt under way becomes when its thread ends before answering: retried like any connection failure. */
export const THREAD_ENDED: AttemptResult = {
  type: 'connection_error',
  kind: 'connection_closed',
  reason: 'the webhook sender thread ended during the attempt',
};
const SENDER_CLOSED: AttemptResult = { type: 'connection_error', kind: 'connection_closed', reason: 'the webhook sender is closed' };

/** How long a closing thread may take past the attempt timeout before it is terminated. */
const CLOSE_GRACE_MS = 2_000;

interface SenderThread {
  readonly worker: Worker;
  readonly pending: Map<number, (result: AttemptResult) => void>;
  readonly closed: Promise<void>;
}

/**
 * The webhook sender of webhook-sender.ts run in a worker thread, so that the HTTP client's work (connections,
 * requests, answers, timers) leaves the node's main thread. Attempts made in one turn of the event loop cross to the
 * thread in one message, and their results come back the same way. The thread starts with the sender, and again with
 * the next attempt after it ended; it does not keep the process alive while nothing is under way.
 */
export function createThreadedWebhookSender(options: ThreadedWebhookSenderOptions): WebhookSender {
  const { onError, spawn = spawnSenderThread, ...senderOptions } = options;
  let thread: SenderThread | null = null;
  let queued: { readonly attempt: ThreadAttempt; readonly resolve: (result: AttemptResult) => void }[] = [];
  let nextId = 0;
  let closing = false;

  function start(): SenderThread {
    const worker = spawn(senderOptions);
    worker.unref();
    const pending = new Map<number, (result: AttemptResult) => void>();
    let markClosed = (): void => undefined;
    const closed = new Promise<void>((resolve) => {
      markClosed = resolve;
    });
    const started: SenderThread = { worker, pending, closed };
    worker.on('message', (message: FromSenderThread) => {
      if (message.type === 'closed') {
        markClosed();
        return;
      }
      for (const [id, result] of message.results) {
        const resolve = pending.get(id);
        pending.delete(id);
        resolve?.(result);
      }
      if (pending.size === 0) worker.unref();
    });
    worker.on('error', (error) => {
      onError?.(error);
    });
    worker.once('exit', () => {
      if (thread === started) thread = null;
      for (const resolve of pending.values()) resolve(THREAD_ENDED);
      pending.clear();
      markClosed();
    });
    return started;
  }

  function flush(): void {
    const batch = queued;
    queued = [];
    if (batch.length === 0) return;
    let current: SenderThread;
    try {
      current = thread ??= start();
    } catch (error) {
      // no thread to be had (the process's resources): these attempts fail like any unanswered one and are retried
      onError?.(error);
      const failed: AttemptResult = {
        type: 'connection_error',
        kind: 'connection_error',
        reason: `no webhook sender thread: ${String(error)}`,
      };
      for (const { resolve } of batch) resolve(failed);
      return;
    }
    for (const { attempt, resolve } of batch) current.pending.set(attempt.id, resolve);
    current.worker.ref();
    current.worker.postMessage({ type: 'attempts', attempts: batch.map(({ attempt }) => attempt) } satisfies ToSenderThread);
  }

  // started with the sender, so that its start-up time is not counted in the first attempts' durations (a merchant's
  // pace is measured by them)
  thread = start();
  return {
    send(url, body, credentials, nowMs) {
      if (closing) return Promise.resolve(SENDER_CLOSED);
      return new Promise<AttemptResult>((resolve) => {
        if (queued.length === 0) setImmediate(flush);
        queued.push({ attempt: { id: nextId++, url, body, credentials, nowMs }, resolve });
      });
    },
    async close() {
      closing = true;
      flush();
      const current = thread;
      if (!current) return;
      current.worker.postMessage({ type: 'close' } satisfies ToSenderThread);
      await within(senderOptions.timeoutMs + CLOSE_GRACE_MS, current.closed);
      await current.worker.terminate();
    },
  };
}

/** The sender thread: webhook-sender-thread beside this module. */
export function spawnSenderThread(options: WebhookSenderOptions): Worker {
  return spawnModuleThread(import.meta.url, 'webhook-sender-thread', options);
}
