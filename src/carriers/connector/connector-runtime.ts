import { createHash } from 'node:crypto';
import { JetStreamApiCodes, JetStreamApiError, jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm, KvWatchInclude, type KV, type KvEntry, type KvWatchEntry } from '@nats-io/kv';
import type { NatsConnection, QueuedIterator } from '@nats-io/nats-core';
import { systemClock, toIsoUtc, uuidV4, type Clock, type IdGenerator } from '../../libraries/clock/clock.js';
import type { Logger } from '../../libraries/logger/logger.js';
import { createGroupCommit, settledTogether } from '../../libraries/persistence/group-commit.js';
import { bucketKeys } from '../../libraries/transport/bucket-keys.js';
import {
  PRESENCE_BUCKET,
  connectorDurable,
  dispatchBucket,
  dispatchSubject,
  receiptSubject,
  legacyEarlyReportBucket,
  referenceBucket,
  type NatsNames,
} from '../../libraries/transport/nats-names.js';
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
  RECEIPT_BATCH_MAX,
  checkDispatchJob,
  checkReceipt,
  knownDispatchFields,
  type DispatchJob,
  type Receipt,
  type ReceiptBatch,
} from '../carrier-protocol.js';
import type { CarrierLink, CarrierReport, SubmitOutcome } from './carrier-link.js';
import {
  PRESENCE_INTERVAL_MS,
  PRESENCE_TTL_MS,
  liveConnectors,
  presenceKey,
  shouldTakeJobs,
  type ConnectorPresence,
} from './connector-presence.js';
import {
  encodeKey,
  finalReceiptId,
  isFinalPartState,
  multiPartVerdict,
  reportReceiptId,
  singlePartVerdict,
  withPartReport,
  isEarlyReports,
  type Correlation,
  type DispatchRecord,
  type EarlyReports,
  type OrphanReport,
  type PartRecord,
  type ReferenceEntry,
} from './connector-records.js';
import { createCorrelationMemory, type CorrelationMemory, type CorrelationWrite } from './correlation-memory.js';

/**
 * The NATS side of a carrier connector, common to every kind of carrier link (docs/carrier-protocol.md): it takes
 * dispatch jobs from the shared durable `connector-<carrier>`, records each one before the link submits it, keeps
 * the carrier's references to correlate delivery reports, publishes receipts, and announces the connector's
 * presence so only the live connectors of the best priority take jobs.
 *
 * Taking a job (`handle`), with the dispatch record in `carrier-dispatches-<carrier>`:
 * - no record: create `submitting` (KV create: one instance wins), then submit;
 * - `submitted` or `rejected`: the carrier had it already: acknowledge, never send again;
 * - `submitting`, renewed within the ack wait: an instance is submitting it right now: retry after the ack wait;
 * - `submitting`, not renewed for longer than the ack wait: its instance died during the hand-off, and whether the
 *   carrier took the message is unknown. With `uncertainSubmission: 'resend'` (the default: at-least-once) this
 *   instance takes the record over and submits again (a duplicate SMS is possible). With `'hold'` (at-most-once,
 *   rule 2 of docs/carrier-protocol.md section 4) the job is acknowledged without sending: the carrier's report, if
 *   any, or the receipt timeout ends the recipient.
 * A link's `retry` marked `uncertain` (the carrier may have the message) follows the same setting; any other `retry`
 * deletes the record and hands the job back.
 * The instance submitting renews its record every third of the ack wait, so a slow hand-off is never taken for a
 * dead one.
 *
 * Once the carrier took it, the correlations (one per part, in `carrier-references-<carrier>`), the `submitted`
 * record and the `accepted` receipt are written together, and the job is acknowledged when all are. A report is
 * correlated from the correlations this instance wrote (kept in memory while they can still be the stored ones:
 * correlation-memory.ts; one being written is waited for) or from the bucket; a report for an id not recorded yet
 * is kept under that id until its correlation replaces it.
 */

export interface ConnectorSettings {
  /** Jobs handled at once by this instance; default: the link's window size × weight. */
  readonly concurrency?: number;
  /** Lifetime of dispatch records, correlations and reports kept before their correlation. */
  readonly recordTtlMs?: number;
  readonly ackWaitMs?: number;
  readonly presenceIntervalMs?: number;
  /**
   * A submission whose outcome is unknown (its instance stopped renewing the record, or the link's `retry` says
   * `uncertain`): `resend` (default; at-least-once, a duplicate SMS is possible) or `hold` (acknowledge, never send
   * twice).
   */
  readonly uncertainSubmission?: 'hold' | 'resend';
  /** Most receipts in one NATS message (a receipt batch); 1 publishes each on its own. Default 100. */
  readonly receiptBatchMax?: number;
  /** Attempts to publish a receipt that is not answered by a report's promise (accepted, rejected). */
  readonly publishAttempts?: number;
}

export interface ConnectorRuntimeOptions {
  /** Carrier slug: consumes `sms.dispatch.<carrier>`, publishes `sms.receipts.<carrier>`. */
  readonly carrier: string;
  /** Operator's name of this connector (presence); the connector id is `<name>-<random>`. */
  readonly name: string;
  readonly priority: number;
  readonly weight: number;
  readonly link: CarrierLink;
  /** For the key-value buckets (records, correlations and early reports, presence). */
  readonly nats: NatsConnection;
  /** The deployment's names on NATS (`NATS_NAMESPACE`), for the buckets; the transport maps its own. */
  readonly names: NatsNames;
  /** For dispatch jobs and receipts. */
  readonly transport: Transport;
  readonly logger: Logger;
  readonly clock?: Clock;
  readonly ids?: IdGenerator;
  readonly settings?: ConnectorSettings;
}

