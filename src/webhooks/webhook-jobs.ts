import { createHash } from 'node:crypto';
import { LRUCache } from 'lru-cache';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { EffectOf } from '../libraries/actors/behaviour.js';
import type { HandledInPart, RelayedEntry, TopicHandler } from '../libraries/persistence/outbox-relay.js';
import { isNullableText, isRecord, isText } from '../libraries/validation/guards.js';
import { webhookSubject } from '../libraries/transport/nats-names.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { Clock } from '../libraries/clock/clock.js';
import { isWebhookEvent, type WebhookEvent } from './event-envelope.js';

/** Outbox topic of a message's webhook events (carried out by createWebhookRelay). */
export const WEBHOOK_TOPIC = 'webhook.event';

/** Whose events they are and where they go besides the key's webhook. */
interface WebhookOrigin {
  readonly merchantId: string;
  readonly keyId: string;
  readonly callbackUrl: string | null;
}

/**
 * Payload of a `webhook.event` outbox entry: the events one journal record of a message yields, in order, stored as
 * one entry (one row) instead of one per event. The entry's id is its first event's id.
 */
export interface WebhookEventsPayload extends WebhookOrigin {
  readonly events: readonly [WebhookEvent, ...WebhookEvent[]];
}

/**
 * One event per entry: how entries were written before a record's events were stored together. Still read, so that
 * entries pending when a node is upgraded go out; never written.
 */
export interface SingleWebhookEventPayload extends WebhookOrigin {
  readonly event: WebhookEvent;
}

export type WebhookOutboxPayload = WebhookEventsPayload | SingleWebhookEventPayload;

export type WebhookEffect = EffectOf<typeof WEBHOOK_TOPIC, WebhookOutboxPayload>;

/** The events an entry carries, in order. */
export function eventsOf(payload: WebhookOutboxPayload): readonly WebhookEvent[] {
  return 'events' in payload ? payload.events : [payload.event];
}

/** The entry holding `events` (at least one) of a message for `origin`. */
export function webhookEventsEffect(origin: WebhookOrigin, events: readonly [WebhookEvent, ...WebhookEvent[]]): WebhookEffect {
  const payload: WebhookEventsPayload = { merchantId: origin.merchantId, keyId: origin.keyId, callbackUrl: origin.callbackUrl, events };
  return { id: events[0].event_id, topic: WEBHOOK_TOPIC, payload };
}

/**
 * The effects of one journal record with its webhook entries merged: one entry per origin holding all their events,
 * in order, where the first of them stood. Every other effect is left as and where it is.
 */
export function mergeWebhookEffects<F extends { readonly topic: string }>(effects: readonly F[]): (F | WebhookEffect)[] {
  const isWebhook = (effect: F | WebhookEffect): effect is WebhookEffect => effect.topic === WEBHOOK_TOPIC;
  // most records hold one webhook entry or none: left as they are without building anything
  let webhooks = 0;
  for (const effect of effects) if (isWebhook(effect)) webhooks++;
  if (webhooks < 2) return [...effects];
  const merged: (F | WebhookEffect)[] = [];
  const byOrigin = new Map<string, { index: number; origin: WebhookOrigin; events: WebhookEvent[] }>();
  for (const effect of effects) {
    if (!isWebhook(effect)) {
      merged.push(effect);
      continue;
    }
    const { merchantId, keyId, callbackUrl } = effect.payload;
    const originKey = `${merchantId}\u0000${keyId}\u0000${callbackUrl ?? ''}`;
    const group = byOrigin.get(originKey);
    if (group) group.events.push(...eventsOf(effect.payload));
    else {
      byOrigin.set(originKey, { index: merged.length, origin: effect.payload, events: [...eventsOf(effect.payload)] });
      merged.push(effect);
    }
  }
  for (const { index, origin, events } of byOrigin.values()) {
    const [first, ...rest] = events;
    if (first && rest.length > 0) merged[index] = webhookEventsEffect(origin, [first, ...rest]);
  }
  return merged;
}

/** A `webhook.event` payload read back from the outbox (either shape). */
export function isWebhookOutboxPayload(value: unknown): value is WebhookOutboxPayload {
  if (!isRecord(value) || !isText(value.merchantId) || !isText(value.keyId) || !isNullableText(value.callbackUrl)) return false;
  if ('events' in value) {
    const events = value.events;
    return Array.isArray(events) && events.length > 0 && events.every(isWebhookEvent);
  }
  return isWebhookEvent(value.event);
}

/** Where and whose: what every webhook job message carries. */
interface WebhookDestination {
  readonly version: 1;
  readonly merchantId: string;
  readonly keyId: string;
  readonly url: string;
  /** `key`: the key's webhook (Basic credentials and signing apply); `none`: a per-request callback_url. */
  readonly auth: 'key' | 'none';
  /** Not before this instant (ms). */
  readonly dueAt: number;
}

