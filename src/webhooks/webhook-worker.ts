import { secretContext, type ApiKeyReplies } from '../api-keys/api-key-behaviour.js';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { SecretBox } from '../libraries/secrets/secret-box.js';
import { toIsoUtc, type Clock } from '../libraries/clock/clock.js';
import { createExpiringCache } from '../libraries/clock/expiring-cache.js';
import { loggableUrl } from '../libraries/logger/loggable-url.js';
import type { Logger } from '../libraries/logger/logger.js';
import type { DeadLetters } from '../libraries/persistence/dead-letters-port.js';
import { WEBHOOKS_DURABLE, webhookSubject } from '../libraries/transport/nats-names.js';
import {
  ACK,
  DROP,
  retryAfter,
  type Consumer,
  type Delivery,
  type Disposition,
  type Transport,
} from '../libraries/transport/transport-port.js';
import { attemptOutcome, judgeAttempt, type AttemptResult } from './retry-plan.js';
import { isWebhookBatch, isWebhookJob, jobOfBatch, publishBatch, publishJob, type WebhookBatch, type WebhookJob } from './webhook-jobs.js';
import type { WebhookCredentials, WebhookSender } from './webhook-sender.js';
import { SecretUnreadableError } from '../libraries/errors/internal-errors.js';

export interface WebhookWorkerOptions {
  readonly transport: Transport;
  readonly router: ActorRouter;
  readonly sender: WebhookSender;
  readonly deadLetters: DeadLetters;
  readonly clock: Clock;
  /** Delays before each retry (the contract's 30 s, 2 min, 10 min, 1 h by default). */
  readonly retryDelaysMs: readonly number[];
  /** Opens the key's sealed Basic password and signing secret, only here where they are used. */
  readonly secrets: SecretBox;
  /** Deliveries in flight per merchant: one slow endpoint cannot take every worker. */
  readonly concurrencyPerMerchant: number;
  /** Deliveries in flight in this process. */
  readonly concurrency: number;
  /** One `warn` line per failed attempt (what follows it: the next attempt's time or the dead letter). */
  readonly logger: Logger;
  readonly onAttempt?: (outcome: { merchantId: string; verdict: string; seconds: number }) => void;
  readonly onError?: (error: unknown) => void;
  /**
   * Reads a key's webhook target from its actor, for credentials not cached here (by default one ask through the
   * router; in a cluster, batched per shard).
   */
  readonly webhookTarget?: (merchantId: string, keyId: string) => Promise<ApiKeyReplies['webhook_target']>;
}

type DeadLetterReason = 'rejected' | 'retries_exhausted' | 'refused_address';

/**
 * When a merchant is at its limit and its waiting places are taken, its job goes back to the broker for this
 * long, doubling with each delivery of the job up to BUSY_MERCHANT_MAX_DELAY_MS: a merchant with a long backlog keeps
 * its slots fed by the jobs fetched next, and the same job does not come back four times a second.
 */
const BUSY_MERCHANT_DELAY_MS = 250;
const BUSY_MERCHANT_MAX_DELAY_MS = 4_000;
const MIN_BUSY_DELAY_MS = 50;

export function busyMerchantDelayMs(deliveryCount: number): number {
  return Math.min(BUSY_MERCHANT_MAX_DELAY_MS, BUSY_MERCHANT_DELAY_MS * 2 ** Math.max(0, Math.min(deliveryCount - 1, 16)));
}
/**
 * Events that may wait here for a merchant's free slot, per slot (more go back to the broker): as many as its
 * recent pace delivers within WAITING_BUDGET_MS, from MIN to MAX_WAITING_PER_SLOT. A fast endpoint keeps its slots
 * fed from here, without its events bouncing off the broker's busy delay; a slow one holds only a few, and all of
 * them finish well inside the ack wait.
 */
const MIN_WAITING_PER_SLOT = 2;
const MAX_WAITING_PER_SLOT = 16;
const WAITING_BUDGET_MS = 5_000;

