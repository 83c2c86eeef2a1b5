import { createHash } from 'node:crypto';
import { systemClock, toIsoUtc, type Clock } from '../../libraries/clock/clock.js';
import { connectorDurable, dispatchSubject, receiptSubject } from '../../libraries/transport/nats-names.js';
import {
  ACK,
  DROP,
  retryAfter,
  type Consumer,
  type Delivery,
  type Disposition,
  type Transport,
} from '../../libraries/transport/transport-port.js';
import {
  CARRIER_SLUG,
  checkDispatchJob,
  knownDispatchFields,
  checkReceipt,
  RECEIPT_BATCH_MAX,
  type DispatchJob,
  type Receipt,
  type ReceiptBatch,
} from '../carrier-protocol.js';
import { planFor, type PlannedReceipt, type SimulatorDelays } from './simulator-outcomes.js';

/**
 * The sandbox carrier: a connector written against docs/carrier-protocol.md like any third party's, whose carrier
 * is a table of outcomes (simulator-outcomes.ts) played back with timers.
 */

export interface SimulatorConnectorOptions {
  readonly transport: Transport;
  readonly delays: SimulatorDelays;
  /** Carrier slug: consumes `sms.dispatch.<carrier>`, publishes `sms.receipts.<carrier>`. */
  readonly carrier?: string;
  /** Source of `occurred_at` (the time the job was taken, plus the plan's offsets). */
  readonly clock?: Clock;
  /** Problems handled here but worth a log line: an invalid job, a receipt that failed to publish. */
  readonly onError?: (error: unknown, context: string) => void;
  /** Jobs handled at once. */
  readonly concurrency?: number;
  /** How many dispatch ids are remembered for at-most-once sending (oldest forgotten first). */
  readonly memoryLimit?: number;
  /**
   * Most receipts in one NATS message (docs/carrier-protocol.md, "Batches"). Receipts falling due together travel
   * as one batch; 1 publishes every receipt on its own, as a connector that does not batch would.
   */
  readonly receiptBatchMax?: number;
  /**
   * How long the first receipt to fall due while the publisher is idle waits for others before it leaves (0: only
   * those falling due in the same turn of the event loop). At a light load each receipt would otherwise travel alone,
   * and every NATS message costs the stream, the node that consumes it and its journal write about as much whatever
   * it holds. A full batch leaves at once, and receipts falling due while a publish is under way never wait: they
   * leave with the next publish, as without a linger. Nothing waits on a receipt here (the dispatch was acknowledged
   * when taken), so the wait only delays the receipts.
   */
  readonly receiptLingerMs?: number;
  /** Told of every valid job delivered: `taken` when it goes to the carrier, false when it was taken before. */
  readonly onDelivery?: (dispatchId: string, taken: boolean) => void;
}

export interface SimulatorConnector {
  start(): Promise<void>;
  /** Stops taking jobs, then waits for the receipts already planned (bounded) so a graceful stop loses nothing. */
  stop(): Promise<void>;
  /** How many times each valid job was delivered to this connector (redeliveries included); each was sent once. */
  dispatchesSeen(): ReadonlyMap<string, number>;
}

export const SIMULATOR_CONCURRENCY = 64;
export const SIMULATOR_ACK_WAIT_MS = 30_000;
export const DEFAULT_MEMORY_LIMIT = 1_000_000;
/** stop() waits at least this long for publishes in flight, even when every planned delay is 0. */
export const STOP_GRACE_FLOOR_MS = 1_000;
export const PUBLISH_ATTEMPTS = 5;
export const PUBLISH_RETRY_DELAY_MS = 200;
export const DEFAULT_RECEIPT_BATCH_MAX = 100;
/** The longest a receipt may wait for company (the configuration's bound too): a sandbox receipt is never held long. */
export const RECEIPT_LINGER_MAX_MS = 1_000;

type Timer = ReturnType<typeof setTimeout>;

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