/** One event to one URL, on `webhook.jobs.<merchantId>`; a retry is a new job with the next attempt number. */
export interface WebhookJob extends WebhookDestination {
  /** `<event_id>:<hash of the URL>`: the same on every attempt. */
  readonly jobId: string;
  readonly event: WebhookEvent;
  /** 1 for the first delivery. */
  readonly attempt: number;
}

/** Digests of the URLs jobs went to lately: a merchant's URLs are few, its events many. */
const urlDigests = new LRUCache<string, string>({ max: 4_096 });

export function jobId(eventId: string, url: string): string {
  let digest = urlDigests.get(url);
  if (digest === undefined) {
    digest = createHash('sha256').update(url).digest('hex').slice(0, 16);
    urlDigests.set(url, digest);
  }
  return `${eventId}:${digest}`;
}

export async function publishJob(transport: Transport, job: WebhookJob, publishId?: string): Promise<void> {
  await transport.publish(webhookSubject(job.merchantId), job, { id: publishId ?? `${job.jobId}:${job.attempt}` });
}

function isDestination(value: unknown): value is WebhookDestination & Record<string, unknown> {
  return (
    isRecord(value) &&
    value.version === 1 &&
    typeof value.merchantId === 'string' &&
    typeof value.keyId === 'string' &&
    typeof value.url === 'string' &&
    (value.auth === 'key' || value.auth === 'none') &&
    typeof value.dueAt === 'number'
  );
}

export function isWebhookJob(value: unknown): value is WebhookJob {
  return isDestination(value) && typeof value.jobId === 'string' && typeof value.attempt === 'number' && typeof value.event === 'object';
}

/**
 * First attempts of several events to one URL, published together by the relay (one NATS message instead of one per
 * event). The worker delivers each event on its own; an event that needs a retry continues as a `WebhookJob`.
 */
export interface WebhookBatch extends WebhookDestination {
  readonly kind: 'batch';
  readonly events: readonly WebhookEvent[];
}

/** Events per batch: about one merchant's worth of delivery slots. */
export const WEBHOOK_BATCH_MAX_EVENTS = 64;