/** Each merchant's recent attempt duration (exponentially weighted), read by the slots to size its waiting room. */
export function createAttemptPace(options: { readonly limit: number; readonly weight?: number; readonly maxMerchants?: number }) {
  const weight = options.weight ?? 0.2;
  const recent = new Map<string, number>();
  return {
    record(merchantId: string, ms: number): void {
      const previous = recent.get(merchantId);
      if (previous === undefined && recent.size >= (options.maxMerchants ?? 10_000)) recent.clear();
      recent.set(merchantId, previous === undefined ? ms : previous + weight * (ms - previous));
    },
    /** The merchant's recent attempt duration in ms; undefined until one attempt finished. */
    paceOf: (merchantId: string): number | undefined => recent.get(merchantId),
    /** How many events may wait for this merchant's slots: a conservative few until its pace is known. */
    waitingFor(merchantId: string): number {
      const pace = recent.get(merchantId);
      const perSlot = pace === undefined ? MIN_WAITING_PER_SLOT : Math.floor(WAITING_BUDGET_MS / Math.max(pace, 1));
      return options.limit * Math.min(MAX_WAITING_PER_SLOT, Math.max(MIN_WAITING_PER_SLOT, perSlot));
    },
  };
}
/** The start of an attempt's error when the key's secrets could not be opened. */
export const SECRET_UNREADABLE = 'secret_unreadable' as const;

/** How long a key's webhook credentials are reused before asking its actor again. */
const CREDENTIALS_TTL_MS = 5_000;

const NO_CREDENTIALS: WebhookCredentials = { username: null, password: null, signingSecret: null };

/**
 * Delivers webhook jobs: one POST per attempt; any 2xx acknowledges, any 4xx ends it, everything else is retried
 * after the next delay as a new job (the broker holds it until due), and after the last retry the event is
 * recorded as dropped. The same event_id goes out on every attempt.
 */
