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
 * First attempts of several events to one URL, published together by the relay (one NATS message instead of one per
 * event). The worker delivers each event on its own; an event that needs a retry continues as a `WebhookJob`.
 */
export interface WebhookBatch {
  readonly version: 1;
  readonly kind: 'batch';
  readonly merchantId: string;
  readonly keyId: string;
  readonly url: string;
  readonly auth: 'key' | 'none';
  readonly events: readonly WebhookEvent[];
  /** Not before this instant (ms). */
  readonly dueAt: number;
}

/** Events per batch: about one merchant's worth of delivery slots. */
export const WEBHOOK_BATCH_MAX_EVENTS = 64;

export function isWebhookBatch(value: unknown): value is WebhookBatch {
  if (typeof value !== 'object' || value === null) return false;
  const batch = value as Partial<WebhookBatch>;
  return (
    batch.version === 1 &&
    batch.kind === 'batch' &&
    typeof batch.merchantId === 'string' &&
    typeof batch.keyId === 'string' &&
    typeof batch.url === 'string' &&
    (batch.auth === 'key' || batch.auth === 'none') &&
    typeof batch.dueAt === 'number' &&
    Array.isArray(batch.events) &&
    batch.events.length > 0 &&
    batch.events.every((event: unknown) => typeof event === 'object' && event !== null)
  );
}

/** The first attempt of one of a batch's events, as a job of its own. */
export function jobOfBatch(batch: WebhookBatch, event: WebhookEvent): WebhookJob {
  return {
    version: 1,
    jobId: jobId(event.event_id, batch.url),
    merchantId: batch.merchantId,
    keyId: batch.keyId,
    url: batch.url,
    auth: batch.auth,
    event,
    attempt: 1,
    dueAt: batch.dueAt,
  };
}

/** The publish id names the batch by its URL and events, so a relay that carries the same entries again is deduplicated. */
export async function publishBatch(transport: Transport, batch: WebhookBatch): Promise<void> {
  const digest = createHash('sha256').update(batch.url);
  for (const event of batch.events) digest.update('\u0000').update(event.event_id);
  await transport.publish(webhookSubject(batch.merchantId), batch, { id: `batch:${digest.digest('hex').slice(0, 32)}` });
}

/**
 * Outbox `webhook.event` → the key's webhook_url (resolved now, once per key and pass) and each message's
 * callback_url; each event once per distinct URL, the events of one journal record to the same URL in batches. An
 * event with neither URL goes nowhere and is done. An entry is done when every batch holding it was published.
 */
export function createWebhookRelay(deps: {
  router: ActorRouter;
  transport: Transport;
  clock: Clock;
  /** A key's entries that could not be carried out this pass (they stay pending for the next). */
  onError?: (error: unknown) => void;
}): TopicHandler {
  async function relayKey(entries: readonly PendingOutboxEntry[]): Promise<readonly string[]> {
    const first = entries[0]?.payload as WebhookOutboxPayload | undefined;
    if (!first) return [];
    const target = await deps.router.apiKey(first.merchantId, first.keyId).ask({ type: 'webhook_target' });
    const keyUrl = target.ok ? (target.target.webhook?.url ?? null) : null;
    // a batch holds the events of one journal record to one URL: whichever pass carries the same entries out
    // (the append's notice, a poll, a retry after a publish timed out), it forms the same batches with the same
    // publish ids, and the broker keeps one of each
    const batches = new Map<string, { url: string; auth: 'key' | 'none'; parts: { entryId: string; event: WebhookEvent }[] }>();
    const add = (url: string, auth: 'key' | 'none', entry: PendingOutboxEntry, event: WebhookEvent) => {
      const id = `${url}\u0000${entry.key}\u0000${entry.seq}`;
      const batch = batches.get(id) ?? { url, auth, parts: [] };
      batch.parts.push({ entryId: entry.id, event });
      batches.set(id, batch);
    };
    for (const entry of entries) {
      const payload = entry.payload as WebhookOutboxPayload;
      if (keyUrl) add(keyUrl, 'key', entry, payload.event);
      if (payload.callbackUrl && payload.callbackUrl !== keyUrl) add(payload.callbackUrl, 'none', entry, payload.event);
    }
    const now = deps.clock.now();
    const failed = new Set<string>();
    await Promise.all(
      [...batches.values()].flatMap(({ url, auth, parts }) => {
        parts.sort((a, b) => (a.entryId < b.entryId ? -1 : a.entryId > b.entryId ? 1 : 0));
        return chunks(parts.length, WEBHOOK_BATCH_MAX_EVENTS).map(async ([from, to]) => {
          const chunk = parts.slice(from, to);
          const batch: WebhookBatch = {
            version: 1,
            kind: 'batch',
            merchantId: first.merchantId,
            keyId: first.keyId,
            url,
            auth,
            events: chunk.map((part) => part.event),
            dueAt: now,
          };
          await publishBatch(deps.transport, batch).catch((error: unknown) => {
            deps.onError?.(error);
            for (const part of chunk) failed.add(part.entryId);
          });
        });
      }),
    );
    return entries.map((entry) => entry.id).filter((id) => !failed.has(id));
  }

  return {
    async handle(entries) {
      const byKey = new Map<string, PendingOutboxEntry[]>();
      for (const entry of entries) {
        const payload = entry.payload as WebhookOutboxPayload;
        const key = `${payload.merchantId}\u0000${payload.keyId}`;
        const group = byKey.get(key) ?? [];
        group.push(entry);
        byKey.set(key, group);
      }
      const done = await Promise.all(
        [...byKey.values()].map((group) =>
          relayKey(group).catch((error: unknown): readonly string[] => {
            deps.onError?.(error);
            return [];
          }),
        ),
      );
      return done.flat();
    },
  };
}

/** [from, to) ranges of at most `size` over `length` items. */
function chunks(length: number, size: number): [number, number][] {
  const ranges: [number, number][] = [];
  for (let from = 0; from < length; from += size) ranges.push([from, Math.min(length, from + size)]);
  return ranges;
}