export function isWebhookBatch(value: unknown): value is WebhookBatch {
  if (!isDestination(value)) return false;
  const events = value.events;
  return (
    value.kind === 'batch' &&
    Array.isArray(events) &&
    events.length > 0 &&
    events.every((event: unknown) => typeof event === 'object' && event !== null)
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
 * The webhook worker of this node, offered each batch before it is published: it may make the batch's first attempts
 * at once, here, instead of through the broker. `take` answers null when it declines (the batch is then published),
 * or a promise that resolves once every event of the batch is settled, acknowledged, retried as a job on the broker
 * or dead-lettered (true), or that one could not be (false). It never rejects.
 */
export interface FirstAttempts {
  take(batch: WebhookBatch): Promise<boolean> | null;
}

/**
 * Which way a batch went: `in_process` when this node's worker took it (its first attempts made here, at once),
 * `published` when it was published on the webhook stream for whichever node's worker to take.
 */
export type WebhookBatchPath = 'in_process' | 'published';

/** A batch that went one way or the other, and how many events it carries. */
export interface WebhookBatchSample {
  readonly path: WebhookBatchPath;
  readonly events: number;
}

/** A key's entries: those done now, and those whose batches were taken on this node, with their outcome to come. */
interface KeyRelayed {
  readonly done: readonly string[];
  readonly awaiting: readonly string[];
  readonly later: Promise<readonly string[]> | null;
}

/**
 * Outbox `webhook.event` → the key's webhook_url (resolved now, once per key and pass) and each message's
 * callback_url; each event once per distinct URL, the events of one journal record to the same URL in batches. An
 * event with neither URL goes nowhere and is done. Each batch is offered to `firstAttempts` (this node's worker), and
 * published when it declines; `onBatch` hears which way each went. An entry is done when every batch holding it was
 * published, or taken and settled: an entry with a taken batch stays pending (in flight) until then, so a crash
 * meanwhile makes the attempts again.
 */
export function createWebhookRelay(deps: {
  router: ActorRouter;
  transport: Transport;
  clock: Clock;
  /** First attempts made on this node when its worker can take them at once (see FirstAttempts). */
  firstAttempts?: FirstAttempts;
  /** A key's entries that could not be carried out this pass (they stay pending for the next). */
  onError?: (error: unknown) => void;
  /**
   * Each batch once it went its way: taken by `firstAttempts`, or published. A batch that could not be published is
   * not counted (its entries stay pending, and a later pass forms and counts it again).
   */
  onBatch?: (sample: WebhookBatchSample) => void;
}): TopicHandler<WebhookOutboxPayload> {
  type Entry = RelayedEntry<WebhookOutboxPayload>;
  async function relayKey(entries: NonEmpty<Entry>): Promise<KeyRelayed> {
    const first = entries[0].payload;
    const target = await deps.router.apiKey(first.merchantId, first.keyId).ask({ type: 'webhook_target' });
    const keyUrl = target.ok ? (target.target.webhook?.url ?? null) : null;
    const parts: { url: string; auth: 'key' | 'none'; entry: Entry; event: WebhookEvent }[] = [];
    for (const entry of entries) {
      const { callbackUrl } = entry.payload;
      for (const event of eventsOf(entry.payload)) {
        if (keyUrl) parts.push({ url: keyUrl, auth: 'key', entry, event });
        if (callbackUrl && callbackUrl !== keyUrl) parts.push({ url: callbackUrl, auth: 'none', entry, event });
      }
    }
    // a batch holds the events of one journal record to one URL, in entry order: whichever pass carries the same
    // entries out (the append's notice, a poll, a retry after a publish timed out), it forms the same batches with
    // the same publish ids, and the broker keeps one of each
    const batches = [...groupBy(parts, (part) => `${part.url}\u0000${part.entry.key}\u0000${part.entry.seq}`).values()].flatMap((group) =>
      chunk(
        group.sort((a, b) => (a.entry.id < b.entry.id ? -1 : a.entry.id > b.entry.id ? 1 : 0)),
        WEBHOOK_BATCH_MAX_EVENTS,
      ),
    );
    const now = deps.clock.now();
    const failed = new Set<string>();
    // entry id → the settling of each of its batches taken on this node
    const taken = new Map<string, Set<Promise<boolean>>>();
    await Promise.all(
      batches.map(async (batch) => {
        const { url, auth } = batch[0];
        const message: WebhookBatch = {
          version: 1,
          kind: 'batch',
          merchantId: first.merchantId,
          keyId: first.keyId,
          url,
          auth,
          events: batch.map((part) => part.event),
          dueAt: now,
        };
        const settling = deps.firstAttempts?.take(message) ?? null;
        if (settling) {
          for (const part of batch) {
            const settlings = taken.get(part.entry.id) ?? new Set<Promise<boolean>>();
            taken.set(part.entry.id, settlings.add(settling));
          }
          deps.onBatch?.({ path: 'in_process', events: message.events.length });
          return;
        }
        const published = await publishBatch(deps.transport, message).then(
          () => true,
          (error: unknown) => {
            deps.onError?.(error);
            for (const part of batch) failed.add(part.entry.id);
            return false;
          },
        );
        if (published) deps.onBatch?.({ path: 'published', events: message.events.length });
      }),
    );
    // an entry with a taken batch waits for it even when another of its batches could not be published (it is then
    // not done, but no pass carries it out again while its attempts are still being made here)
    const ids = entries.map((entry) => entry.id);
    const awaiting = ids.filter((id) => taken.has(id));
    const done = ids.filter((id) => !failed.has(id) && !taken.has(id));
    if (awaiting.length === 0) return { done, awaiting, later: null };
    const settledIds = async (id: string): Promise<string[]> =>
      (await Promise.all([...(taken.get(id) ?? [])])).every(Boolean) && !failed.has(id) ? [id] : [];
    const later = Promise.all(awaiting.map(settledIds)).then((settled) => settled.flat());
    return { done, awaiting, later };
  }

  return {
    accepts: isWebhookOutboxPayload,
    async handle(entries): Promise<readonly string[] | HandledInPart> {
      const byKey = groupBy(entries, (entry) => {
        const { merchantId, keyId } = entry.payload;
        return `${merchantId}\u0000${keyId}`;
      });
      const relayed = await Promise.all(
        [...byKey.values()].map((group) =>
          relayKey(group).catch((error: unknown): KeyRelayed => {
            deps.onError?.(error);
            return { done: [], awaiting: [], later: null };
          }),
        ),
      );
      const done = relayed.flatMap((key) => key.done);
      const later = relayed.flatMap((key) => (key.later ? [key.later] : []));
      if (later.length === 0) return done;
      return {
        done,
        awaiting: relayed.flatMap((key) => key.awaiting),
        later: Promise.all(later).then((ids) => ids.flat()),
      };
    },
  };
}

type NonEmpty<T> = [T, ...T[]];

function groupBy<T>(items: readonly T[], keyOf: (item: T) => string): Map<string, NonEmpty<T>> {
  const groups = new Map<string, NonEmpty<T>>();
  for (const item of items) {
    const key = keyOf(item);
    const group = groups.get(key);
    if (group) group.push(item);
    else groups.set(key, [item]);
  }
  return groups;
}

function chunk<T>(items: readonly T[], size: number): NonEmpty<T>[] {
  const chunks: NonEmpty<T>[] = [];
  for (let from = 0; from < items.length; from += size) chunks.push(items.slice(from, from + size) as NonEmpty<T>);
  return chunks;
}