export function createWebhookWorker(options: WebhookWorkerOptions) {
  const pace = createAttemptPace({ limit: options.concurrencyPerMerchant });
  const slots = createMerchantSlots(options.concurrencyPerMerchant, (merchantId) => pace.waitingFor(merchantId), WAITING_BUDGET_MS);
  const credentials = createExpiringCache<string, WebhookCredentials>({ clock: options.clock, ttlMs: CREDENTIALS_TTL_MS, max: 10_000 });
  let consumer: Consumer | null = null;
  const webhookTarget =
    options.webhookTarget ??
    ((merchantId: string, keyId: string) => options.router.apiKey(merchantId, keyId).ask({ type: 'webhook_target' }));

  async function credentialsFor(job: WebhookJob): Promise<WebhookCredentials> {
    if (job.auth === 'none') return NO_CREDENTIALS;
    const cached = credentials.get(job.keyId);
    if (cached) return cached;
    const reply = await webhookTarget(job.merchantId, job.keyId);
    const webhook = reply.ok ? reply.target.webhook : null;
    const password = webhook?.password ?? null;
    const signingSecret = reply.ok ? reply.target.signingSecret : null;
    const value: WebhookCredentials = reply.ok
      ? {
          username: webhook?.username ?? null,
          password: password === null ? null : options.secrets.open(password, secretContext.webhookPassword(job.keyId)),
          signingSecret: signingSecret === null ? null : options.secrets.open(signingSecret, secretContext.signingSecret(job.keyId)),
        }
      : NO_CREDENTIALS;
    credentials.set(job.keyId, value);
    return value;
  }

  /**
   * The line of a failed attempt: whose event, which attempt, how it ended and what follows. Never the credentials,
   * and the URL only as scheme://host[:port]/path (a merchant's URL may carry a token in its userinfo or query).
   */
  function logFailure(
    job: WebhookJob,
    result: AttemptResult,
    tookMs: number,
    next: { nextAttemptAt: number } | { deadLetter: DeadLetterReason },
  ): void {
    const line = {
      merchant_id: job.merchantId,
      message_id: job.event.message_id,
      event_id: job.event.event_id,
      event_type: job.event.event_type,
      attempt: job.attempt,
      outcome: attemptOutcome(result),
      target: job.auth === 'key' ? 'webhook_url' : 'callback_url',
      url: loggableUrl(job.url),
      duration_ms: tookMs,
    };
    if ('nextAttemptAt' in next)
      options.logger.warn({ ...line, next_attempt_at: toIsoUtc(next.nextAttemptAt) }, 'webhook attempt failed: retrying');
    else options.logger.warn({ ...line, dead_letter: next.deadLetter }, 'webhook attempt failed: event dead-lettered');
  }

  async function giveUp(job: WebhookJob, reason: DeadLetterReason, result: AttemptResult): Promise<void> {
    await options.deadLetters.record({
      id: job.jobId,
      eventId: job.event.event_id,
      merchantId: job.merchantId,
      keyId: job.keyId,
      url: job.url,
      auth: job.auth,
      event: job.event,
      attempts: job.attempt,
      reason,
      lastStatus: result.type === 'response' ? result.status : null,
      lastError: result.type === 'connection_error' ? result.reason : result.type === 'timeout' ? 'timeout' : null,
      droppedAt: options.clock.now(),
    });
  }

  async function deliver(job: WebhookJob): Promise<void> {
    const started = options.clock.now();
    const body = JSON.stringify(job.event);
    const credentials = await credentialsFor(job).catch((error: unknown) => {
      if (!(error instanceof SecretUnreadableError)) throw error;
      options.onError?.(error);
      return error;
    });
    // a secret no configured key opens: nothing goes out without its credentials; the attempt fails and follows the
    // retry plan (a node given the missing key in time delivers it; otherwise it ends among the dead letters)
    const result: AttemptResult =
      credentials instanceof SecretUnreadableError
        ? { type: 'connection_error', kind: SECRET_UNREADABLE, reason: `${SECRET_UNREADABLE}: ${credentials.message}` }
        : await options.sender.send(job.url, body, credentials, started);
    const refused = result.type === 'connection_error' && result.kind === 'refused_address';
    const verdict = refused ? ({ verdict: 'dropped' } as const) : judgeAttempt(result, job.attempt, options.retryDelaysMs);
    const tookMs = options.clock.now() - started;
    pace.record(job.merchantId, tookMs);
    options.onAttempt?.({ merchantId: job.merchantId, verdict: verdict.verdict, seconds: tookMs / 1000 });
    // the line comes before what follows is carried out: if that fails, the delivery comes back and this attempt is
    // made (and logged) again
    switch (verdict.verdict) {
      case 'acknowledged':
        return;
      case 'rejected':
        logFailure(job, result, tookMs, { deadLetter: 'rejected' });
        await giveUp(job, 'rejected', result);
        return;
      case 'dropped': {
        const reason = refused ? 'refused_address' : 'retries_exhausted';
        logFailure(job, result, tookMs, { deadLetter: reason });
        await giveUp(job, reason, result);
        return;
      }
      case 'retry': {
        const dueAt = options.clock.now() + verdict.delayMs;
        logFailure(job, result, tookMs, { nextAttemptAt: dueAt });
        await publishJob(options.transport, { ...job, attempt: job.attempt + 1, dueAt });
        return;
      }
    }
  }

  /**
   * A batch's events are taken as far as the merchant has room (slots plus its waiting places, sized by its pace);
   * the rest go back to the broker first, as a smaller batch, so no event held here waits much longer than
   * WAITING_BUDGET_MS (well inside the ack wait). Each taken event is then delivered like a job of its own.
   */
  async function handleBatch(delivery: Delivery, batch: WebhookBatch): Promise<Disposition> {
    const wait = batch.dueAt - options.clock.now();
    if (wait > 5) return retryAfter(wait);
    const room = slots.room(batch.merchantId);
    if (room <= 0) return retryAfter(busyDelay(batch.merchantId, delivery.deliveryCount));
    // the slots are reserved before anything is awaited: batches handled at the same time each see the room the
    // others left, and none takes events it then has to send back one by one
    const taken = batch.events.slice(0, room).map((event) => ({ job: jobOfBatch(batch, event), slot: slots.acquire(batch.merchantId) }));
    if (room < batch.events.length) {
      try {
        await publishBatch(options.transport, { ...batch, events: batch.events.slice(room) });
      } catch (error) {
        options.onError?.(error);
        for (const { slot } of taken) void slot.then((release) => release?.());
        return retryAfter(1_000);
      }
    }
    // one event with the slot it got: delivered like a job of its own, or back to the broker on its own when the
    // room counted above was taken meanwhile (no slot) or the attempt could not be completed (delivered or not)
    const settle = async (job: WebhookJob, release: (() => void) | null): Promise<void> => {
      if (release) {
        try {
          await deliver(job);
          return;
        } catch (error) {
          options.onError?.(error);
        } finally {
          release();
        }
      }
      await publishJob(options.transport, job, `${job.jobId}:1:requeued`);
    };
    const outcomes = await Promise.all(
      taken.map(async ({ job, slot }) =>
        settle(job, await slot).then(
          () => true,
          () => false,
        ),
      ),
    );
    // an event neither settled nor requeued (the broker unreachable): the whole batch comes back
    return outcomes.every(Boolean) ? ACK : retryAfter(1_000);
  }

  /**
   * How long a delivery finding its merchant full goes back to the broker: the busy schedule, shortened to the time
   * the merchant's pace needs to clear what it holds now (at least MIN_BUSY_DELAY_MS), so that nothing waits out a
   * long delay at the end of a burst while the endpoint has long become idle.
   */
  function busyDelay(merchantId: string, deliveryCount: number): number {
    const paceMs = pace.paceOf(merchantId);
    const schedule = busyMerchantDelayMs(deliveryCount);
    if (paceMs === undefined) return schedule;
    const holding = slots.inUse(merchantId) + slots.waiting(merchantId);
    const clearMs = Math.ceil(holding / options.concurrencyPerMerchant) * paceMs;
    return Math.min(schedule, Math.max(MIN_BUSY_DELAY_MS, Math.round(clearMs)));
  }

  /**
   * Deliveries (job or batch messages) of one merchant in hand at once, whatever they carry: 3 per slot, and never
   * more than half of the consumer's places (but at least its slots), so a merchant whose endpoint hangs leaves at
   * least half of the node's deliveries to everyone else.
   */
  const maxHeld = Math.max(
    options.concurrencyPerMerchant,
    Math.min(options.concurrencyPerMerchant * (1 + MIN_WAITING_PER_SLOT), Math.floor(options.concurrency / 2)),
  );
  const held = new Map<string, number>();

  async function handle(delivery: Delivery): Promise<Disposition> {
    const payload = delivery.payload;
    const work = isWebhookBatch(payload)
      ? { merchantId: payload.merchantId, run: () => handleBatch(delivery, payload) }
      : isWebhookJob(payload)
        ? { merchantId: payload.merchantId, run: () => handleJob(delivery, payload) }
        : null;
    if (!work) {
      options.onError?.(new Error(`malformed webhook job ${delivery.id}`));
      return DROP;
    }
    const { merchantId } = work;
    const holding = held.get(merchantId) ?? 0;
    if (holding >= maxHeld) return retryAfter(busyDelay(merchantId, delivery.deliveryCount));
    held.set(merchantId, holding + 1);
    try {
      return await work.run();
    } finally {
      const left = (held.get(merchantId) ?? 1) - 1;
      if (left <= 0) held.delete(merchantId);
      else held.set(merchantId, left);
    }
  }

  async function handleJob(delivery: Delivery, job: WebhookJob): Promise<Disposition> {
    const wait = job.dueAt - options.clock.now();
    if (wait > 5) return retryAfter(wait);
    // a merchant at its limit: wait for its next free slot if few already wait, otherwise back to the broker
    const release = await slots.acquire(job.merchantId);
    if (!release) return retryAfter(busyDelay(job.merchantId, delivery.deliveryCount));
    try {
      await deliver(job);
      return ACK;
    } catch (error) {
      options.onError?.(error);
      return retryAfter(1_000);
    } finally {
      release();
    }
  }

  return {
    async start(): Promise<void> {
      consumer = await options.transport.consume({
        stream: 'webhooks',
        filter: webhookSubject('>'),
        durable: WEBHOOKS_DURABLE,
        concurrency: options.concurrency,
        // an attempt takes at most the endpoint timeout; this only covers a worker that died mid-attempt
        ackWaitMs: 30_000,
        // every job waiting for its retry time or for its busy merchant is unsettled on the broker: with a bound,
        // one dead endpoint's backlog would stop every merchant's deliveries
        unboundedRetries: true,
        handler: handle,
      });
    },
    async stop(): Promise<void> {
      await consumer?.stop();
      consumer = null;
    },
  };
}