export interface ConnectorStats {
  readonly connectorId: string;
  readonly active: boolean;
  readonly live: boolean;
  readonly jobsTaken: number;
  readonly jobsAccepted: number;
  readonly jobsRejected: number;
  readonly jobsRetried: number;
  /** Jobs acknowledged without sending: already submitted or refused, held after a dead instance, stale (> 24 h). */
  readonly jobsSkipped: number;
  readonly jobsInvalid: number;
  readonly reportsReceived: number;
  readonly orphansKept: number;
  readonly orphansResolved: number;
  /** Correlations this instance wrote and keeps in memory now. */
  readonly correlationsRemembered: number;
  /**
   * Remembered correlations dropped because their id was written again since: mostly by another instance, the carrier
   * having given the id to a new message.
   */
  readonly correlationsSuperseded: number;
  readonly receiptsPublished: number;
  readonly receiptsFailed: number;
}

export interface ConnectorRuntime {
  readonly connectorId: string;
  start(): Promise<void>;
  /** No new jobs, the submissions in hand finish, the link stops, pending receipts go out, the presence entry goes. */
  stop(): Promise<void>;
  /** Re-reads presence and starts or stops taking jobs now, rather than at the next heartbeat. */
  refreshPresence(): Promise<void>;
  stats(): ConnectorStats;
}

export const CONNECTOR_ACK_WAIT_MS = 30_000;
export const DEFAULT_RECORD_TTL_MS = 3 * 24 * 3_600_000;
/** A job dispatched longer ago than this has been failed by the gateway (docs/carrier-protocol.md section 7). */
export const STALE_JOB_MS = 24 * 3_600_000;
const DEFAULT_PUBLISH_ATTEMPTS = 5;
export const DEFAULT_RECEIPT_BATCH_MAX = 100;
/** A job that reaches an instance whose link is down goes back for this long (another connector may take it). */
const LINK_DOWN_RETRY_MS = 1_000;
const PUBLISH_RETRY_DELAY_MS = 200;
/** Bound on waiting for correlations to be written once the carrier took a message (KV unreachable). */
const CORRELATION_ATTEMPTS = 10;
/** Correlations this instance wrote, kept in memory for the reports it receives itself (the oldest go first). */
const CORRELATIONS_REMEMBERED = 10_000;
/** Pause before the references bucket's change feed is opened again once it ended. */
const FEED_REOPEN_DELAY_MS = 1_000;

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const toBytes = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value));
/** The JSON value of a live entry (null: no key, or a deletion marker); each bucket holds one shape. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters
const fromEntry = <T>(entry: KvEntry | null): T | null => {
  if (entry === null || entry.operation !== 'PUT' || entry.value.length === 0) return null;
  return JSON.parse(decoder.decode(entry.value)) as T;
};

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/** KV create/update refused because the key moved on (another writer): the caller reads again. */
function isConflict(error: unknown): boolean {
  return (
    error instanceof JetStreamApiError &&
    (error.code === JetStreamApiCodes.StreamWrongLastSequence || error.code === JetStreamApiCodes.StreamWrongLastSequenceUnknown)
  );
}

/** Opens a bucket, creating it when missing (the same settings twice is no change). */
async function openBucket(kvm: Kvm, name: string, ttlMs: number): Promise<KV> {
  try {
    return await kvm.create(name, { history: 1, ttl: ttlMs });
  } catch (error) {
    // created by another process with other limits: use it as it is
    return kvm.open(name).catch(() => {
      throw error;
    });
  }
}

