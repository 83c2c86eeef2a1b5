import { collectDefaultMetrics, Counter, Gauge, Histogram, Registry } from 'prom-client';

/**
 * The node's Prometheus metrics: one registry per node, every series prefixed `sms_gateway_`. Components never see
 * this module: they expose callbacks (`onAttempt`, `onReceipt`, …) and the composition root connects them to the
 * recording methods below. Gauges that describe the present (actors in memory, outbox backlog, shards owned) are
 * read from their sources when Prometheus scrapes.
 */
export const METRIC_PREFIX = 'sms_gateway_';

/** What the scrape-time gauges read; bound by the composition root once the components exist. */
export interface MetricSources {
  /** Actors in memory, per kind (`wallet`, `api_key`, `message`). */
  readonly actorsActive?: () => Readonly<Record<string, number>>;
  /** Outbox entries not yet relayed. */
  readonly outboxBacklog?: () => Promise<number>;
  /** Shards this node holds a lease on (absent outside a cluster). */
  readonly shardsOwned?: () => number;
  /** Shards the cluster spreads its merchants over (absent outside a cluster). */
  readonly shardsTotal?: () => number;
}

export interface RequestSample {
  readonly route: string;
  readonly method: string;
  readonly status: number;
  readonly seconds: number;
  /** How often the request's work crossed to another node (0 when its merchant's shard is owned here). */
  readonly remoteHops: number;
}

export interface Metrics {
  readonly registry: Registry;
  requestFinished(sample: RequestSample): void;
  messageCreated(sendingType: string): void;
  /** A recipient moved to `status` (`processing`, `sent`, `delivered`, `failed`). */
  recipientTransition(status: string): void;
  /** A recipient failed because no final receipt came within the receipt timeout (1503). */
  receiptTimedOut(): void;
  /**
   * A wallet charge of `tenThousandths` 1/10 000 of the currency (prepaid and postpaid together): an integer, the
   * exact amount money.ts keeps, so the counter's sums stay exact (a RangeError otherwise).
   */
  charged(currency: string, tenThousandths: number): void;
  refunded(currency: string, tenThousandths: number): void;
  webhookAttempt(verdict: string, seconds: number): void;
  webhookDropped(reason: string): void;
  /**
   * A batch of webhook first attempts of `events` events went its way from the outbox relay: `in_process` (made at
   * once by this node's webhook worker) or `published` (on the webhook stream).
   */
  webhookBatch(path: string, events: number): void;
  receipt(sample: { readonly changed: boolean; readonly lagSeconds: number }): void;
  journalAppend(seconds: number): void;
  schedulerTick(lagSeconds: number): void;
  /** A crossing to another node took `seconds`; `what` crossed (an operation's name, or `ask:<actor kind>`). */
  remoteHop(seconds: number, what: string): void;
  /** `messageIds` message owners read from the database: this node had not seen those messages created or sent. */
  messageOwnerLookups(messageIds: number): void;
  /** Binds the scrape-time sources (one node per registry); the returned function unbinds them (on stop). */
  bind(sources: MetricSources): () => void;
  /** The Prometheus text exposition of every series. */
  scrape(): Promise<{ readonly contentType: string; readonly body: string }>;
}

export interface MetricsOptions {
  /** Process metrics (CPU, memory, event loop lag, GC); default true. */
  readonly defaultMetrics?: boolean;
}

const name = (suffix: string): string => `${METRIC_PREFIX}${suffix}`;

/** An amount counted in 1/10 000 of the currency: a non-negative integer below 2^53, where a counter's sum is exact. */
function wholeTenThousandths(amount: number): number {
  if (!Number.isSafeInteger(amount) || amount < 0) throw new RangeError(`not a whole number of 1/10 000 of a currency: ${amount}`);
  return amount;
}