/**
 * Per-merchant delivery slots: at most `limit` deliveries at once per merchant, and at most `waiting` jobs waiting
 * here for one (a number, or one per merchant); a job beyond that is refused (null) and goes back to the broker, so
 * a slow merchant can only hold a bounded share of the worker. A job that has waited `maxWaitMs` without a slot is
 * refused too: what a node holds for a merchant whose endpoint suddenly hangs goes back long before its ack wait.
 */
export function createMerchantSlots(
  limit: number,
  waiting: number | ((merchantId: string) => number),
  maxWaitMs = Number.POSITIVE_INFINITY,
) {
  const waitingFor = typeof waiting === 'number' ? () => waiting : waiting;
  const busy = new Map<string, number>();
  const queues = new Map<string, (() => void)[]>();

  function release(merchantId: string): void {
    const queue = queues.get(merchantId);
    const next = queue?.shift();
    if (queue?.length === 0) queues.delete(merchantId);
    // the slot passes from the finishing delivery straight to a waiting one (busy stays the same)
    if (next) {
      next();
      return;
    }
    const left = (busy.get(merchantId) ?? 1) - 1;
    if (left <= 0) busy.delete(merchantId);
    else busy.set(merchantId, left);
  }

  return {
    /** Resolves with the slot's release function, or null when the merchant is full and so is its queue (or the wait ran out). */
    acquire(merchantId: string): Promise<(() => void) | null> {
      const done = () => {
        release(merchantId);
      };
      const inUse = busy.get(merchantId) ?? 0;
      if (inUse < limit) {
        busy.set(merchantId, inUse + 1);
        return Promise.resolve(done);
      }
      const queue = queues.get(merchantId) ?? [];
      if (queue.length >= waitingFor(merchantId)) return Promise.resolve(null);
      queues.set(merchantId, queue);
      return new Promise((resolve) => {
        const granted = (): void => {
          if (timer) clearTimeout(timer);
          resolve(done);
        };
        const timer = Number.isFinite(maxWaitMs)
          ? setTimeout(() => {
              const index = queue.indexOf(granted);
              if (index < 0) return;
              queue.splice(index, 1);
              if (queue.length === 0 && queues.get(merchantId) === queue) queues.delete(merchantId);
              resolve(null);
            }, maxWaitMs)
          : null;
        queue.push(granted);
      });
    },
    /** Deliveries that would be admitted now (started or waiting) before the merchant refuses. */
    room: (merchantId: string) => limit + waitingFor(merchantId) - (busy.get(merchantId) ?? 0) - (queues.get(merchantId)?.length ?? 0),
    inUse: (merchantId: string) => busy.get(merchantId) ?? 0,
    waiting: (merchantId: string) => queues.get(merchantId)?.length ?? 0,
  };
}

/** Operator replay of a dropped event: a fresh first attempt to the same URL. */
export async function replayDeadLetter(
  deps: { transport: Transport; deadLetters: DeadLetters; clock: Clock },
  id: string,
): Promise<boolean> {
  const letter = await deps.deadLetters.take(id);
  if (!letter) return false;
  const now = deps.clock.now();
  const job: WebhookJob = {
    version: 1,
    jobId: letter.id,
    merchantId: letter.merchantId,
    keyId: letter.keyId,
    url: letter.url,
    auth: letter.auth,
    event: letter.event as WebhookJob['event'],
    attempt: 1,
    dueAt: now,
  };
  await publishJob(deps.transport, job, `${job.jobId}:replay:${now}`);
  return true;
}
