import { createHash } from 'node:crypto';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { TopicHandler } from '../libraries/persistence/outbox-relay.js';
import type { PendingOutboxEntry } from '../libraries/persistence/journal-port.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { Clock } from '../libraries/clock/clock.js';
import type { WebhookOutboxPayload } from '../messaging/message-behaviour.js';
import type { WebhookEvent } from './event-envelope.js';

/** One event to one URL, on `webhook.jobs.<merchantId>`; a retry is a new job with the next attempt number. */
export interface WebhookJob {
  readonly version: 1;
  /** `<event_id>:<hash of the URL>`: the same on every attempt. */
  readonly jobId: string;
  readonly merchantId: string;
  readonly keyId: string;
  readonly url: string;
  /** `key`: the key's webhook (Basic credentials and signing apply); `none`: a per-request callback_url. */
  readonly auth: 'key' | 'none';
  readonly event: WebhookEvent;
  /** 1 for the first delivery. */
  readonly attempt: number;
  /** Not before this instant (ms). */
  readonly dueAt: number;
}

export const webhookSubject = (merchantId: string): string => `webhook.jobs.${merchantId}`;

export function jobId(eventId: string, url: string): string {
  return `${eventId}:${createHash('sha256').update(url).digest('hex').slice(0, 16)}`;
}

export async function publishJob(transport: Transport, job: WebhookJob, publishId?: string): Promise<void> {
  await transport.publish(webhookSubject(job.merchantId), job, { id: publishId ?? `${job.jobId}:${job.attempt}` });
}

export function isWebhookJob(value: unknown): value is WebhookJob {
  if (typeof value !== 'object' || value === null) return false;
  const job = value as Partial<WebhookJob>;
  return (
    job.version === 1 &&
    typeof job.jobId === 'string' &&
    typeof job.merchantId === 'string' &&
    typeof job.keyId === 'string' &&
    typeof job.url === 'string' &&
    (job.auth === 'key' || job.auth === 'none') &&
    typeof job.attempt === 'number' &&
    typeof job.dueAt === 'number' &&
    typeof job.event === 'object'
  );
}

/**
 * Outbox `webhook.event` → one job per distinct URL: the key's webhook_url (resolved now) and the message's
 * callback_url. An event with neither goes nowhere and is done.
 */
export function createWebhookRelay(deps: { router: ActorRouter; transport: Transport; clock: Clock }): TopicHandler {
  async function relayOne(entry: PendingOutboxEntry): Promise<void> {
    const payload = entry.payload as WebhookOutboxPayload;
    const target = await deps.router.apiKey(payload.merchantId, payload.keyId).ask({ type: 'webhook_target' });
    const keyUrl = target.ok ? (target.target.webhook?.url ?? null) : null;
    const targets: { url: string; auth: 'key' | 'none' }[] = [];
    if (keyUrl) targets.push({ url: keyUrl, auth: 'key' });
    if (payload.callbackUrl && payload.callbackUrl !== keyUrl) targets.push({ url: payload.callbackUrl, auth: 'none' });
    const now = deps.clock.now();
    await Promise.all(
      targets.map((t) =>
        publishJob(deps.transport, {
          version: 1,
          jobId: jobId(payload.event.event_id, t.url),
          merchantId: payload.merchantId,
          keyId: payload.keyId,
          url: t.url,
          auth: t.auth,
          event: payload.event,
          attempt: 1,
          dueAt: now,
        }),
      ),
    );
  }

  return {
    async handle(entries) {
      const done: string[] = [];
      await Promise.all(
        entries.map(async (entry) => {
          await relayOne(entry);
          done.push(entry.id);
        }),
      );
      return done;
    },
  };
}
