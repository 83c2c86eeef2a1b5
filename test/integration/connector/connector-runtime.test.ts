import { expect } from 'chai';
import sinon from 'sinon';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { bucketKeys } from '../../../src/libraries/transport/bucket-keys.js';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import {
  NO_NAMESPACE,
  PRESENCE_BUCKET,
  dispatchBucket,
  dispatchSubject,
  legacyEarlyReportBucket,
  referenceBucket,
} from '../../../src/libraries/transport/nats-names.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { createLogger } from '../../../src/libraries/logger/logger.js';
import { createManualClock, type Clock } from '../../../src/libraries/clock/clock.js';
import { readReceipts, type DispatchJob, type Receipt } from '../../../src/carriers/carrier-protocol.js';
import type { SubmitOutcome } from '../../../src/carriers/connector/carrier-link.js';
import {
  createConnectorRuntime,
  type ConnectorRuntime,
  type ConnectorSettings,
} from '../../../src/carriers/connector/connector-runtime.js';
import type { ConnectorPresence } from '../../../src/carriers/connector/connector-presence.js';
import { encodeKey, type DispatchRecord, type PartRecord } from '../../../src/carriers/connector/connector-records.js';
import { FakeCarrierLink } from '../../helpers/fake-carrier-link.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';

const HEARTBEAT_MS = 250;

async function waitFor<T>(
  what: string,
  probe: () => Promise<T | null | undefined | false> | T | null | undefined | false,
  timeoutMs = 20_000,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== null && value !== undefined && value !== false) return value;
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface KvRequests {
  /** Gets of a bucket's keys (direct or through the stream API): each one a round trip to the server. */
  reads(bucket: string): number;
  /** Puts, creates, updates and deletes of a bucket's keys, refused ones included. */
  writes(bucket: string): number;
  /** Gets of any bucket's keys. */
  allReads(): number;
}

/** Watches the requests a connection sends from now on: every KV operation is one request to the server. */
function countKvRequests(connection: NatsConnection): KvRequests {
  const spy = sinon.spy(connection, 'request');
  const subjects = (): string[] => spy.getCalls().map((call) => call.args[0]);
  return {
    reads: (bucket) =>
      subjects().filter(
        (subject) => subject.startsWith(`$JS.API.DIRECT.GET.KV_${bucket}.`) || subject === `$JS.API.STREAM.MSG.GET.KV_${bucket}`,
      ).length,
    writes: (bucket) => subjects().filter((subject) => subject.startsWith(`$KV.${bucket}.`)).length,
    allReads: () =>
      subjects().filter((subject) => subject.startsWith('$JS.API.DIRECT.GET.KV_') || subject.startsWith('$JS.API.STREAM.MSG.GET.KV_'))
        .length,
  };
}

let jobCounter = 0;
function job(overrides: Partial<DispatchJob> = {}): DispatchJob {
  jobCounter++;
  const messageId = `msg_rt${jobCounter}`;
  return {
    version: 1,
    dispatch_id: `${messageId}:0:0`,
    message_id: messageId,
    occurrence_index: 0,
    recipient_index: 0,
    to: '+243812345601',
    sender_id: 'ACME',
    text: 'Your code is 482913',
    encoding: 'GSM-7',
    segments: 1,
    submitted_at: new Date().toISOString(),
    ...overrides,
  };
}