export function createConnectorRuntime(options: ConnectorRuntimeOptions): ConnectorRuntime {
  const { carrier, link, transport, logger } = options;
  if (!CARRIER_SLUG.test(carrier)) throw new Error(`invalid carrier slug: ${JSON.stringify(carrier)}`);
  const clock = options.clock ?? systemClock;
  const ids = options.ids ?? uuidV4;
  const settings = options.settings ?? {};
  const ackWaitMs = settings.ackWaitMs ?? CONNECTOR_ACK_WAIT_MS;
  const recordTtlMs = settings.recordTtlMs ?? DEFAULT_RECORD_TTL_MS;
  const presenceIntervalMs = settings.presenceIntervalMs ?? PRESENCE_INTERVAL_MS;
  const uncertainSubmission = settings.uncertainSubmission ?? 'resend';
  const publishAttempts = settings.publishAttempts ?? DEFAULT_PUBLISH_ATTEMPTS;
  const receiptBatchMax = settings.receiptBatchMax ?? DEFAULT_RECEIPT_BATCH_MAX;
  if (!Number.isInteger(receiptBatchMax) || receiptBatchMax < 1 || receiptBatchMax > RECEIPT_BATCH_MAX) {
    throw new Error(`receiptBatchMax must be an integer from 1 to ${RECEIPT_BATCH_MAX}, got ${receiptBatchMax}`);
  }
  const connectorId = `${options.name}-${ids()
    .replace(/[^A-Za-z0-9_-]/g, '')
    .slice(0, 12)}`;
  const log = logger.child({ carrier, connector_id: connectorId });

  let dispatches: KV | null = null;
  let references: KV | null = null;
  let presence: KV | null = null;
  let streams: JetStreamManager | null = null;
  let consumer: Consumer | null = null;
  /** Starting or stopping the consumer, one change at a time. */
  let consumerChange: Promise<void> = Promise.resolve();
  let heartbeat: ReturnType<typeof setInterval> | null = null;
  let presenceRound: Promise<void> | null = null;
  let state: 'idle' | 'running' | 'stopping' | 'stopped' = 'idle';
  let active = false;
  const reportsInHand = new Set<Promise<void>>();
  /**
   * Encoded reference → the correlation this instance wrote for it, while it can still be the stored one (no older
   * than the bucket's TTL, no later write of the key on the bucket's change feed). A report for a reference this
   * instance recorded (most are: the centre reports on the bind it was submitted on) is correlated without a read;
   * another instance's, or one forgotten, is read from the bucket. Made on start, once the bucket's TTL is known.
   */
  let memory: CorrelationMemory | null = null;
  /** The references bucket's change feed while it is followed (revisions only), for the memory. */
  let feed: QueuedIterator<KvWatchEntry> | null = null;
  /**
   * Encoded reference → the writing of its correlation, from the carrier's answer until it is stored. The centre
   * can report a part before that write is done (it reports ten milliseconds after answering, and a write can take
   * longer under load); the report then waits for it rather than being kept as an early report in the bucket.
   */
  const correlationsInWriting = new Map<string, Promise<unknown>>();
  const counters = {
    jobsTaken: 0,
    jobsAccepted: 0,
    jobsRejected: 0,
    jobsRetried: 0,
    jobsSkipped: 0,
    jobsInvalid: 0,
    reportsReceived: 0,
    orphansKept: 0,
    orphansResolved: 0,
    receiptsPublished: 0,
    receiptsFailed: 0,
  };

  /** Read after awaits, where stop() may have run meanwhile. */
  const isRunning = (): boolean => state === 'running';

  const bucket = (kv: KV | null): KV => {
    if (kv === null) throw new Error('connector runtime not started');
    return kv;
  };

  const streamManager = (): JetStreamManager => {
    if (streams === null) throw new Error('connector runtime not started');
    return streams;
  };

  const correlationMemory = (): CorrelationMemory => {
    if (memory === null) throw new Error('connector runtime not started');
    return memory;
  };

  // ---- receipts ----

  /** One receipt on its own, or a batch under an id made of its receipts' ids (the same batch, the same id). */
  function receiptMessage(receipts: readonly Receipt[]): { payload: Receipt | ReceiptBatch; id: string } {
    const [first] = receipts;
    if (receipts.length === 1 && first) return { payload: first, id: first.receipt_id };
    const batchId = `batch:${createHash('sha256')
      .update(receipts.map((r) => r.receipt_id).join('\n'))
      .digest('hex')}`;
    return { payload: { version: 1, batch_id: batchId, receipts }, id: batchId };
  }

  /**
   * The receipt publisher: receipts ready in the same turn leave together, as one message of at most
   * receiptBatchMax, one message at a time; each receipt's promise settles with its message.
   */
  const publishChecked = createGroupCommit<Receipt>(
    { groupCommit: true, maxBatch: receiptBatchMax, maxConcurrentBatches: 1 },
    settledTogether(async (receipts) => {
      const { payload, id } = receiptMessage(receipts);
      await transport.publish(receiptSubject(carrier), payload, { id });
      counters.receiptsPublished += receipts.length;
    }),
  );

  /** Resolves once the stream stored the receipt (alone or in a batch); rejects when that publish failed. */
  function publishReceipt(receipt: Receipt): Promise<void> {
    const checked = checkReceipt(receipt);
    if (!checked.ok) return Promise.reject(new Error(`invalid receipt ${receipt.receipt_id}: ${checked.errors.join('; ')}`));
    return publishChecked(checked.value);
  }

  /** For receipts no carrier waits on: a few attempts with the same id, then a log line. */
  async function publishPatiently(receipt: Receipt): Promise<boolean> {
    for (let attempt = 1; ; attempt++) {
      try {
        await publishReceipt(receipt);
        return true;
      } catch (error) {
        if (attempt >= publishAttempts) {
          counters.receiptsFailed++;
          log.error({ err: error, receipt_id: receipt.receipt_id }, `receipt not published after ${attempt} attempts`);
          return false;
        }
        await sleep(PUBLISH_RETRY_DELAY_MS * attempt);
      }
    }
  }

  // ---- dispatch records ----

  /**
   * A dispatch record and the revision it was read or written at (revision 0: no key). Every KV read is a round
   * trip to the server, so the instance submitting a job keeps the record it wrote last and writes on top of it
   * without reading: its writes are conditional on the revision, so a record that moved on meanwhile is refused,
   * then read.
   */
  interface RecordAt {
    readonly record: DispatchRecord | null;
    readonly revision: number;
  }

  async function readRecord(key: string): Promise<RecordAt> {
    const entry = await bucket(dispatches).get(key);
    // a deleted record's marker has a revision too: the next write must be a create (revision 0 is "no key")
    return { record: fromEntry<DispatchRecord>(entry), revision: entry?.operation === 'PUT' ? entry.revision : 0 };
  }

  /**
   * Writes `next` computed from the current record, retrying on concurrent writers. Null from `change`: no write.
   * `from`: the record as this instance last wrote or read it, tried first instead of reading it.
   */
  async function changeRecord(
    key: string,
    change: (record: DispatchRecord | null) => DispatchRecord | null,
    from?: RecordAt,
  ): Promise<RecordAt> {
    let current = from ?? (await readRecord(key));
    for (;;) {
      const next = change(current.record);
      if (next === null) return current;
      try {
        const revision =
          current.revision === 0
            ? await bucket(dispatches).create(key, toBytes(next))
            : await bucket(dispatches).update(key, toBytes(next), current.revision);
        return { record: next, revision };
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
      current = await readRecord(key);
    }
  }

  type Claim =
    | { kind: 'claimed'; written: RecordAt }
    | { kind: 'done'; why: string; record: DispatchRecord; unknownOutcome?: true }
    | { kind: 'busy'; retryInMs: number };

  const submittingRecord = (now: number): DispatchRecord => ({
    version: 1,
    state: 'submitting',
    instance: connectorId,
    claimed_at: now,
    renewed_at: now,
  });

  async function claim(key: string): Promise<Claim> {
    // a fresh dispatch has no record yet: create it without reading first. @nats-io/kv's create also writes over a
    // deleted record's marker (a submission handed back); it is refused only when a record is there
    const fresh = submittingRecord(clock.now());
    try {
      return { kind: 'claimed', written: { record: fresh, revision: await bucket(dispatches).create(key, toBytes(fresh)) } };
    } catch (error) {
      if (!isConflict(error)) throw error;
    }
    for (;;) {
      const now = clock.now();
      const { record, revision } = await readRecord(key);
      const submitting = submittingRecord(now);
      if (record === null) {
        try {
          return {
            kind: 'claimed',
            written: {
              record: submitting,
              revision:
                revision === 0
                  ? await bucket(dispatches).create(key, toBytes(submitting))
                  : await bucket(dispatches).update(key, toBytes(submitting), revision),
            },
          };
        } catch (error) {
          if (isConflict(error)) continue;
          throw error;
        }
      }
      if (record.state === 'submitted') return { kind: 'done', why: 'already submitted', record };
      if (record.state === 'rejected') return { kind: 'done', why: 'already refused by the carrier', record };
      const silentFor = now - record.renewed_at;
      if (silentFor <= ackWaitMs) return { kind: 'busy', retryInMs: Math.max(1_000, ackWaitMs - silentFor + 1_000) };
      if (uncertainSubmission === 'hold') {
        return {
          kind: 'done',
          why: `instance ${record.instance} stopped renewing it while submitting: outcome unknown, not sent again`,
          record,
          unknownOutcome: true,
        };
      }
      try {
        const next: DispatchRecord = { ...submitting, ...(record.parts ? { parts: record.parts } : {}) };
        return { kind: 'claimed', written: { record: next, revision: await bucket(dispatches).update(key, toBytes(next), revision) } };
      } catch (error) {
        if (isConflict(error)) continue;
        throw error;
      }
    }
  }

  /**
   * Keeps a `submitting` record fresh while the link works, so no instance takes it for a dead one. Starts from the
   * record the claim wrote; `stop` gives the record as the renewals last wrote or read it.
   */
  function renewWhileSubmitting(key: string, claimed: RecordAt): { stop(): Promise<RecordAt> } {
    let known = claimed;
    let renewing: Promise<void> = Promise.resolve();
    const timer = setInterval(
      () => {
        renewing = renewing.then(async () => {
          try {
            known = await changeRecord(
              key,
              (record) =>
                record?.state === 'submitting' && record.instance === connectorId ? { ...record, renewed_at: clock.now() } : null,
              known,
            );
          } catch (error) {
            log.warn({ err: error, key }, 'dispatch record not renewed');
          }
        });
      },
      Math.max(1, Math.floor(ackWaitMs / 3)),
    );
    return {
      async stop() {
        clearInterval(timer);
        await renewing;
        return known;
      },
    };
  }

  // ---- jobs ----

  async function handle(delivery: Delivery): Promise<Disposition> {
    // a transport still handing over jobs while this instance stops or stands by gets them back for another one
    if (state !== 'running' || !active) return retryAfter(0);
    if (!link.isLive()) {
      // the link went down since the last heartbeat: stand by now rather than at the next one
      void refreshPresence();
      return retryAfter(LINK_DOWN_RETRY_MS);
    }
    const checked = checkDispatchJob(knownDispatchFields(delivery.payload));
    if (!checked.ok) {
      counters.jobsInvalid++;
      log.warn({ job_id: delivery.id, subject: delivery.subject, errors: checked.errors }, 'invalid dispatch job dropped');
      return DROP;
    }
    const job = checked.value;
    if (clock.now() - Date.parse(job.submitted_at) > STALE_JOB_MS) {
      counters.jobsSkipped++;
      log.info(
        { dispatch_id: job.dispatch_id, submitted_at: job.submitted_at },
        'stale dispatch job acknowledged without sending (older than 24 h)',
      );
      return ACK;
    }
    const key = encodeKey(job.dispatch_id);
    const claimed = await claim(key);
    if (claimed.kind === 'done') {
      // a correlation written together with the record may be missing (the instance stopped between them): written
      // now, before the job is acknowledged (a failure hands the job back)
      if (claimed.record.state === 'submitted') await writeCorrelations(job.dispatch_id, claimed.record.references, false);
      counters.jobsSkipped++;
      if (claimed.unknownOutcome) log.warn({ dispatch_id: job.dispatch_id, why: claimed.why }, 'dispatch job acknowledged without sending');
      else log.info({ dispatch_id: job.dispatch_id, why: claimed.why }, 'dispatch job acknowledged without sending');
      return ACK;
    }
    if (claimed.kind === 'busy') return retryAfter(claimed.retryInMs);

    counters.jobsTaken++;
    const renewal = renewWhileSubmitting(key, claimed.written);
    let outcome: SubmitOutcome;
    let written: RecordAt;
    try {
      outcome = await link.submit(job);
    } finally {
      written = await renewal.stop();
    }
    switch (outcome.kind) {
      case 'accepted':
        await onAccepted(job, key, written, outcome.references);
        return ACK;
      case 'rejected':
        await onRejected(job, key, written, outcome.carrierStatus, outcome.message, outcome.acceptedReferences);
        return ACK;
      case 'retry':
        if (outcome.uncertain === true && uncertainSubmission === 'hold') {
          // the carrier may have it: never sent twice; its report, or the receipt timeout, ends the recipient
          counters.jobsSkipped++;
          log.warn({ dispatch_id: job.dispatch_id, reason: outcome.reason }, 'submission outcome unknown: held, not sent again');
          return ACK;
        }
        counters.jobsRetried++;
        await releaseRecord(key, written);
        log.info({ dispatch_id: job.dispatch_id, reason: outcome.reason, delay_ms: outcome.delayMs }, 'dispatch job handed back for later');
        if (!link.isLive()) void refreshPresence();
        return retryAfter(outcome.delayMs);
    }
  }

  /**
   * Nothing reached the carrier: the record goes, so the next delivery (here or elsewhere) submits it. `from`: the
   * record as this instance last wrote or read it; read again only when it moved on since.
   */
  async function releaseRecord(key: string, from: RecordAt): Promise<void> {
    for (let current = from; ; current = await readRecord(key)) {
      const { record, revision } = current;
      if (record?.state !== 'submitting' || record.instance !== connectorId) return;
      try {
        await bucket(dispatches).delete(key, { previousSeq: revision });
        return;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
    }
  }

  /** The carrier has the message: these writes must happen, or its reports could never be correlated. */
  async function persistently<T>(what: string, work: () => Promise<T>): Promise<T> {
    for (let attempt = 1; ; attempt++) {
      try {
        return await work();
      } catch (error) {
        if (attempt >= CORRELATION_ATTEMPTS) throw error;
        log.warn({ err: error, attempt }, `${what} failed, trying again`);
        await sleep(PUBLISH_RETRY_DELAY_MS * attempt);
      }
    }
  }

  /**
   * The carrier took the message: its correlations, the `submitted` record and the `accepted` receipt are written
   * together, none waiting on another. A record `submitted` while a correlation is missing (this instance stopped
   * between the two) is mended when the job comes again: it is not acknowledged before, so it does.
   */
  async function onAccepted(job: DispatchJob, key: string, written: RecordAt, refs: readonly string[]): Promise<void> {
    counters.jobsAccepted++;
    const [first] = refs;
    const accepted = publishPatiently({
      version: 1,
      receipt_id: `${job.dispatch_id}:accepted`,
      dispatch_id: job.dispatch_id,
      status: 'accepted',
      occurred_at: toIsoUtc(clock.now()),
      carrier_reference: first ?? null,
    });
    const recorded = await Promise.allSettled([
      writeCorrelations(job.dispatch_id, refs, true),
      persistently('recording the submission', () =>
        changeRecord(
          key,
          (record) => ({
            version: 1,
            state: 'submitted',
            references: refs,
            submitted_at: clock.now(),
            ...(record?.state === 'submitting' && record.parts ? { parts: record.parts } : {}),
          }),
          written,
        ),
      ),
    ]);
    for (const outcome of recorded) {
      // the job is acknowledged all the same: the carrier has it, and sending it again would be a duplicate
      if (outcome.status === 'rejected')
        log.error(
          { err: outcome.reason, dispatch_id: job.dispatch_id, references: refs },
          'carrier took the message but its references were not recorded',
        );
    }
    await accepted;
  }

  /**
   * Writes the correlations of a dispatch's parts; reports for them meanwhile wait for it (`correlationsInWriting`).
   * `latest`: the carrier has just answered, so a correlation of another dispatch under the same id is replaced;
   * otherwise (a submission recorded earlier) it is left as it is.
   */
  async function writeCorrelations(dispatchId: string, refs: readonly string[], latest: boolean): Promise<void> {
    const parts = refs.length;
    // known to reports before the first write leaves; the memory counts a correlation's age from here
    const keys = refs.map((reference) => {
      const key = encodeKey(reference);
      return { reference, key, write: correlationMemory().beginWrite(key) };
    });
    const writing = Promise.resolve().then(() =>
      persistently('writing correlations', () =>
        Promise.all(
          keys.map(({ reference, write }, part) => recordCorrelation(reference, { dispatch_id: dispatchId, part, parts }, latest, write)),
        ),
      ),
    );
    for (const { key } of keys) correlationsInWriting.set(key, writing);
    try {
      await writing;
    } finally {
      for (const { key, write } of keys) {
        if (correlationsInWriting.get(key) === writing) correlationsInWriting.delete(key);
        write.end();
      }
    }
  }

  async function onRejected(
    job: DispatchJob,
    key: string,
    written: RecordAt,
    carrierStatus: string,
    message: string,
    acceptedReferences: readonly string[],
  ): Promise<void> {
    counters.jobsRejected++;
    log.info({ dispatch_id: job.dispatch_id, carrier_status: carrierStatus, message }, 'carrier refused the message');
    await changeRecord(
      key,
      () => ({
        version: 1,
        state: 'rejected',
        carrier_status: carrierStatus,
        accepted_references: acceptedReferences,
        rejected_at: clock.now(),
      }),
      written,
    );
    await publishPatiently({
      version: 1,
      receipt_id: `${job.dispatch_id}:rejected`,
      dispatch_id: job.dispatch_id,
      status: 'rejected',
      error_message: `Carrier refused the message (${carrierStatus})`.slice(0, 500),
      occurred_at: toIsoUtc(clock.now()),
      carrier_reference: null,
      carrier_status: carrierStatus.slice(0, 100),
    });
  }

  // ---- reports ----

  /** What the references bucket holds for a reference, and the revision to write on (a deletion marker's too; 0: no key). */
  async function readReference(key: string): Promise<{ entry: ReferenceEntry | null; revision: number }> {
    const stored = await bucket(references).get(key);
    return { entry: fromEntry<ReferenceEntry>(stored), revision: stored?.revision ?? 0 };
  }

  /** A write of the references bucket conditional on the key's revision (0: only when there is no key). */
  const writeReference = (key: string, entry: ReferenceEntry, revision: number): Promise<number> =>
    bucket(references).put(key, toBytes(entry), { previousSeq: revision });

  /** The carrier's words as a receipt field (at most 100 characters), or nothing. */
  const wordsOf = (words: string | null | undefined): { carrier_status?: string } =>
    words == null || words === '' ? {} : { carrier_status: words.slice(0, 100) };

  /** The receipt a correlated report calls for; null when it changes nothing. */
  async function receiptFor(report: OrphanReport, correlation: Correlation): Promise<Receipt | null> {
    const occurredAt = toIsoUtc(report.occurred_at);
    if (correlation.parts <= 1) {
      const verdict = singlePartVerdict(report.state, report.carrier_error);
      return {
        version: 1,
        receipt_id: reportReceiptId(correlation.dispatch_id, report.reference, report.state),
        dispatch_id: correlation.dispatch_id,
        status: verdict.status,
        ...(verdict.errorMessage === null ? {} : { error_message: verdict.errorMessage.slice(0, 500) }),
        occurred_at: occurredAt,
        carrier_reference: report.reference,
        ...wordsOf(report.carrier_status),
      };
    }
    const partReport: PartRecord = {
      state: report.state,
      carrier_error: report.carrier_error,
      occurred_at: report.occurred_at,
      ...(report.carrier_status == null ? {} : { carrier_status: report.carrier_status }),
    };
    const key = encodeKey(correlation.dispatch_id);
    const { record } = await changeRecord(key, (current) => {
      const existing = current === null || current.state === 'rejected' ? undefined : current.parts;
      const parts = withPartReport(existing, correlation.parts, correlation.part, partReport);
      if (current === null) {
        // the record expired (or never was): keep the parts all the same
        return { version: 1, state: 'submitted', references: [], submitted_at: clock.now(), parts };
      }
      if (current.state === 'rejected') return null;
      if (JSON.stringify(parts) === JSON.stringify(existing)) return null;
      return { ...current, parts };
    });
    if (record === null || record.state === 'rejected') return null;
    const verdict = multiPartVerdict(record.parts ?? []);
    if (verdict.final) {
      const latest = Math.max(...(record.parts ?? []).map((part) => part.occurred_at ?? 0));
      return {
        version: 1,
        receipt_id: finalReceiptId(correlation.dispatch_id, verdict.status),
        dispatch_id: correlation.dispatch_id,
        status: verdict.status,
        ...(verdict.errorMessage === null ? {} : { error_message: verdict.errorMessage.slice(0, 500) }),
        occurred_at: toIsoUtc(latest > 0 ? latest : report.occurred_at),
        carrier_reference: record.state === 'submitted' ? (record.references[0] ?? report.reference) : report.reference,
        ...wordsOf(verdict.status === 'delivered' ? report.carrier_status : verdict.carrierStatus),
      };
    }
    return {
      version: 1,
      receipt_id: reportReceiptId(correlation.dispatch_id, report.reference, report.state),
      dispatch_id: correlation.dispatch_id,
      status: 'enroute',
      occurred_at: occurredAt,
      carrier_reference: report.reference,
      ...wordsOf(report.carrier_status),
    };
  }

  /**
   * Writes a reference's correlation. A reference has one key, where the correlation or, before it, the reports the
   * carrier sent before answering the submission are kept; every write of it is conditional on what was read, so a
   * report and the correlation written at the same time cannot miss each other. The first write is a create, with
   * no read: the key is there only when reports came first. Those are published before the correlation replaces
   * them; a failure leaves them kept and throws (the caller tries again). Only a correlation this instance has just
   * written is remembered (`write`): one found written already may be days old, or another instance's.
   */
  async function recordCorrelation(reference: string, correlation: Correlation, latest: boolean, write: CorrelationWrite): Promise<void> {
    const key = encodeKey(reference);
    let revision = 0;
    let published = 0;
    for (;;) {
      try {
        const written = await writeReference(key, correlation, revision);
        counters.orphansResolved += published;
        write.written(correlation, written);
        return;
      } catch (error) {
        if (!isConflict(error)) throw error;
      }
      const read = await readReference(key);
      revision = read.revision;
      const { entry } = read;
      if (entry === null) continue;
      if (!isEarlyReports(entry)) {
        // written already (an earlier attempt whose answer was lost, or a submission recorded earlier)
        if (entry.dispatch_id === correlation.dispatch_id && entry.part === correlation.part) return;
        // another dispatch's: the carrier gave the id again, and the latest submission has it
        if (!latest) return;
        continue;
      }
      for (const report of entry.reports) {
        const receipt = await receiptFor(report, correlation);
        if (receipt !== null) await publishReceipt(receipt);
      }
      published = entry.reports.length;
    }
  }

  async function onReport(report: CarrierReport): Promise<void> {
    counters.reportsReceived++;
    const kept: OrphanReport = {
      reference: report.reference,
      state: report.state,
      carrier_error: report.carrierError,
      occurred_at: report.occurredAt,
      ...(report.carrierStatus === undefined ? {} : { carrier_status: report.carrierStatus }),
    };
    const key = encodeKey(report.reference);
    // a failed write is its writer's to report: this report then takes the bucket's path
    await correlationsInWriting.get(key)?.catch(() => undefined);
    const remembered = correlationMemory().recall(key);
    if (remembered !== null) {
      const receipt = await receiptFor(kept, remembered);
      if (receipt !== null) await publishReceipt(receipt);
      // the part's last word: a copy sent again (its answer lost) is read from the bucket
      if (isFinalPartState(report.state)) correlationMemory().forget(key);
      return;
    }
    for (;;) {
      const { entry, revision } = await readReference(key);
      if (entry !== null && !isEarlyReports(entry)) {
        const receipt = await receiptFor(kept, entry);
        if (receipt !== null) await publishReceipt(receipt);
        return;
      }
      // the carrier can report before it answers the submission: the report is kept under the reference until the
      // correlation replaces it, and published then
      const early: EarlyReports = { reports: [...(entry?.reports ?? []), kept] };
      try {
        await writeReference(key, early, revision);
      } catch (error) {
        if (!isConflict(error)) throw error;
        continue;
      }
      counters.orphansKept++;
      log.info(
        { reference: report.reference, state: report.state },
        'report for an unknown reference kept until its submission is recorded',
      );
      return;
    }
  }

  /**
   * Connectors before 2026-11-26 kept early reports in a bucket of their own (legacyEarlyReportBucket). A connector
   * starting takes each report it finds there as if it arrived now (published if its correlation is written, kept
   * under its reference otherwise), then deletes the bucket: an upgrade that stops the older connectors first loses
   * none of their kept reports. Returns how many it took; a failure leaves the rest for the next start.
   */
  async function adoptLegacyEarlyReports(kvm: Kvm): Promise<number> {
    const name = options.names.bucket(legacyEarlyReportBucket(carrier));
    const jsm = streamManager();
    const exists = await jsm.streams.info(`KV_${name}`).then(
      () => true,
      (error: unknown) => {
        if (error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound) return false;
        throw error;
      },
    );
    if (!exists) return 0;
    const legacy = await kvm.open(name);
    let adopted = 0;
    for await (const key of await legacy.keys()) {
      const kept = fromEntry<EarlyReports>(await legacy.get(key));
      for (const report of kept?.reports ?? []) {
        await onReport({
          reference: report.reference,
          state: report.state,
          carrierError: report.carrier_error,
          occurredAt: report.occurred_at,
          ...(report.carrier_status == null ? {} : { carrierStatus: report.carrier_status }),
        });
        adopted++;
      }
      await legacy.delete(key);
    }
    await legacy.destroy();
    log.info({ bucket: name, reports: adopted }, 'reports kept by an earlier connector version taken, and their bucket deleted');
    return adopted;
  }

  function trackReport(report: CarrierReport): Promise<void> {
    const task = onReport(report);
    reportsInHand.add(task);
    const forget = (): void => {
      reportsInHand.delete(task);
    };
    task.then(forget, forget);
    return task;
  }

  // ---- the correlation memory's change feed ----

  /**
   * How long the memory may keep a correlation: the references bucket's TTL as the server has it (the bucket may
   * have been made by another process with other limits), or this instance's setting when that is shorter.
   */
  async function correlationLifetime(): Promise<number> {
    const { ttl } = await bucket(references).status();
    return ttl > 0 ? Math.min(ttl, recordTtlMs) : recordTtlMs;
  }

  /** The references bucket's writes from now on, revisions only (no values). */
  const openFeed = (): Promise<QueuedIterator<KvWatchEntry>> =>
    bucket(references).watch({ include: KvWatchInclude.UpdatesOnly, headers_only: true });

  /**
   * Follows the references bucket's writes while the instance runs, so the memory drops a correlation another
   * instance wrote over. The memory is trusted only while the feed is followed: when the feed ends it is emptied,
   * and the feed is opened again, from then on. `first`: the feed opened on start (null: it could not be).
   */
  async function followReferences(first: QueuedIterator<KvWatchEntry> | null): Promise<void> {
    const remembered = correlationMemory();
    let watching = first;
    while (isRunning()) {
      if (watching !== null) {
        feed = watching;
        remembered.resume();
        try {
          for await (const change of watching) remembered.observed(change.key, change.revision);
        } catch (error) {
          if (isRunning()) log.warn({ err: error }, 'references feed ended: correlation memory emptied');
        }
        remembered.suspend();
        feed = null;
      }
      if (!isRunning()) return;
      await new Promise<void>((resolve) => {
        setTimeout(resolve, FEED_REOPEN_DELAY_MS).unref();
      });
      if (!isRunning()) return;
      watching = await openFeed().catch(feedNotOpened);
    }
    // opened while the instance stopped
    watching?.stop();
  }

  function feedNotOpened(error: unknown): null {
    log.warn({ err: error }, 'references feed not opened: reports are correlated from the bucket meanwhile');
    return null;
  }

  /**
   * A push feed loses what the server sent while the connection was down, without telling: on a disconnection the
   * memory is emptied and the feed ended (followReferences opens it again).
   */
  async function dropFeedOnDisconnect(): Promise<void> {
    for await (const status of options.nats.status()) {
      if (!isRunning()) return;
      if (status.type !== 'disconnect') continue;
      correlationMemory().suspend();
      feed?.stop();
    }
  }

  // ---- presence and taking jobs ----

  function concurrency(): number {
    if (settings.concurrency !== undefined) return settings.concurrency;
    return Math.max(1, Math.round(link.stats().windowSize * options.weight));
  }

  function setActive(want: boolean): Promise<void> {
    consumerChange = consumerChange.then(async () => {
      if (want && consumer === null && state === 'running') {
        consumer = await transport.consume({
          stream: 'dispatch',
          filter: dispatchSubject(carrier),
          durable: connectorDurable(carrier),
          concurrency: concurrency(),
          ackWaitMs,
          handler: handle,
        });
        log.info('taking jobs');
      } else if (!want && consumer !== null) {
        const stopping = consumer;
        consumer = null;
        await stopping.stop();
        log.info('not taking jobs');
      }
    });
    const change = consumerChange;
    consumerChange = consumerChange.catch(() => undefined);
    return change;
  }

  async function readLiveOfCarrier(now: number): Promise<ConnectorPresence[]> {
    const kv = bucket(presence);
    const keys = await bucketKeys(streamManager(), options.names.bucket(PRESENCE_BUCKET), `${carrier}.*`);
    const entries: ConnectorPresence[] = [];
    for (const key of keys) {
      if (key === presenceKey(carrier, connectorId)) continue;
      const entry = fromEntry<ConnectorPresence>(await kv.get(key));
      if (entry !== null && entry.carrier === carrier) entries.push(entry);
    }
    return liveConnectors(entries, now);
  }

  async function presenceTick(): Promise<void> {
    if (state !== 'running') return;
    const now = clock.now();
    const live = link.isLive();
    let want: boolean;
    try {
      const others = await readLiveOfCarrier(now);
      want = live && shouldTakeJobs(options.priority, others);
    } catch (error) {
      // presence unreadable: keep doing what this instance did (a NATS outage stops jobs anyway)
      log.warn({ err: error }, 'presence not read');
      want = live && active;
    }
    const stats = link.stats();
    const entry: ConnectorPresence = {
      version: 1,
      carrier,
      connector_id: connectorId,
      name: options.name,
      kind: link.kind,
      priority: options.priority,
      weight: options.weight,
      live,
      active: want,
      binds_up: stats.bindsUp,
      binds_total: stats.bindsTotal,
      window_in_use: stats.windowInUse,
      window_size: stats.windowSize,
      submits_per_second: stats.submitsPerSecond,
      updated_at: toIsoUtc(now),
    };
    try {
      await bucket(presence).put(presenceKey(carrier, connectorId), toBytes(entry));
    } catch (error) {
      log.warn({ err: error }, 'presence not written');
    }
    // stop() may have begun while presence was written
    if (!isRunning()) return;
    if (want !== active) log.info({ live, active: want }, want ? 'active: best live priority for the carrier' : 'standing by');
    active = want;
    await setActive(want);
  }

  function refreshPresence(): Promise<void> {
    presenceRound ??= presenceTick()
      .catch((error: unknown) => {
        log.warn({ err: error }, 'presence round failed');
      })
      .finally(() => {
        presenceRound = null;
      });
    return presenceRound;
  }

  return {
    connectorId,

    async start() {
      if (state !== 'idle') throw new Error(`connector runtime cannot start: it is ${state}`);
      const kvm = new Kvm(options.nats);
      streams = await jetstreamManager(options.nats);
      const { names } = options;
      [dispatches, references, presence] = await Promise.all([
        openBucket(kvm, names.bucket(dispatchBucket(carrier)), recordTtlMs),
        openBucket(kvm, names.bucket(referenceBucket(carrier)), recordTtlMs),
        openBucket(kvm, names.bucket(PRESENCE_BUCKET), PRESENCE_TTL_MS),
      ]);
      memory = createCorrelationMemory({ capacity: CORRELATIONS_REMEMBERED, ttlMs: await correlationLifetime(), clock });
      // opened before any job is taken, so the correlations of the first ones are remembered
      const firstFeed = await openFeed().catch(feedNotOpened);
      state = 'running';
      void dropFeedOnDisconnect().catch((error: unknown) => {
        log.warn({ err: error }, 'connection status not followed');
      });
      void followReferences(firstFeed).catch((error: unknown) => {
        correlationMemory().suspend();
        log.error({ err: error }, 'references feed not followed: reports are correlated from the bucket');
      });
      await adoptLegacyEarlyReports(kvm).catch((error: unknown) => {
        log.warn({ err: error }, 'reports kept by an earlier connector version not taken yet (next start)');
      });
      await link.start(trackReport);
      await refreshPresence();
      heartbeat = setInterval(() => {
        void refreshPresence();
      }, presenceIntervalMs);
    },

    async stop() {
      if (state !== 'running') return;
      state = 'stopping';
      if (heartbeat) clearInterval(heartbeat);
      heartbeat = null;
      feed?.stop();
      await presenceRound;
      active = false;
      await setActive(false).catch((error: unknown) => {
        log.warn({ err: error }, 'consumer stop failed');
      });
      await link.stop();
      await Promise.allSettled([...reportsInHand]);
      await bucket(presence)
        .delete(presenceKey(carrier, connectorId))
        .catch((error: unknown) => {
          log.warn({ err: error }, 'presence entry not deleted');
        });
      state = 'stopped';
    },

    refreshPresence,

    stats() {
      return {
        connectorId,
        active,
        live: link.isLive(),
        ...counters,
        correlationsRemembered: memory?.size() ?? 0,
        correlationsSuperseded: memory?.superseded() ?? 0,
      };
    },
  };
}
