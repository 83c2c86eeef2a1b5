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
  type WebhookBatch,
  type WebhookJob,
} from '../../webhooks/webhook-jobs.js';

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