describe('connector runtime on NATS (fake carrier link)', function () {
  this.timeout(90_000);
  let nats: TestNats;
  /** The gateway's side: it creates the streams, publishes jobs. */
  let gateway: Transport;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const cleanups: (() => Promise<void>)[] = [];

  before(async () => {
    nats = await startTestNats();
    gateway = await connectNatsTransport({ servers: nats.url, name: 'test-gateway' });
    nc = await connectNats({ servers: [nats.url] });
    jsm = await jetstreamManager(nc);
  });

  afterEach(async () => {
    while (cleanups.length > 0)
      await cleanups
        .pop()?.()
        .catch(() => undefined);
  });

  after(async () => {
    await gateway.close();
    await nc.close();
    await nats.stop();
  });

  interface Started {
    readonly runtime: ConnectorRuntime;
    readonly link: FakeCarrierLink;
    /** The connection the runtime opens its buckets on. */
    readonly kv: NatsConnection;
    stop(): Promise<void>;
  }

  async function startConnector(
    carrier: string,
    options: { name?: string; priority?: number; link?: FakeCarrierLink; settings?: ConnectorSettings; clock?: Clock } = {},
  ): Promise<Started> {
    const name = options.name ?? 'fake';
    const link = options.link ?? new FakeCarrierLink(`${name}-ref`);
    const transport = await connectNatsTransport({ servers: nats.url, name: `connector-${name}` });
    const kvConnection = await connectNats({ servers: [nats.url], name: `connector-${name}-kv` });
    const runtime = createConnectorRuntime({
      carrier,
      name,
      priority: options.priority ?? 1,
      weight: 1,
      link,
      nats: kvConnection,
      names: NO_NAMESPACE,
      transport,
      logger: createLogger({ level: 'silent' }),
      ...(options.clock === undefined ? {} : { clock: options.clock }),
      settings: { presenceIntervalMs: HEARTBEAT_MS, ...options.settings },
    });
    await runtime.start();
    let stopped = false;
    const stop = async (): Promise<void> => {
      if (stopped) return;
      stopped = true;
      await runtime.stop();
      await transport.close();
      await kvConnection.close();
    };
    cleanups.push(stop);
    return { runtime, link, kv: kvConnection, stop };
  }

  async function receipts(carrier: string): Promise<Receipt[]> {
    const info = await jsm.streams.info('SMS_RECEIPTS');
    const found: Receipt[] = [];
    for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
      const stored = await jsm.streams.getMessage('SMS_RECEIPTS', { seq }).catch(() => null);
      if (stored?.subject !== `sms.receipts.${carrier}`) continue;
      found.push(...readReceipts(stored.json()).receipts);
    }
    return found;
  }

  const receiptOf = async (carrier: string, dispatchId: string, status: string): Promise<Receipt | undefined> =>
    (await receipts(carrier)).find((r) => r.dispatch_id === dispatchId && r.status === status);

  const waitReceipt = (carrier: string, dispatchId: string, status: string): Promise<Receipt> =>
    waitFor(`${status} receipt for ${dispatchId}`, () => receiptOf(carrier, dispatchId, status));

  async function publishJob(carrier: string, dispatch: DispatchJob, publishId = dispatch.dispatch_id): Promise<void> {
    await gateway.publish(dispatchSubject(carrier), dispatch, { id: publishId });
  }

  it('submits a job, publishes accepted, and turns a delivery report into delivered; the report resolves once the receipt is in the stream', async () => {
    const { link } = await startConnector('rt-basic');
    const dispatch = job();
    await publishJob('rt-basic', dispatch);
    const accepted = await waitReceipt('rt-basic', dispatch.dispatch_id, 'accepted');
    expect(accepted.receipt_id).to.equal(`${dispatch.dispatch_id}:accepted`);
    expect(accepted.carrier_reference).to.be.a('string');
    expect(link.submissionsOf(dispatch.dispatch_id)).to.equal(1);

    await link.report(accepted.carrier_reference ?? '', 'delivered', null, Date.parse('2026-01-01T10:00:04.120Z'));
    // no waiting: the promise resolved, so the receipt is stored already
    const delivered = await receiptOf('rt-basic', dispatch.dispatch_id, 'delivered');
    expect(delivered).to.include({
      receipt_id: `${dispatch.dispatch_id}:${accepted.carrier_reference}:delivered`,
      occurred_at: '2026-01-01T10:00:04.120Z',
    });

    const failing = job();
    await publishJob('rt-basic', failing);
    const acceptedToo = await waitReceipt('rt-basic', failing.dispatch_id, 'accepted');
    await link.report(acceptedToo.carrier_reference ?? '', 'undelivered', '001', Date.now(), 'smpp:UNDELIV err:001');
    const undelivered = await receiptOf('rt-basic', failing.dispatch_id, 'undelivered');
    expect(undelivered?.error_message).to.equal('Undelivered (carrier error 001)');
    // the carrier's own words travel with the receipt, for the recipient's carrier_status
    expect(undelivered?.carrier_status).to.equal('smpp:UNDELIV err:001');
  });

  it('publishes the receipts of reports arriving together as receipt batches, each report resolving once its receipt is stored', async () => {
    const { link } = await startConnector('rt-batch');
    const dispatches = Array.from({ length: 30 }, () => job());
    for (const dispatch of dispatches) await publishJob('rt-batch', dispatch);
    const acceptedReceipts = await waitFor('every accepted receipt', async () => {
      const found = (await receipts('rt-batch')).filter((r) => r.status === 'accepted');
      return found.length === dispatches.length ? found : null;
    });
    const messagesOnSubject = async (): Promise<number> => {
      const info = await jsm.streams.info('SMS_RECEIPTS', { subjects_filter: 'sms.receipts.rt-batch' });
      return info.state.subjects?.['sms.receipts.rt-batch'] ?? 0;
    };
    const before = await messagesOnSubject();
    await Promise.all(acceptedReceipts.map((r) => link.report(r.carrier_reference ?? '', 'delivered')));
    const delivered = (await receipts('rt-batch')).filter((r) => r.status === 'delivered');
    expect(delivered.map((r) => r.dispatch_id)).to.have.members(dispatches.map((d) => d.dispatch_id));
    expect((await messagesOnSubject()) - before).to.be.below(dispatches.length);
  });

  it('publishes rejected with the carrier status when the carrier refuses the message for good', async () => {
    const link = new FakeCarrierLink('rej', {
      decide: () => ({
        kind: 'rejected',
        carrierStatus: 'smpp:0x0000000b ESME_RINVDSTADR',
        message: 'invalid destination',
        acceptedReferences: [],
      }),
    });
    await startConnector('rt-reject', { link });
    const dispatch = job();
    await publishJob('rt-reject', dispatch);
    const rejected = await waitReceipt('rt-reject', dispatch.dispatch_id, 'rejected');
    expect(rejected.error_message).to.equal('Carrier refused the message (smpp:0x0000000b ESME_RINVDSTADR)');
    expect(rejected.carrier_status).to.equal('smpp:0x0000000b ESME_RINVDSTADR');
    expect(rejected.carrier_reference).to.equal(null);
  });

  it('aggregates multi-part reports: all delivered → delivered, some delivered → partially_delivered', async () => {
    const { link } = await startConnector('rt-multi');
    const whole = job({ segments: 3, text: 'x'.repeat(400) });
    const partial = job({ segments: 3, text: 'y'.repeat(400) });
    await publishJob('rt-multi', whole);
    await publishJob('rt-multi', partial);
    await waitReceipt('rt-multi', whole.dispatch_id, 'accepted');
    await waitReceipt('rt-multi', partial.dispatch_id, 'accepted');
    const refsOf = (dispatchId: string): string[] => {
      const index = link.submissions.findIndex((s) => s.dispatch_id === dispatchId);
      return [1, 2, 3].map((n) => `fake-ref-${index * 3 + n}`);
    };
    const [w1, w2, w3] = refsOf(whole.dispatch_id);
    const [p1, p2, p3] = refsOf(partial.dispatch_id);

    await link.report(w1 ?? '', 'delivered');
    expect(await receiptOf('rt-multi', whole.dispatch_id, 'enroute')).to.not.equal(undefined);
    expect(await receiptOf('rt-multi', whole.dispatch_id, 'delivered')).to.equal(undefined);
    // the last two parts' reports arrive together: each must see the other's state
    await Promise.all([link.report(w2 ?? '', 'delivered'), link.report(w3 ?? '', 'delivered')]);
    const delivered = await receiptOf('rt-multi', whole.dispatch_id, 'delivered');
    expect(delivered?.receipt_id).to.equal(`${whole.dispatch_id}:final:delivered`);

    await Promise.all([
      link.report(p1 ?? '', 'delivered'),
      link.report(p2 ?? '', 'undelivered', '027'),
      link.report(p3 ?? '', 'delivered'),
    ]);
    const partially = await receiptOf('rt-multi', partial.dispatch_id, 'partially_delivered');
    expect(partially?.error_message).to.equal('2 of 3 parts delivered; Undelivered (carrier error 027)');
    expect(
      (await receipts('rt-multi')).filter((r) => r.dispatch_id === partial.dispatch_id && r.status === 'partially_delivered'),
    ).to.have.length(1);
  });

  it('keeps a report that comes before the submission is answered, and correlates it once the references are recorded', async () => {
    const link = new FakeCarrierLink('early');
    link.decide = async () => {
      // the message centre sends the delivery report before its submit_sm_resp
      await link.report('early-first', 'delivered', null);
      return { kind: 'accepted', references: ['early-first'] };
    };
    const { runtime } = await startConnector('rt-orphan', { link });
    const dispatch = job();
    await publishJob('rt-orphan', dispatch);
    const delivered = await waitReceipt('rt-orphan', dispatch.dispatch_id, 'delivered');
    expect(delivered.carrier_reference).to.equal('early-first');
    expect(runtime.stats().orphansKept).to.equal(1);
    expect(runtime.stats().orphansResolved).to.equal(1);
  });

  it('correlates a report kept by another instance before the submission was answered, once, when the correlation is written', async () => {
    const carrier = 'rt-orphan-other';
    const submitting = new FakeCarrierLink('early-a');
    const reporting = await startConnector(carrier, { name: 'reporting', priority: 2 });
    let kept: Promise<void> = Promise.resolve();
    submitting.decide = async () => {
      // the message centre sends the delivery report over another bind, to another instance, before its submit_sm_resp
      kept = reporting.link.report('early-other', 'undelivered', '034');
      await kept;
      return { kind: 'accepted', references: ['early-other'] };
    };
    const first = await startConnector(carrier, { name: 'submitting', priority: 1, link: submitting });
    await waitFor('the first instance to take the jobs alone', () => first.runtime.stats().active && !reporting.runtime.stats().active);
    const dispatch = job();
    await publishJob(carrier, dispatch);
    const undelivered = await waitReceipt(carrier, dispatch.dispatch_id, 'undelivered');
    await kept;
    expect(undelivered).to.include({ carrier_reference: 'early-other', error_message: 'Undelivered (carrier error 034)' });
    expect(reporting.runtime.stats().orphansKept).to.equal(1);
    expect(first.runtime.stats().orphansResolved).to.equal(1);
    // a report sent again once the correlation is there is correlated at once, under the same receipt id
    await reporting.link.report('early-other', 'undelivered', '034');
    expect((await receipts(carrier)).filter((r) => r.dispatch_id === dispatch.dispatch_id && r.status === 'undelivered')).to.have.length(1);
    const entry = await (await new Kvm(nc).open(referenceBucket(carrier))).get(encodeKey('early-other'));
    expect(entry?.json()).to.deep.equal({ dispatch_id: dispatch.dispatch_id, part: 0, parts: 1 });
  });

  it('on start, takes the reports an earlier version kept in its own bucket: a correlated one is published, the other kept under its reference, and the old bucket deleted', async () => {
    const carrier = 'rt-legacy';
    // an earlier connector recorded a submission and its correlation, then all its instances were stopped
    const first = await startConnector(carrier, { name: 'first' });
    const dispatch = job();
    await publishJob(carrier, dispatch);
    const accepted = await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    await first.stop();
    // what an earlier version left in its own bucket: a report for that reference, and one for a reference not
    // recorded yet
    const kvm = new Kvm(nc);
    const legacy = await kvm.create(legacyEarlyReportBucket(carrier), { history: 1 });
    const reference = accepted.carrier_reference ?? '';
    const at = Date.parse('2026-11-26T10:00:00Z');
    await legacy.put(
      encodeKey(reference),
      JSON.stringify({ reports: [{ reference, state: 'delivered', carrier_error: null, occurred_at: at }] }),
    );
    const unknown = { reference: 'legacy-unknown', state: 'undelivered', carrier_error: '034', occurred_at: at };
    await legacy.put(encodeKey('legacy-unknown'), JSON.stringify({ reports: [unknown] }));

    const second = await startConnector(carrier, { name: 'second' });
    const delivered = await waitReceipt(carrier, dispatch.dispatch_id, 'delivered');
    expect(delivered).to.include({ carrier_reference: reference, occurred_at: '2026-11-26T10:00:00.000Z' });
    const kept = await (await kvm.open(referenceBucket(carrier))).get(encodeKey('legacy-unknown'));
    expect(kept?.json()).to.deep.equal({ reports: [unknown] });
    expect(second.runtime.stats().orphansKept).to.equal(1);
    const old = await jsm.streams.info(`KV_${legacyEarlyReportBucket(carrier)}`).catch(() => null);
    expect(old, 'the old bucket, deleted').to.equal(null);
    expect(second.link.submissions).to.have.length(0);
  });

  it('correlates late reports for references a stopped connector recorded', async () => {
    const first = await startConnector('rt-restart', { name: 'first' });
    const dispatch = job();
    await publishJob('rt-restart', dispatch);
    const accepted = await waitReceipt('rt-restart', dispatch.dispatch_id, 'accepted');
    await first.stop();

    const second = await startConnector('rt-restart', { name: 'second' });
    await second.link.report(accepted.carrier_reference ?? '', 'expired', null);
    expect(await receiptOf('rt-restart', dispatch.dispatch_id, 'expired')).to.not.equal(undefined);
    expect(second.link.submissions).to.have.length(0);
  });

  it('acknowledges a job published again after it was submitted, without sending it again', async () => {
    const { link, runtime } = await startConnector('rt-redeliver');
    const dispatch = job();
    await publishJob('rt-redeliver', dispatch);
    await waitReceipt('rt-redeliver', dispatch.dispatch_id, 'accepted');
    // the gateway republishing after its duplicate window: a new message id, the same dispatch id
    await publishJob('rt-redeliver', dispatch, `${dispatch.dispatch_id}-again`);
    await waitFor('the copy to be settled', () => runtime.stats().jobsSkipped >= 1);
    expect(link.submissionsOf(dispatch.dispatch_id)).to.equal(1);
    // the copy's acknowledgement reaches the server just after the runtime counts it skipped
    let outstanding = -1;
    await waitFor('the copy acknowledged on the server', async () => {
      const consumer = await jsm.consumers.info('SMS_DISPATCH', 'connector-rt-redeliver');
      outstanding = consumer.num_ack_pending + consumer.num_pending;
      return outstanding === 0;
    });
    expect(outstanding).to.equal(0);
  });

  async function writeRecord(carrier: string, dispatchId: string, record: DispatchRecord): Promise<void> {
    const kv = await new Kvm(nc).open(dispatchBucket(carrier));
    await kv.put(encodeKey(dispatchId), JSON.stringify(record));
  }

  it('hands back a job another instance is submitting right now, and sends it once that instance released it', async () => {
    const { link, runtime } = await startConnector('rt-busy', { settings: { ackWaitMs: 2_000 } });
    const dispatch = job();
    await writeRecord('rt-busy', dispatch.dispatch_id, {
      version: 1,
      state: 'submitting',
      instance: 'other-1',
      claimed_at: Date.now(),
      renewed_at: Date.now(),
    });
    await publishJob('rt-busy', dispatch);
    await waitFor('the job to be seen', async () => {
      const consumer = await jsm.consumers.info('SMS_DISPATCH', 'connector-rt-busy');
      return consumer.delivered.consumer_seq >= 1;
    });
    await sleep(500);
    expect(link.submissions).to.have.length(0);
    // the other instance's link answered `retry`: it deletes its record
    const kv = await new Kvm(nc).open(dispatchBucket('rt-busy'));
    await kv.delete(encodeKey(dispatch.dispatch_id));
    await waitReceipt('rt-busy', dispatch.dispatch_id, 'accepted');
    expect(link.submissionsOf(dispatch.dispatch_id)).to.equal(1);
    expect(runtime.stats().jobsSkipped).to.equal(0);
  });

  it('does not send again a job whose instance died while submitting it (hold), unless told to resend', async () => {
    const held = await startConnector('rt-stale', { name: 'held', settings: { uncertainSubmission: 'hold' } });
    const dispatch = job();
    const longAgo = Date.now() - 120_000;
    await writeRecord('rt-stale', dispatch.dispatch_id, {
      version: 1,
      state: 'submitting',
      instance: 'dead-1',
      claimed_at: longAgo,
      renewed_at: longAgo,
    });
    await publishJob('rt-stale', dispatch);
    await waitFor('the job to be acknowledged', () => held.runtime.stats().jobsSkipped === 1);
    expect(held.link.submissions).to.have.length(0);
    await held.stop();

    const resending = await startConnector('rt-stale', { name: 'resending', settings: { uncertainSubmission: 'resend' } });
    const another = job();
    await writeRecord('rt-stale', another.dispatch_id, {
      version: 1,
      state: 'submitting',
      instance: 'dead-2',
      claimed_at: longAgo,
      renewed_at: longAgo,
    });
    await publishJob('rt-stale', another);
    await waitReceipt('rt-stale', another.dispatch_id, 'accepted');
    expect(resending.link.submissionsOf(another.dispatch_id)).to.equal(1);
  });

  it('acknowledges a stale job (dispatched more than 24 h ago) and drops an invalid one, sending neither', async () => {
    const { link, runtime } = await startConnector('rt-invalid');
    await publishJob('rt-invalid', job({ submitted_at: new Date(Date.now() - 25 * 3_600_000).toISOString() }));
    await gateway.publish(dispatchSubject('rt-invalid'), { version: 1, dispatch_id: 'nope' }, { id: 'invalid-1' });
    await waitFor('both jobs settled', () => runtime.stats().jobsSkipped === 1 && runtime.stats().jobsInvalid === 1);
    expect(link.submissions).to.have.length(0);
    await waitFor('the stream to hold nothing for the carrier', async () => {
      const stored = await jsm.streams.info('SMS_DISPATCH', { subjects_filter: 'sms.dispatch.rt-invalid' });
      return (stored.state.subjects?.['sms.dispatch.rt-invalid'] ?? 0) === 0;
    });
  });

  it('does not send twice a submission slower than the ack wait: its instance keeps the record fresh', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const slowLink = new FakeCarrierLink('slow');
    slowLink.decide = async (dispatch) => {
      await released;
      return slowLink.accept(dispatch.segments);
    };
    const slow = await startConnector('rt-slow', {
      name: 'slow',
      link: slowLink,
      settings: { ackWaitMs: 1_000, uncertainSubmission: 'resend' },
    });
    const other = await startConnector('rt-slow', { name: 'other', settings: { ackWaitMs: 1_000, uncertainSubmission: 'resend' } });
    const dispatch = job();
    await publishJob('rt-slow', dispatch);
    await waitFor('the slow link to have it', () => slowLink.submissions.length === 1 || other.link.submissions.length === 1);
    const slowHasIt = slowLink.submissions.length === 1;
    // JetStream redelivers it after the ack wait, several times meanwhile
    await waitFor('a redelivery', async () => {
      const consumer = await jsm.consumers.info('SMS_DISPATCH', 'connector-rt-slow');
      return consumer.num_redelivered >= 1 || consumer.delivered.consumer_seq >= 2;
    });
    await sleep(1_500);
    release();
    await waitReceipt('rt-slow', dispatch.dispatch_id, 'accepted');
    await waitFor('the job to be settled', async () => {
      const consumer = await jsm.consumers.info('SMS_DISPATCH', 'connector-rt-slow');
      return consumer.num_ack_pending + consumer.num_pending === 0;
    });
    expect(slowLink.submissions.length + other.link.submissions.length).to.equal(1);
    if (!slowHasIt) expect(other.link.submissions).to.have.length(1);
    expect(slow.runtime.stats().jobsTaken + other.runtime.stats().jobsTaken).to.equal(1);
  });

  async function settled(carrier: string): Promise<void> {
    await waitFor(`the jobs of ${carrier} to be settled`, async () => {
      const consumer = await jsm.consumers.info('SMS_DISPATCH', `connector-${carrier}`);
      return consumer.num_ack_pending + consumer.num_pending === 0;
    });
  }

  async function storedRecord(carrier: string, dispatchId: string): Promise<DispatchRecord | null> {
    const entry = await (await new Kvm(nc).open(dispatchBucket(carrier))).get(encodeKey(dispatchId));
    return entry?.operation === 'PUT' ? entry.json<DispatchRecord>() : null;
  }

  it('takes and records a fresh dispatch without reading its record: a create before the submission, an update of the revision it wrote after', async () => {
    const carrier = 'rt-kv-fresh';
    const { kv } = await startConnector(carrier);
    const requests = countKvRequests(kv);
    const dispatch = job();
    await publishJob(carrier, dispatch);
    const accepted = await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    await settled(carrier);
    expect(requests.reads(dispatchBucket(carrier))).to.equal(0);
    expect(requests.writes(dispatchBucket(carrier))).to.equal(2);
    // the correlation is created where a report the carrier sent before answering would be kept: nothing to read
    expect(requests.writes(referenceBucket(carrier))).to.equal(1);
    expect(requests.allReads()).to.equal(0);
    expect(await storedRecord(carrier, dispatch.dispatch_id)).to.deep.include({
      state: 'submitted',
      references: [accepted.carrier_reference],
    });
  });

  it('correlates a report for a reference it recorded itself without reading it; a copy after the final one is read', async () => {
    const carrier = 'rt-kv-report';
    const { kv, link } = await startConnector(carrier);
    const dispatch = job();
    await publishJob(carrier, dispatch);
    const accepted = await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    await settled(carrier);
    const requests = countKvRequests(kv);
    await link.report(accepted.carrier_reference ?? '', 'enroute');
    await link.report(accepted.carrier_reference ?? '', 'delivered');
    expect(await receiptOf(carrier, dispatch.dispatch_id, 'enroute')).to.not.equal(undefined);
    expect(await receiptOf(carrier, dispatch.dispatch_id, 'delivered')).to.not.equal(undefined);
    expect(requests.allReads()).to.equal(0);
    // the centre sends the final report again (its answer was lost): correlated from the bucket, the same receipt id
    await link.report(accepted.carrier_reference ?? '', 'delivered');
    expect(requests.reads(referenceBucket(carrier))).to.equal(1);
    expect((await receipts(carrier)).filter((r) => r.dispatch_id === dispatch.dispatch_id && r.status === 'delivered')).to.have.length(1);
  });

  it('reads the bucket for a correlation it remembers once the bucket would have dropped it (the TTL the server has for the bucket)', async () => {
    const carrier = 'rt-kv-report-ttl';
    const ttlMs = 120_000;
    // the bucket was made by another process with a shorter TTL than this instance's setting: the server's counts
    await new Kvm(nc).create(referenceBucket(carrier), { history: 1, ttl: ttlMs });
    const clock = createManualClock(Date.now());
    const { kv, link } = await startConnector(carrier, { clock });
    const dispatch = job();
    await publishJob(carrier, dispatch);
    const accepted = await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    await settled(carrier);
    const requests = countKvRequests(kv);
    clock.advance(ttlMs - 1_000);
    await link.report(accepted.carrier_reference ?? '', 'enroute');
    expect(requests.reads(referenceBucket(carrier))).to.equal(0);
    clock.advance(1_000);
    await link.report(accepted.carrier_reference ?? '', 'delivered');
    expect(requests.reads(referenceBucket(carrier))).to.equal(1);
    expect(await receiptOf(carrier, dispatch.dispatch_id, 'delivered')).to.include({ carrier_reference: accepted.carrier_reference });
  });

  it('correlates a report for an id the carrier gave again through another instance to the new dispatch, on the instance that wrote the old one', async () => {
    const carrier = 'rt-kv-report-reused';
    // the centre gives both submissions the same message id
    const sameId = (): SubmitOutcome => ({ kind: 'accepted', references: ['reused-1'] });
    const first = await startConnector(carrier, { name: 'first', priority: 1, link: new FakeCarrierLink('first', { decide: sameId }) });
    const second = await startConnector(carrier, { name: 'second', priority: 2, link: new FakeCarrierLink('second', { decide: sameId }) });
    await waitFor('the first instance to take the jobs alone', () => first.runtime.stats().active && !second.runtime.stats().active);
    const old = job();
    await publishJob(carrier, old);
    await waitReceipt(carrier, old.dispatch_id, 'accepted');
    await settled(carrier);
    // no final report came for the old message; the second instance takes the next one
    first.link.live = false;
    await waitFor('the second instance to take the jobs', () => second.runtime.stats().active && !first.runtime.stats().active);
    const latest = job();
    await publishJob(carrier, latest);
    await waitReceipt(carrier, latest.dispatch_id, 'accepted');
    await settled(carrier);
    await waitFor('the first instance to drop the old correlation', () => first.runtime.stats().correlationsSuperseded === 1);
    expect(first.runtime.stats().correlationsRemembered).to.equal(0);

    // the centre reports the new message over a bind of the first instance
    const requests = countKvRequests(first.kv);
    await first.link.report('reused-1', 'delivered');
    expect(await receiptOf(carrier, latest.dispatch_id, 'delivered')).to.include({ carrier_reference: 'reused-1' });
    expect(await receiptOf(carrier, old.dispatch_id, 'delivered')).to.equal(undefined);
    expect(requests.reads(referenceBucket(carrier))).to.equal(1);
  });

  it('correlates a report that comes while the correlation is being written once it is written, keeping nothing in the bucket', async () => {
    const carrier = 'rt-kv-report-early';
    const link = new FakeCarrierLink('kv-early');
    const { kv, runtime } = await startConnector(carrier, { link });
    const request = kv.request.bind(kv);
    const subjects: string[] = [];
    const reported: Promise<void>[] = [];
    sinon.stub(kv, 'request').callsFake((subject, payload, options) => {
      subjects.push(subject);
      const prefix = `$KV.${referenceBucket(carrier)}.`;
      // the centre reports the part just as the connector sends its correlation to the bucket
      if (reported.length === 0 && subject.startsWith(prefix)) reported.push(link.report(subject.slice(prefix.length), 'delivered'));
      return request(subject, payload, options);
    });
    const dispatch = job();
    await publishJob(carrier, dispatch);
    const delivered = await waitReceipt(carrier, dispatch.dispatch_id, 'delivered');
    await Promise.all(reported);
    await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    expect(delivered.carrier_reference).to.equal('kv-early-1');
    expect(runtime.stats().orphansKept).to.equal(0);
    expect(subjects.filter((subject) => subject.startsWith(`$KV.${referenceBucket(carrier)}.`))).to.have.length(1);
    expect(
      subjects.filter((subject) => subject.startsWith('$JS.API.DIRECT.GET.') || subject.startsWith('$JS.API.STREAM.MSG.GET.')),
    ).to.have.length(0);
  });

  it('publishes accepted and records the submission without waiting for the correlation to be written', async () => {
    const carrier = 'rt-kv-together';
    const { kv, link } = await startConnector(carrier);
    const request = kv.request.bind(kv);
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    sinon.stub(kv, 'request').callsFake(async (subject, payload, options) => {
      // the bucket of correlations answers slowly
      if (subject.startsWith(`$KV.${referenceBucket(carrier)}.`)) await released;
      return request(subject, payload, options);
    });
    const dispatch = job();
    await publishJob(carrier, dispatch);
    // the correlation is still held back while both of these are seen
    const accepted = await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    const reference = accepted.carrier_reference ?? '';
    const record = await storedRecord(carrier, dispatch.dispatch_id);
    release();
    expect(record).to.deep.include({ state: 'submitted', references: [reference] });
    await settled(carrier);
    const entry = await (await new Kvm(nc).open(referenceBucket(carrier))).get(encodeKey(reference));
    expect(entry?.json()).to.deep.equal({ dispatch_id: dispatch.dispatch_id, part: 0, parts: 1 });
    expect(link.submissionsOf(dispatch.dispatch_id)).to.equal(1);
  });

  it('writes the correlation of a job that comes again with its submission recorded and its correlation missing', async () => {
    const carrier = 'rt-kv-mend';
    const { link, runtime } = await startConnector(carrier);
    const dispatch = job();
    // the instance that submitted it stopped after recording the submission, before the correlation was written
    await writeRecord(carrier, dispatch.dispatch_id, {
      version: 1,
      state: 'submitted',
      references: ['mend-ref'],
      submitted_at: Date.now(),
    });
    await publishJob(carrier, dispatch);
    await waitFor('the job to be settled', () => runtime.stats().jobsSkipped === 1);
    await settled(carrier);
    expect(link.submissionsOf(dispatch.dispatch_id)).to.equal(0);
    await link.report('mend-ref', 'delivered');
    expect(await receiptOf(carrier, dispatch.dispatch_id, 'delivered')).to.include({ carrier_reference: 'mend-ref' });
    expect(runtime.stats().orphansKept).to.equal(0);
  });

  it('records a refusal without reading the record it claimed', async () => {
    const carrier = 'rt-kv-reject';
    const link = new FakeCarrierLink('kv-rej', {
      decide: () => ({ kind: 'rejected', carrierStatus: 'smpp:0x00000045 ESME_RSUBMITFAIL', message: 'no', acceptedReferences: [] }),
    });
    const { kv } = await startConnector(carrier, { link });
    const requests = countKvRequests(kv);
    const dispatch = job();
    await publishJob(carrier, dispatch);
    await waitReceipt(carrier, dispatch.dispatch_id, 'rejected');
    await settled(carrier);
    expect(requests.reads(dispatchBucket(carrier))).to.equal(0);
    expect(requests.writes(dispatchBucket(carrier))).to.equal(2);
    expect(await storedRecord(carrier, dispatch.dispatch_id)).to.include({ state: 'rejected' });
  });

  it('releases a record it claimed without reading it, and claims it again over its deletion', async () => {
    const carrier = 'rt-kv-release';
    let attempts = 0;
    const link = new FakeCarrierLink('kv-release');
    link.decide = (dispatch) => {
      attempts++;
      return attempts === 1 ? { kind: 'retry', delayMs: 200, reason: 'throttled' } : link.accept(dispatch.segments);
    };
    const { kv, runtime } = await startConnector(carrier, { link });
    const requests = countKvRequests(kv);
    const dispatch = job();
    await publishJob(carrier, dispatch);
    await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    await settled(carrier);
    expect(link.submissionsOf(dispatch.dispatch_id)).to.equal(2);
    expect(runtime.stats().jobsRetried).to.equal(1);
    // @nats-io/kv's create writes over a deleted key's marker once it read the marker's revision: that read is the
    // only one left on this path
    expect(requests.reads(dispatchBucket(carrier))).to.be.at.most(1);
  });

  it('renews the record of a slow submission without reading it', async () => {
    const carrier = 'rt-kv-renew';
    const link = new FakeCarrierLink('kv-renew');
    let requests: KvRequests | null = null;
    const renewed = (): boolean => (requests?.writes(dispatchBucket(carrier)) ?? 0) >= 2;
    link.decide = async (dispatch) => {
      // the claim's create, then one renewal (a third of the ack wait later)
      await waitFor('a renewal of the record', renewed);
      return link.accept(dispatch.segments);
    };
    const started = await startConnector(carrier, { link, settings: { ackWaitMs: 3_000, concurrency: 1 } });
    requests = countKvRequests(started.kv);
    const dispatch = job();
    await publishJob(carrier, dispatch);
    await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    await settled(carrier);
    expect(link.submissionsOf(dispatch.dispatch_id)).to.equal(1);
    expect(requests.writes(dispatchBucket(carrier))).to.be.at.least(3);
    expect(requests.reads(dispatchBucket(carrier))).to.equal(0);
  });

  it('keeps what another writer added to the record during the submission: the update of the known revision is refused, the record read again', async () => {
    const carrier = 'rt-kv-moved';
    const earlierReport: PartRecord = { state: 'delivered', carrier_error: null, occurred_at: Date.parse('2026-01-01T10:00:00Z') };
    const link = new FakeCarrierLink('kv-moved');
    link.decide = async (dispatch) => {
      // a report for a part an earlier attempt submitted lands on the record meanwhile
      const record = await storedRecord(carrier, dispatch.dispatch_id);
      if (record?.state !== 'submitting') throw new Error('no submitting record');
      await writeRecord(carrier, dispatch.dispatch_id, { ...record, parts: [earlierReport] });
      return link.accept(dispatch.segments);
    };
    const { kv } = await startConnector(carrier, { link });
    const requests = countKvRequests(kv);
    const dispatch = job();
    await publishJob(carrier, dispatch);
    const accepted = await waitReceipt(carrier, dispatch.dispatch_id, 'accepted');
    await settled(carrier);
    expect(await storedRecord(carrier, dispatch.dispatch_id)).to.deep.include({
      state: 'submitted',
      references: [accepted.carrier_reference],
      parts: [earlierReport],
    });
    expect(requests.reads(dispatchBucket(carrier))).to.equal(1);
  });

  it('on stop, finishes the submission in hand before stopping the link, and removes its presence entry', async () => {
    let release: () => void = () => undefined;
    const released = new Promise<void>((resolve) => {
      release = resolve;
    });
    const link = new FakeCarrierLink('stopping');
    link.decide = async (dispatch) => {
      await released;
      return link.accept(dispatch.segments);
    };
    const started = await startConnector('rt-stop', { link });
    const { runtime } = started;
    const dispatch = job();
    await publishJob('rt-stop', dispatch);
    await waitFor('the submission in hand', () => link.submissions.length === 1);
    let stopped = false;
    const stopping = started.stop().then(() => {
      stopped = true;
    });
    await sleep(300);
    expect(stopped).to.equal(false);
    expect(link.stopped).to.equal(false);
    release();
    await stopping;
    expect(link.stopped).to.equal(true);
    expect(await receiptOf('rt-stop', dispatch.dispatch_id, 'accepted')).to.not.equal(undefined);
    const consumer = await jsm.consumers.info('SMS_DISPATCH', 'connector-rt-stop');
    expect(consumer.num_ack_pending + consumer.num_pending).to.equal(0);
    const kv = await new Kvm(nc).open(PRESENCE_BUCKET);
    const entry = await kv.get(`rt-stop.${runtime.connectorId}`);
    expect(entry === null || entry.operation !== 'PUT').to.equal(true);
  });

  it('hands a job back when the link cannot submit, and another connector takes it once the first is not live', async () => {
    const firstLink = new FakeCarrierLink('down');
    firstLink.decide = () => {
      // the bind drops during the submission
      firstLink.live = false;
      return { kind: 'retry', delayMs: 200, reason: 'bind lost' };
    };
    const first = await startConnector('rt-retry', { name: 'primary', priority: 1, link: firstLink });
    const second = await startConnector('rt-retry', { name: 'standby', priority: 2 });
    await waitFor('the primary to be active alone', () => first.runtime.stats().active && !second.runtime.stats().active);
    const dispatch = job();
    await publishJob('rt-retry', dispatch);
    const accepted = await waitReceipt('rt-retry', dispatch.dispatch_id, 'accepted');
    expect(firstLink.submissionsOf(dispatch.dispatch_id)).to.equal(1);
    expect(second.link.submissionsOf(dispatch.dispatch_id)).to.equal(1);
    expect(accepted.carrier_reference).to.match(/^standby-ref-/);
    expect(first.runtime.stats().jobsRetried).to.equal(1);
  });

  it('sends again a job whose submission the carrier left unanswered (resend, the default), and holds it with hold', async () => {
    let firstAttempt = true;
    const unanswered =
      (link: FakeCarrierLink) =>
      (dispatch: DispatchJob): SubmitOutcome => {
        if (firstAttempt) {
          firstAttempt = false;
          return { kind: 'retry', delayMs: 200, reason: 'submit_sm unanswered', uncertain: true };
        }
        return link.accept(dispatch.segments);
      };
    const resendLink = new FakeCarrierLink('resend');
    resendLink.decide = unanswered(resendLink);
    const resending = await startConnector('rt-uncertain', { name: 'resending', link: resendLink });
    const dispatch = job();
    await publishJob('rt-uncertain', dispatch);
    await waitReceipt('rt-uncertain', dispatch.dispatch_id, 'accepted');
    expect(resendLink.submissionsOf(dispatch.dispatch_id)).to.equal(2);
    await resending.stop();

    firstAttempt = true;
    const holdLink = new FakeCarrierLink('hold');
    holdLink.decide = unanswered(holdLink);
    const holding = await startConnector('rt-uncertain', { name: 'holding', link: holdLink, settings: { uncertainSubmission: 'hold' } });
    const another = job();
    await publishJob('rt-uncertain', another);
    await waitFor('the job to be held', () => holding.runtime.stats().jobsSkipped === 1);
    await sleep(1_000);
    expect(holdLink.submissionsOf(another.dispatch_id)).to.equal(1);
    expect(holding.runtime.stats().jobsRetried).to.equal(0);
  });

  it('gives the jobs to the live connector of the best priority, fails over when its link goes down, and keeps jobs while none is live', async () => {
    const primary = await startConnector('rt-failover', { name: 'primary', priority: 1 });
    const standby = await startConnector('rt-failover', { name: 'standby', priority: 2 });
    await waitFor('presence to settle', () => primary.runtime.stats().active && !standby.runtime.stats().active);
    const firstBatch = [job(), job(), job(), job()];
    for (const dispatch of firstBatch) await publishJob('rt-failover', dispatch);
    for (const dispatch of firstBatch) await waitReceipt('rt-failover', dispatch.dispatch_id, 'accepted');
    expect(primary.link.submissions).to.have.length(4);
    expect(standby.link.submissions).to.have.length(0);

    primary.link.live = false;
    await waitFor('the standby to take over', () => standby.runtime.stats().active && !primary.runtime.stats().active);
    const secondBatch = [job(), job()];
    for (const dispatch of secondBatch) await publishJob('rt-failover', dispatch);
    for (const dispatch of secondBatch) await waitReceipt('rt-failover', dispatch.dispatch_id, 'accepted');
    expect(standby.link.submissions.map((s) => s.dispatch_id)).to.have.members(secondBatch.map((d) => d.dispatch_id));

    standby.link.live = false;
    await waitFor('nobody to be active', () => !standby.runtime.stats().active && !primary.runtime.stats().active);
    const waiting = job();
    await publishJob('rt-failover', waiting);
    await sleep(4 * HEARTBEAT_MS);
    expect(await receiptOf('rt-failover', waiting.dispatch_id, 'accepted')).to.equal(undefined);
    const stored = await jsm.streams.info('SMS_DISPATCH', { subjects_filter: 'sms.dispatch.rt-failover' });
    expect(stored.state.subjects?.['sms.dispatch.rt-failover']).to.equal(1);

    primary.link.live = true;
    await waitReceipt('rt-failover', waiting.dispatch_id, 'accepted');
    expect(primary.link.submissionsOf(waiting.dispatch_id)).to.equal(1);
    expect(standby.link.submissionsOf(waiting.dispatch_id)).to.equal(0);
  });

  it('rejects a report it cannot publish (the carrier sends it again), and publishes it when sent again', async () => {
    const { link, runtime } = await startConnector('rt-outage');
    const dispatch = job();
    await publishJob('rt-outage', dispatch);
    const accepted = await waitReceipt('rt-outage', dispatch.dispatch_id, 'accepted');
    await settled('rt-outage');
    expect(runtime.stats().correlationsRemembered).to.equal(1);
    await nats.stopServer();
    // the bucket's writes meanwhile are not seen: what it remembers can no longer be trusted
    await waitFor('the correlation memory to be emptied', () => runtime.stats().correlationsRemembered === 0);
    let failure: unknown = null;
    try {
      await link.report(accepted.carrier_reference ?? '', 'delivered');
    } catch (error) {
      failure = error;
    } finally {
      await nats.startServer();
    }
    expect(failure).to.be.instanceOf(Error);
    await waitFor(
      'the report to go through once NATS is back',
      async () => {
        try {
          await link.report(accepted.carrier_reference ?? '', 'delivered');
          return true;
        } catch {
          return false;
        }
      },
      60_000,
    );
    expect(await receiptOf('rt-outage', dispatch.dispatch_id, 'delivered')).to.not.equal(undefined);
    // the bucket's writes are followed again: the correlations written from then on are remembered
    await waitFor(
      'a correlation remembered again',
      async () => {
        const another = job();
        await publishJob('rt-outage', another);
        await waitReceipt('rt-outage', another.dispatch_id, 'accepted');
        await settled('rt-outage');
        return runtime.stats().correlationsRemembered > 0;
      },
      60_000,
    );
  });

  it('announces itself in the presence bucket and removes its entry on stop', async () => {
    const one = await startConnector('rt-presence', { name: 'one', priority: 1 });
    const two = await startConnector('rt-presence', { name: 'two', priority: 3 });
    const kv = await new Kvm(nc).open(PRESENCE_BUCKET);
    const entries = async (): Promise<ConnectorPresence[]> => {
      const found: ConnectorPresence[] = [];
      for (const key of await bucketKeys(jsm, PRESENCE_BUCKET, 'rt-presence.*')) {
        const entry = await kv.get(key);
        if (entry?.operation === 'PUT') found.push(entry.json<ConnectorPresence>());
      }
      return found;
    };
    const both = await waitFor('two presence entries', async () => {
      const found = await entries();
      return found.length === 2 && found.every((e) => e.live) ? found : null;
    });
    const byName = new Map(both.map((e) => [e.name, e]));
    expect(byName.get('one')).to.include({
      carrier: 'rt-presence',
      kind: 'fake',
      priority: 1,
      active: true,
      connector_id: one.runtime.connectorId,
    });
    expect(byName.get('two')).to.include({ priority: 3, active: false, connector_id: two.runtime.connectorId });
    await one.stop();
    await waitFor('the entry of the stopped connector to go', async () => {
      const found = await entries();
      return found.length === 1 && found[0]?.name === 'two' ? found : null;
    });
    await waitFor('the remaining connector to take the jobs', () => two.runtime.stats().active);
  });

  it('reads the presence of its carrier in one request per round, through no consumer, while the others keep writing theirs', async () => {
    // a key listing made by a consumer follows the writes it meets and can go on while they do: a round waited for
    // good on one, so the standby never took over and could not stop
    const primary = await startConnector('rt-presence-read', { name: 'primary', priority: 1 });
    const standby = await startConnector('rt-presence-read', { name: 'standby', priority: 2 });
    await waitFor('presence to settle', () => primary.runtime.stats().active && !standby.runtime.stats().active);
    // a heartbeat's round under way would be joined and counted in part: once it ends, none is under way
    await standby.runtime.refreshPresence();
    const spy = sinon.spy(standby.kv, 'request');
    for (let round = 0; round < 5; round++) await standby.runtime.refreshPresence();
    const subjects = spy.getCalls().map((call) => call.args[0]);
    spy.restore();
    expect(
      subjects.filter((subject) => subject.startsWith('$JS.API.CONSUMER.')),
      'no consumer made to read presence',
    ).to.deep.equal([]);
    expect(subjects.filter((subject) => subject === `$JS.API.STREAM.INFO.KV_${PRESENCE_BUCKET}`)).to.have.length(5);

    primary.link.live = false;
    await waitFor('the standby to take over', () => standby.runtime.stats().active && !primary.runtime.stats().active);
  });
});
