/**
 * Worker thread entry (see threaded-webhook-sender.ts): makes the attempts it is handed with the webhook sender of
 * webhook-sender.ts and hands back their results, those of one turn of its event loop in one message.
 */
import { parentPort, workerData, type MessagePort } from 'node:worker_threads';
import type { AttemptResult } from './retry-plan.js';
import type { FromSenderThread, ToSenderThread } from './threaded-webhook-sender.js';
import { createWebhookSender, type WebhookSenderOptions } from './webhook-sender.js';

function threadPort(): MessagePort {
  if (!parentPort) throw new Error('webhook-sender-thread runs as a worker thread');
  return parentPort;
}
const port = threadPort();
const sender = createWebhookSender(workerData as WebhookSenderOptions);

let results: (readonly [number, AttemptResult])[] = [];
function flush(): void {
  if (results.length === 0) return;
  port.postMessage({ type: 'results', results } satisfies FromSenderThread);
  results = [];
}

port.on('message', (message: ToSenderThread) => {
  if (message.type === 'close') {
    void sender.close().finally(() => {
      flush();
      port.postMessage({ type: 'closed' } satisfies FromSenderThread);
    });
    return;
  }
  for (const attempt of message.attempts) {
    void sender.send(attempt.url, attempt.body, attempt.credentials, attempt.nowMs).then((result) => {
      if (results.length === 0) setImmediate(flush);
      results.push([attempt.id, result]);
    });
  }
});