export function createSimulatorConnector(options: SimulatorConnectorOptions): SimulatorConnector {
  const carrier = options.carrier ?? 'simulator';
  if (!CARRIER_SLUG.test(carrier)) throw new Error(`invalid carrier slug: ${JSON.stringify(carrier)}`);
  const clock = options.clock ?? systemClock;
  const onError = options.onError ?? (() => undefined);
  const memoryLimit = options.memoryLimit ?? DEFAULT_MEMORY_LIMIT;
  const batchMax = options.receiptBatchMax ?? DEFAULT_RECEIPT_BATCH_MAX;
  if (!Number.isInteger(batchMax) || batchMax < 1 || batchMax > RECEIPT_BATCH_MAX) {
    throw new Error(`receiptBatchMax must be an integer from 1 to ${RECEIPT_BATCH_MAX}, got ${batchMax}`);
  }
  const lingerMs = options.receiptLingerMs ?? 0;
  if (!Number.isInteger(lingerMs) || lingerMs < 0 || lingerMs > RECEIPT_LINGER_MAX_MS) {
    throw new Error(`receiptLingerMs must be an integer from 0 to ${RECEIPT_LINGER_MAX_MS}, got ${lingerMs}`);
  }

  /** dispatch id → deliveries seen; presence means the dispatch was taken (sent to the simulated carrier). */
  const seen = new Map<string, number>();
  /** Receipts waiting for their time → their planned delay. */
  const scheduled = new Map<Timer, number>();
  /** Receipts whose time has come, in that order, waiting for the publisher. */
  let due: Receipt[] = [];
  /** The publisher: one NATS message in flight at a time, so receipts reach the stream in the order they fell due. */
  let publisher: Promise<void> | null = null;
  /** Ends the publisher's linger now (a batch filled up, or the connector is stopping); null when not lingering. */
  let endLinger: (() => void) | null = null;
  /** Receipts in the NATS message being published. */
  let inFlight = 0;
  let idleWaiters: (() => void)[] = [];
  let consumer: Consumer | null = null;
  let state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  let abandoned = false;

  function checkIdle(): void {
    if (scheduled.size > 0 || due.length > 0 || publisher) return;
    const waiters = idleWaiters;
    idleWaiters = [];
    for (const wake of waiters) wake();
  }

  function whenIdle(): Promise<void> {
    return new Promise((resolve) => {
      idleWaiters.push(resolve);
      checkIdle();
    });
  }

  function remember(dispatchId: string): void {
    seen.set(dispatchId, 1);
    if (seen.size > memoryLimit) {
      const oldest = seen.keys().next().value;
      if (oldest !== undefined) seen.delete(oldest);
    }
  }

  /** One receipt on its own, or a batch under an id made of its receipts' ids (the same batch, the same id). */
  function message(receipts: readonly Receipt[]): { payload: Receipt | ReceiptBatch; id: string; label: string } {
    const [first] = receipts;
    if (receipts.length === 1 && first) return { payload: first, id: first.receipt_id, label: `receipt ${first.receipt_id}` };
    const batchId = `batch:${createHash('sha256')
      .update(receipts.map((r) => r.receipt_id).join('\n'))
      .digest('hex')}`;
    return {
      payload: { version: 1, batch_id: batchId, receipts },
      id: batchId,
      label: `receipt batch ${batchId} (${receipts.length} receipts)`,
    };
  }

  async function publish(receipts: readonly Receipt[]): Promise<void> {
    const { payload, id, label } = message(receipts);
    for (let attempt = 1; ; attempt++) {
      if (abandoned) return;
      try {
        await options.transport.publish(receiptSubject(carrier), payload, { id });
        return;
      } catch (error) {
        if (attempt >= PUBLISH_ATTEMPTS) {
          onError(error, `${label} not published after ${attempt} attempts`);
          return;
        }
        onError(error, `${label} publish failed (attempt ${attempt}), retrying`);
        await sleep(PUBLISH_RETRY_DELAY_MS * attempt);
      }
    }
  }

  async function drain(): Promise<void> {
    while (due.length > 0 && !abandoned) {
      const receipts = due.splice(0, batchMax);
      inFlight = receipts.length;
      await publish(receipts);
      inFlight = 0;
    }
  }

  /**
   * Started after the timers of this turn have run, so receipts falling due together leave together; with a linger,
   * after receiptLingerMs, or as soon as a batch is full or the connector stops.
   */
  function kickPublisher(): void {
    // a full batch waits for nothing more, and nothing waits once the connector stops
    const waitsNoMore = due.length >= batchMax || state !== 'running';
    if (publisher) {
      if (waitsNoMore) endLinger?.();
      return;
    }
    publisher = new Promise<void>((resolve) => {
      // the publish starts after the check phase: receipts falling due at that instant join it
      const start = (): void => {
        endLinger = null;
        setImmediate(resolve);
      };
      if (lingerMs === 0 || waitsNoMore) {
        start();
        return;
      }
      const timer = setTimeout(start, lingerMs);
      endLinger = () => {
        clearTimeout(timer);
        start();
      };
    })
      .then(drain)
      .catch((error: unknown) => {
        onError(error, 'receipt publisher failed');
      })
      .finally(() => {
        publisher = null;
        // receipts that fell due during the last publish start the next round
        if (due.length > 0 && !abandoned) kickPublisher();
        else checkIdle();
      });
  }

  function toReceipt(job: DispatchJob, planned: PlannedReceipt, takenAt: number): Receipt {
    return {
      version: 1,
      receipt_id: `${job.dispatch_id}:${planned.receiptNumber}`,
      dispatch_id: job.dispatch_id,
      status: planned.status,
      ...(planned.errorCode === undefined ? {} : { error_code: planned.errorCode }),
      ...(planned.errorMessage === undefined ? {} : { error_message: planned.errorMessage }),
      occurred_at: toIsoUtc(takenAt + planned.occurredAfterMs),
    };
  }

  /** One timer per receipt; receipts fall due in plan order and leave in that order. */
  function schedule(job: DispatchJob, plan: readonly PlannedReceipt[], takenAt: number): void {
    for (const planned of plan) {
      const checked = checkReceipt(toReceipt(job, planned, takenAt));
      if (!checked.ok) {
        onError(new Error(checked.errors.join('; ')), `simulator planned an invalid receipt for ${job.dispatch_id}`);
        continue;
      }
      const receipt = checked.value;
      const timer = setTimeout(() => {
        scheduled.delete(timer);
        due.push(receipt);
        kickPublisher();
      }, planned.afterMs);
      scheduled.set(timer, planned.afterMs);
    }
  }

  function handle(delivery: Delivery): Promise<Disposition> {
    // a transport that still hands over jobs while stopping gets them back for another instance
    if (state !== 'running') return Promise.resolve(retryAfter(0));
    const checked = checkDispatchJob(knownDispatchFields(delivery.payload));
    if (!checked.ok) {
      onError(new Error(checked.errors.join('; ')), `invalid dispatch job ${delivery.id} on ${delivery.subject} dropped`);
      return Promise.resolve(DROP);
    }
    const job = checked.value;
    const count = seen.get(job.dispatch_id);
    if (count !== undefined) {
      // taken before: at most once to the carrier, so acknowledge without sending again
      seen.set(job.dispatch_id, count + 1);
      options.onDelivery?.(job.dispatch_id, false);
      return Promise.resolve(ACK);
    }
    // recorded before it is handed to the (simulated) carrier
    remember(job.dispatch_id);
    options.onDelivery?.(job.dispatch_id, true);
    schedule(job, planFor(job, options.delays), clock.now());
    return Promise.resolve(ACK);
  }

  return {
    async start() {
      if (state !== 'idle') throw new Error(`simulator connector cannot start: it is ${state}`);
      state = 'running';
      try {
        consumer = await options.transport.consume({
          stream: 'dispatch',
          filter: dispatchSubject(carrier),
          durable: connectorDurable(carrier),
          concurrency: options.concurrency ?? SIMULATOR_CONCURRENCY,
          ackWaitMs: SIMULATOR_ACK_WAIT_MS,
          handler: handle,
        });
      } catch (error) {
        state = 'idle';
        throw error;
      }
    },

    async stop() {
      if (state !== 'running') return;
      state = 'stopping';
      // receipts waiting for company leave now; those falling due from here on leave without waiting
      endLinger?.();
      await consumer?.stop();
      consumer = null;
      let largestDelay = 0;
      for (const delay of scheduled.values()) largestDelay = Math.max(largestDelay, delay);
      const boundMs = Math.max(2 * largestDelay, STOP_GRACE_FLOOR_MS);
      let bound: Timer | undefined;
      const timedOut = new Promise<'timeout'>((resolve) => {
        bound = setTimeout(() => {
          resolve('timeout');
        }, boundMs);
      });
      const result = await Promise.race([whenIdle().then(() => 'idle' as const), timedOut]);
      clearTimeout(bound);
      if (result === 'timeout') {
        const lost = scheduled.size + due.length + inFlight;
        for (const timer of scheduled.keys()) clearTimeout(timer);
        scheduled.clear();
        due = [];
        abandoned = true;
        onError(new Error(`${lost} receipts not published`), `simulator stopped after waiting ${boundMs} ms`);
      }
      state = 'stopped';
    },

    dispatchesSeen() {
      return new Map(seen);
    },
  };
}