const LATENCY_BUCKETS = [0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const FAST_BUCKETS = [0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1];
// receipts and occurrences may legitimately come minutes late (slow carriers, a node that was down)
const LAG_BUCKETS = [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 15, 60, 300, 3600];

export function createMetrics(options: MetricsOptions = {}): Metrics {
  const registry = new Registry();
  const registers = [registry];
  if (options.defaultMetrics ?? true) collectDefaultMetrics({ register: registry, prefix: METRIC_PREFIX });
  let sources: MetricSources = {};

  const httpRequests = new Counter({
    name: name('http_requests_total'),
    help: 'Merchant API requests answered, by route, method and status code.',
    labelNames: ['route', 'method', 'status'] as const,
    registers,
  });
  const httpDuration = new Histogram({
    name: name('http_request_duration_seconds'),
    help: 'Time from a request arriving to its response finishing.',
    labelNames: ['route', 'method'] as const,
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const hopsPerRequest = new Histogram({
    name: name('remote_hops_per_request'),
    help: "Remote hops (asks or forwards over NATS to another node) made by each merchant request, by route: 0 when the merchant's shard is owned by the node that received it, 1 when forwarded.",
    labelNames: ['route'] as const,
    buckets: [0, 1, 2, 3],
    registers,
  });
  const remoteHopsByWhat = new Counter({
    name: name('cluster_remote_hops_total'),
    help: 'Crossings to another node, by what crossed: a forwarded operation (merchant-request, receipts, webhook-targets) or one actor command (ask:wallet, ask:apiKey, ask:message).',
    labelNames: ['what'] as const,
    registers,
  });
  const messageOwnerLookups = new Counter({
    name: name('message_owner_lookups_total'),
    help: 'Message ids whose merchant was read from the database: status reads and receipts of messages this node had not seen created or answered (its memory of message owners missed).',
    registers,
  });
  const messagesCreated = new Counter({
    name: name('messages_created_total'),
    help: 'Messages created (journaled), by sending type.',
    labelNames: ['sending_type'] as const,
    registers,
  });
  const recipientTransitions = new Counter({
    name: name('recipient_transitions_total'),
    help: 'Recipient status changes, by new status: one per status a recipient entered (with or without a webhook).',
    labelNames: ['status'] as const,
    registers,
  });
  const charges = new Counter({
    name: name('charges_total'),
    help: 'Wallet charges journaled.',
    labelNames: ['currency'] as const,
    registers,
  });
  const chargedAmount = new Counter({
    name: name('charged_amount_ten_thousandths_total'),
    help: 'Money charged to wallets (prepaid and postpaid), in 1/10 000 of the currency: 1 USD is 10000.',
    labelNames: ['currency'] as const,
    registers,
  });
  const refunds = new Counter({
    name: name('refunds_total'),
    help: 'Wallet refunds journaled.',
    labelNames: ['currency'] as const,
    registers,
  });
  const refundedAmount = new Counter({
    name: name('refunded_amount_ten_thousandths_total'),
    help: 'Money refunded to wallets, in 1/10 000 of the currency: 1 USD is 10000.',
    labelNames: ['currency'] as const,
    registers,
  });
  const receiptTimeouts = new Counter({
    name: name('receipt_timeouts_total'),
    help: 'Recipients failed with 1503: no final carrier receipt within the receipt timeout (RECEIPT_TIMEOUT_MS).',
    registers,
  });
  const webhookAttempts = new Counter({
    name: name('webhook_attempts_total'),
    help: 'Webhook delivery attempts, by verdict (acknowledged, retry, rejected, dropped).',
    labelNames: ['verdict'] as const,
    registers,
  });
  const webhookDuration = new Histogram({
    name: name('webhook_attempt_duration_seconds'),
    help: 'Time one webhook delivery attempt took (until the answer, the timeout or the connection error).',
    buckets: LATENCY_BUCKETS,
    registers,
  });
  const droppedWebhooks = new Counter({
    name: name('webhook_dropped_total'),
    help: 'Webhook events given up on and kept as dead letters, by reason.',
    labelNames: ['reason'] as const,
    registers,
  });
  const webhookBatches = new Counter({
    name: name('webhook_batches_total'),
    help: "Batches of webhook first attempts the outbox relay formed, by path: in_process (made at once by this node's webhook worker, without the broker) or published (on the webhook stream, for any node's worker).",
    labelNames: ['path'] as const,
    registers,
  });
  const webhookBatchEvents = new Counter({
    name: name('webhook_batch_events_total'),
    help: "Webhook events in the outbox relay's batches of first attempts, by path (in_process or published): one per event and URL it is bound for.",
    labelNames: ['path'] as const,
    registers,
  });
  const receipts = new Counter({
    name: name('receipts_total'),
    help: 'Carrier receipts applied, by whether they changed a recipient (duplicates and stale ones do not).',
    labelNames: ['changed'] as const,
    registers,
  });
  const receiptLag = new Histogram({
    name: name('receipt_lag_seconds'),
    help: 'Time from the carrier reporting a receipt to its journaling here.',
    buckets: LAG_BUCKETS,
    registers,
  });
  const journalAppends = new Histogram({
    name: name('journal_append_seconds'),
    help: 'Duration of one journal append (events and outbox entries of one actor batch).',
    buckets: FAST_BUCKETS,
    registers,
  });
  const schedulerLag = new Histogram({
    name: name('scheduler_lag_seconds'),
    help: 'Delay between a scheduled occurrence being due and its dispatch being journaled.',
    buckets: LAG_BUCKETS,
    registers,
  });
  const remoteHops = new Histogram({
    name: name('cluster_remote_hop_seconds'),
    help: "Round trip of an actor request to the shard owner's node.",
    buckets: FAST_BUCKETS,
    registers,
  });
  new Gauge({
    name: name('actors_active'),
    help: 'Actors in memory on this node, by kind.',
    labelNames: ['kind'] as const,
    registers,
    collect() {
      this.reset();
      for (const [kind, count] of Object.entries(sources.actorsActive?.() ?? {})) this.set({ kind }, count);
    },
  });
  new Gauge({
    name: name('outbox_backlog'),
    help: 'Outbox entries waiting to be relayed (every shard).',
    registers,
    async collect() {
      const read = sources.outboxBacklog;
      if (!read) return;
      // a scrape while the database is down still answers, without this series' value changing
      try {
        this.set(await read());
      } catch {
        return;
      }
    },
  });
  new Gauge({
    name: name('shard_owned'),
    help: 'Shards this node holds a lease on.',
    registers,
    collect() {
      this.set(sources.shardsOwned?.() ?? 0);
    },
  });
  new Gauge({
    name: name('cluster_shards'),
    help: "Shards the cluster spreads its merchants over (CLUSTER_SHARDS); 0 outside a cluster. Every one needs an owner: sum(shard_owned) below it means some merchants' actors have no node.",
    registers,
    collect() {
      this.set(sources.shardsTotal?.() ?? 0);
    },
  });

  return {
    registry,
    requestFinished(sample) {
      httpRequests.inc({ route: sample.route, method: sample.method, status: String(sample.status) });
      httpDuration.observe({ route: sample.route, method: sample.method }, sample.seconds);
      if (sample.route !== 'unmatched' && sample.route !== 'health') hopsPerRequest.observe({ route: sample.route }, sample.remoteHops);
    },
    messageCreated(sendingType) {
      messagesCreated.inc({ sending_type: sendingType });
    },
    recipientTransition(status) {
      recipientTransitions.inc({ status });
    },
    receiptTimedOut() {
      receiptTimeouts.inc();
    },
    charged(currency, tenThousandths) {
      const amount = wholeTenThousandths(tenThousandths);
      charges.inc({ currency });
      chargedAmount.inc({ currency }, amount);
    },
    refunded(currency, tenThousandths) {
      const amount = wholeTenThousandths(tenThousandths);
      refunds.inc({ currency });
      refundedAmount.inc({ currency }, amount);
    },
    webhookAttempt(verdict, seconds) {
      webhookAttempts.inc({ verdict });
      webhookDuration.observe(seconds);
    },
    webhookDropped(reason) {
      droppedWebhooks.inc({ reason });
    },
    webhookBatch(path, events) {
      webhookBatches.inc({ path });
      webhookBatchEvents.inc({ path }, events);
    },
    receipt(sample) {
      receipts.inc({ changed: String(sample.changed) });
      receiptLag.observe(sample.lagSeconds);
    },
    journalAppend(seconds) {
      journalAppends.observe(seconds);
    },
    schedulerTick(lagSeconds) {
      schedulerLag.observe(lagSeconds);
    },
    remoteHop(seconds, what) {
      remoteHops.observe(seconds);
      remoteHopsByWhat.inc({ what });
    },
    messageOwnerLookups(messageIds) {
      messageOwnerLookups.inc(messageIds);
    },
    bind(next) {
      sources = next;
      return () => {
        if (sources === next) sources = {};
      };
    },
    async scrape() {
      return { contentType: registry.contentType, body: await registry.metrics() };
    },
  };
}
