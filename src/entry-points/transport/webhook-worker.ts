import { WEBHOOKS_DURABLE, webhookSubject } from '../../libraries/transport/nats-names.js';
import { ACK, DROP, retryAfter, type Consumer, type Delivery, type Disposition } from '../../libraries/transport/transport-port.js';
import {
  busyMerchantDelayMs,
  createAttemptPace,
  createMerchantSlots,
  MIN_BUSY_DELAY_MS,
  MIN_WAITING_PER_SLOT,
  WAITING_BUDGET_MS,
} from '../../webhooks/merchant-slots.js';
import { createWebhookDelivery, type WebhookDeliveryOptions } from '../../webhooks/webhook-delivery.js';
import {
  isWebhookBatch,
  isWebhookJob,
  jobOfBatch,
  publishBatch,
  publishJob,
  type FirstAttempts,
  type WebhookBatch,
  type WebhookJob,
} from '../../webhooks/webhook-jobs.js';

/**
 * A merchant whose recent attempts took at most this long (its pace) counts as quick: the relay's batches for it are
 * attempted here at once instead of through the broker. A quarter of a second: such an entry is settled long before
 * the relay's poll would look at it (FRESH_ENTRY_MS), and only endpoints that free their slots quickly are driven
 * from the relay; a slower one (or one not heard from yet) keeps the broker's path, with its waiting room.
 */
export const QUICK_PACE_MS = 250;

export interface WebhookWorkerOptions extends Omit<WebhookDeliveryOptions, 'pace'> {
  /** Deliveries in flight per merchant: one slow endpoint cannot take every worker. */
  readonly concurrencyPerMerchant: number;
  /** Deliveries in flight in this process. */
  readonly concurrency: number;
}

/**
 * The `webhooks` stream's consumer: takes each job or batch as far as its merchant has room, has every taken event
 * delivered (one attempt, see createWebhookDelivery) and acknowledges, or sends what it cannot take back to the
 * broker for later.
 */
export function createWebhookWorker(options: WebhookWorkerOptions) {
  const pace = createAttemptPace({ limit: options.concurrencyPerMerchant });
  const slots = createMerchantSlots(options.concurrencyPerMerchant, (merchantId) => pace.waitingFor(merchantId), WAITING_BUDGET_MS);
  const { deliver } = createWebhookDelivery({ ...options, pace });
  let consumer: Consumer | null = null;
  /** Events being attempted for the relay (outside the consumer's places), at most `concurrency`. */
  let takenFromRelay = 0;

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
    const outcomes = await Promise.all(taken.map(async ({ job, slot }) => settle(job, await slot)));
    // an event neither settled nor requeued (the broker unreachable): the whole batch comes back
    return outcomes.every(Boolean) ? ACK : retryAfter(1_000);
  }

  /**
   * One event with the slot it got: delivered like a job of its own, or back to the broker on its own when the room
   * counted for it was taken meanwhile (no slot) or the attempt could not be completed (delivered or not). True once
   * the event is settled (acknowledged, retried as a job, dead-lettered or requeued); false when not even the
   * requeue could be published.
   */
  async function settle(job: WebhookJob, release: (() => void) | null): Promise<boolean> {
    if (release) {
      try {
        await deliver(job);
        return true;
      } catch (error) {
        options.onError?.(error);
      } finally {
        release();
      }
    }
    return publishJob(options.transport, job, `${job.jobId}:1:requeued`).then(
      () => true,
      () => false,
    );
  }

  /**
   * The relay's offer of a batch's first attempts: taken here, at once, only when nothing would wait. The worker is
   * running (not stopping), the batch is due, the merchant is quick (its pace known and at most QUICK_PACE_MS) and
   * has a free slot for every event now, and this node's attempts for the relay stay within `concurrency`.
   * Otherwise null: the relay publishes the batch and the broker's path takes it as before.
   */
  const firstAttempts: FirstAttempts = {
    take(batch) {
      if (!consumer || batch.dueAt - options.clock.now() > 5) return null;
      const paceMs = pace.paceOf(batch.merchantId);
      if (paceMs === undefined || paceMs > QUICK_PACE_MS) return null;
      const count = batch.events.length;
      if (slots.free(batch.merchantId) < count || takenFromRelay + count > options.concurrency) return null;
      const releases = batch.events.map(() => slots.takeFree(batch.merchantId));
      takenFromRelay += count;
      const settled = Promise.all(batch.events.map((event, i) => settle(jobOfBatch(batch, event), releases[i] ?? null)));
      return settled
        .then(
          (outcomes) => outcomes.every(Boolean),
          () => false,
        )
        .finally(() => {
          takenFromRelay -= count;
        });
    },
  };

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
    firstAttempts,
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
    /** Takes no more first attempts from the relay (those in hand go on; the relay waits for them). */
    async stop(): Promise<void> {
      const stopping = consumer;
      consumer = null;
      await stopping?.stop();
    },
  };
}
