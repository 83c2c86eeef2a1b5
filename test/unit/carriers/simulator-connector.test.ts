import { expect } from 'chai';
import sinon from 'sinon';
import {
  checkReceipt,
  checkReceiptBatch,
  dispatchId,
  type DispatchJob,
  type Receipt,
  type ReceiptBatch,
} from '../../../src/carriers/carrier-protocol.js';
import {
  createSimulatorConnector,
  STOP_GRACE_FLOOR_MS,
  type SimulatorConnector,
  type SimulatorConnectorOptions,
} from '../../../src/carriers/simulator/simulator-connector.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import type { ConsumerSpec, Disposition, PublishOptions, Transport } from '../../../src/libraries/transport/transport-port.js';

interface Published {
  readonly subject: string;
  readonly payload: unknown;
  readonly id: string;
}

const isBatch = (payload: unknown): payload is ReceiptBatch => typeof payload === 'object' && payload !== null && 'receipts' in payload;

/** The transport port in memory: records publishes, lets the test deliver jobs and read their dispositions. */
function createFakeTransport() {
  const published: Published[] = [];
  const consumers: { spec: ConsumerSpec; stopped: boolean }[] = [];
  let publishImpl: (p: Published) => Promise<void> = () => Promise.resolve();
  const transport: Transport = {
    kind: 'database',
    async publish(subject: string, payload: unknown, options: PublishOptions) {
      const entry = { subject, payload, id: options.id };
      await publishImpl(entry);
      published.push(entry);
    },
    consume(spec: ConsumerSpec) {
      const entry = { spec, stopped: false };
      consumers.push(entry);
      return Promise.resolve({
        stop: () => {
          entry.stopped = true;
          return Promise.resolve();
        },
      });
    },
    request: () => Promise.reject(new Error('not used')),
    serve: () => Promise.reject(new Error('not used')),
    notify: () => {
      throw new Error('not used');
    },
    listen: () => Promise.reject(new Error('not used')),
    ping: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  return {
    transport,
    published,
    consumers,
    /** Every receipt published, batches opened, in the order they left. */
    receipts: (): Receipt[] => published.flatMap((p) => (isBatch(p.payload) ? p.payload.receipts : [p.payload as Receipt])),
    setPublish(impl: (p: Published) => Promise<void>) {
      publishImpl = impl;
    },
    /** Hands a job to the (single) consumer, as the broker would, and returns what the handler decided. */
    deliver(payload: unknown, deliveryCount = 1): Promise<Disposition> {
      const consumer = consumers[0];
      if (!consumer) throw new Error('nobody consumes');
      const id = typeof payload === 'object' && payload !== null && 'dispatch_id' in payload ? String(payload.dispatch_id) : 'no-id';
      return consumer.spec.handler({ subject: consumer.spec.filter, id, payload, headers: {}, deliveryCount });
    },
  };
}

const START = Date.parse('2025-03-01T10:00:00.000Z');
const DELAYS = { stepDelayMs: 10, slowDelayMs: 1_000 };
/** Longer than any plan with DELAYS (out of order: 6 steps; slow: 3 steps + 1 000 ms). */
const ALL_DONE_MS = 2_000;

function job(ending: string, recipient = 0, overrides: Partial<DispatchJob> = {}): DispatchJob {
  return {
    version: 1,
    dispatch_id: dispatchId('msg_0123456789abcdef', 0, recipient),
    message_id: 'msg_0123456789abcdef',
    occurrence_index: 0,
    recipient_index: recipient,
    to: `+2438123456${ending}`,
    sender_id: 'ACME',
    text: 'Your code is 1234',
    encoding: 'GSM-7',
    segments: 1,
    submitted_at: '2025-03-01T09:59:59.000Z',
    ...overrides,
  };
}

const at = (offsetMs: number): string => new Date(START + offsetMs).toISOString();

describe('simulator connector', () => {
  let timers: sinon.SinonFakeTimers;
  let fake: ReturnType<typeof createFakeTransport>;
  let errors: { error: unknown; context: string }[];
  let connector: SimulatorConnector;

  async function startConnector(options: Partial<SimulatorConnectorOptions> = {}): Promise<void> {
    connector = createSimulatorConnector({
      transport: fake.transport,
      delays: DELAYS,
      clock: createManualClock(START),
      onError: (error, context) => errors.push({ error, context }),
      ...options,
    });
    await connector.start();
  }

  beforeEach(() => {
    timers = sinon.useFakeTimers({ now: START, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
    fake = createFakeTransport();
    errors = [];
  });

  afterEach(() => {
    timers.restore();
  });

  it('when started, then it consumes its carrier subject on the dispatch stream with the shared durable name', async () => {
    await startConnector();
    expect(fake.consumers).to.have.length(1);
    const { handler: _handler, ...spec } = fake.consumers[0]!.spec;
    expect(spec).to.deep.equal({
      stream: 'dispatch',
      filter: 'sms.dispatch.simulator',
      durable: 'connector-simulator',
      concurrency: 64,
      ackWaitMs: 30_000,
    });
  });

  it('when the carrier is named, then it consumes and publishes on that carrier’s subjects', async () => {
    await startConnector({ carrier: 'acme-sandbox' });
    expect(fake.consumers[0]!.spec.filter).to.equal('sms.dispatch.acme-sandbox');
    expect(fake.consumers[0]!.spec.durable).to.equal('connector-acme-sandbox');
    await fake.deliver(job('42'));
    await timers.tickAsync(ALL_DONE_MS);
    expect(new Set(fake.published.map((p) => p.subject))).to.deep.equal(new Set(['sms.receipts.acme-sandbox']));
  });

  it('when the carrier slug is not valid, then it refuses to be created', () => {
    for (const carrier of ['Simulator', 'sim.ulator', 'sim*', '', '-sim']) {
      expect(() => createSimulatorConnector({ transport: fake.transport, delays: DELAYS, carrier }), carrier).to.throw(
        /invalid carrier slug/,
      );
    }
  });

  interface Expected {
    readonly status: Receipt['status'];
    readonly n: number;
    readonly occurredMs: number;
    readonly error_code?: string;
    readonly error_message?: string;
  }
  const e = (status: Receipt['status'], n: number, occurredMs: number, extra: Partial<Expected> = {}): Expected => ({
    status,
    n,
    occurredMs,
    ...extra,
  });
  const S = DELAYS.stepDelayMs;
  const SEQUENCES: Readonly<Record<string, readonly Expected[]>> = {
    '42': [e('processing', 0, 0), e('accepted', 1, S), e('enroute', 2, 2 * S), e('delivered', 3, 3 * S)],
    '90': [e('processing', 0, 0), e('accepted', 1, S), e('undelivered', 2, 2 * S)],
    '91': [e('processing', 0, 0), e('rejected', 1, S)],
    '92': [e('processing', 0, 0), e('accepted', 1, S), e('enroute', 2, 2 * S), e('expired', 3, 3 * S)],
    '93': [e('processing', 0, 0), e('accepted', 1, S), e('delivery_unknown', 2, 2 * S)],
    '94': [e('processing', 0, 0), e('accepted', 1, S), e('partially_delivered', 2, 2 * S)],
    '95': [e('processing', 0, 0), e('failed', 1, S, { error_code: '1502', error_message: 'Subscriber unreachable' })],
    '96': [e('processing', 0, 0), e('failed', 1, S)],
    '97': [e('processing', 0, 0), e('accepted', 1, S)],
    '98': [e('processing', 0, 0), e('accepted', 1, S), e('enroute', 2, 2 * S), e('delivered', 3, 3 * S + 1_000)],
    // the events happened in order (occurred_at), the receipts arrive reversed
    '99': [e('delivered', 0, 3 * S), e('enroute', 1, 2 * S), e('accepted', 2, S), e('processing', 3, 0)],
    '89': [
      e('processing', 0, 0),
      e('processing', 0, 0),
      e('processing', 2, 0),
      e('accepted', 3, S),
      e('accepted', 3, S),
      e('accepted', 5, S),
      e('enroute', 6, 2 * S),
      e('enroute', 6, 2 * S),
      e('enroute', 8, 2 * S),
      e('delivered', 9, 3 * S),
      e('delivered', 9, 3 * S),
      e('delivered', 11, 3 * S),
    ],
  };

  for (const [ending, sequence] of Object.entries(SEQUENCES)) {
    it(`when a job for a number ending in ${ending} is taken, then it publishes ${sequence.map((x) => x.status).join(', ')} as valid receipts`, async () => {
      await startConnector();
      const dispatch = job(ending, 3);

      const disposition = await fake.deliver(dispatch);
      await timers.tickAsync(ALL_DONE_MS);

      expect(disposition).to.deep.equal({ type: 'ack' });
      const expected = sequence.map((x) => {
        const receiptId = `${dispatch.dispatch_id}:${x.n}`;
        const receipt: Receipt = {
          version: 1,
          receipt_id: receiptId,
          dispatch_id: dispatch.dispatch_id,
          status: x.status,
          ...(x.error_code === undefined ? {} : { error_code: x.error_code }),
          ...(x.error_message === undefined ? {} : { error_message: x.error_message }),
          occurred_at: at(x.occurredMs),
        };
        return { subject: 'sms.receipts.simulator', payload: receipt, id: receiptId };
      });
      expect(fake.published).to.deep.equal(expected);
      for (const receipt of fake.receipts()) expect(checkReceipt(receipt)).to.deep.equal({ ok: true, value: receipt });
      expect(errors).to.deep.equal([]);
    });
  }

  it('when time passes, then each receipt is published at its planned delay, not before', async () => {
    await startConnector();
    await fake.deliver(job('98'));
    const statusesAt = async (ms: number): Promise<string[]> => {
      await timers.tickAsync(ms);
      return fake.receipts().map((x) => x.status);
    };

    expect(await statusesAt(0)).to.deep.equal(['processing']);
    expect(await statusesAt(S - 1)).to.deep.equal(['processing']);
    expect(await statusesAt(1)).to.deep.equal(['processing', 'accepted']);
    expect(await statusesAt(S)).to.deep.equal(['processing', 'accepted', 'enroute']);
    expect(await statusesAt(S + 999)).to.deep.equal(['processing', 'accepted', 'enroute']);
    expect(await statusesAt(1)).to.deep.equal(['processing', 'accepted', 'enroute', 'delivered']);
  });

  it('when the same job is delivered again, then it is acknowledged without being sent a second time', async () => {
    await startConnector();
    const dispatch = job('42');

    const first = await fake.deliver(dispatch, 1);
    await timers.tickAsync(S);
    const second = await fake.deliver(dispatch, 2);
    await timers.tickAsync(ALL_DONE_MS);
    const third = await fake.deliver(dispatch, 3);
    await timers.tickAsync(ALL_DONE_MS);

    expect([first, second, third]).to.deep.equal([{ type: 'ack' }, { type: 'ack' }, { type: 'ack' }]);
    expect(fake.receipts().map((x) => x.receipt_id)).to.deep.equal([0, 1, 2, 3].map((n) => `${dispatch.dispatch_id}:${n}`));
    expect([...connector.dispatchesSeen()]).to.deep.equal([[dispatch.dispatch_id, 3]]);
  });

  it('when jobs are delivered, then onDelivery hears each one before its acknowledgement: taken the first time, not after', async () => {
    const heard: [string, boolean][] = [];
    await startConnector({ onDelivery: (dispatchId, taken) => heard.push([dispatchId, taken]) });
    const dispatch = job('42');

    await fake.deliver(dispatch, 1);
    await fake.deliver(dispatch, 2);
    await fake.deliver(job('91', 1));

    expect(heard).to.deep.equal([
      [dispatch.dispatch_id, true],
      [dispatch.dispatch_id, false],
      ['msg_0123456789abcdef:0:1', true],
    ]);
  });

  it('when several jobs are taken, then each dispatch id is counted once and gets its own receipts', async () => {
    await startConnector();
    await Promise.all([fake.deliver(job('42', 0)), fake.deliver(job('91', 1)), fake.deliver(job('97', 2))]);
    await timers.tickAsync(ALL_DONE_MS);

    expect([...connector.dispatchesSeen()].sort()).to.deep.equal([
      ['msg_0123456789abcdef:0:0', 1],
      ['msg_0123456789abcdef:0:1', 1],
      ['msg_0123456789abcdef:0:2', 1],
    ]);
    const ids = fake.receipts().map((x) => x.receipt_id);
    expect(ids).to.have.length(4 + 2 + 2);
    expect(new Set(ids).size).to.equal(ids.length);
  });

  it('when the memory limit is reached, then the oldest dispatch ids are forgotten first', async () => {
    await startConnector({ memoryLimit: 2 });
    for (const recipient of [0, 1, 2]) await fake.deliver(job('42', recipient));
    expect([...connector.dispatchesSeen().keys()]).to.deep.equal(['msg_0123456789abcdef:0:1', 'msg_0123456789abcdef:0:2']);
  });

  const INVALID: Readonly<Record<string, unknown>> = {
    'not an object': 'hello',
    null: null,
    'a missing dispatch_id': (({ dispatch_id: _d, ...rest }) => rest)(job('42')),
    'a number not in E.164': job('42', 0, { to: '0812345642' }),
    'an unknown version': { ...job('42'), version: 2 },
    'an array': [job('42')],
  };
  for (const [what, payload] of Object.entries(INVALID)) {
    it(`when a job has ${what}, then it is dropped, reported and nothing is sent`, async () => {
      await startConnector();

      const disposition = await fake.deliver(payload);
      await timers.tickAsync(ALL_DONE_MS);

      expect(disposition).to.deep.equal({ type: 'drop' });
      expect(fake.published).to.deep.equal([]);
      expect(connector.dispatchesSeen().size).to.equal(0);
      expect(errors).to.have.length(1);
      expect(errors[0]!.context).to.match(/^invalid dispatch job /);
    });
  }

  it('when a job carries a field version 1 does not define yet, then the field is ignored and the job is sent', async () => {
    await startConnector();
    const dispatch = job('42');

    const disposition = await fake.deliver({ ...dispatch, priority: 'high' });
    await timers.tickAsync(ALL_DONE_MS);

    expect(disposition).to.deep.equal({ type: 'ack' });
    expect(fake.receipts().map((x) => x.status)).to.deep.equal(['processing', 'accepted', 'enroute', 'delivered']);
    expect(errors).to.deep.equal([]);
  });

  it('when stopped with receipts still planned, then it stops consuming first and resolves only once they are published', async () => {
    await startConnector();
    await fake.deliver(job('98'));
    await timers.tickAsync(S);
    let stopped = false;

    const stopping = connector.stop().then(() => {
      stopped = true;
    });
    await timers.tickAsync(0);
    expect(fake.consumers[0]!.stopped).to.equal(true);
    expect(stopped).to.equal(false);
    // now at S; delivered is due at 3 S + 1 000
    await timers.tickAsync(3 * S + 1_000 - 1 - S);
    expect(stopped).to.equal(false);
    expect(fake.receipts().map((x) => x.status)).to.deep.equal(['processing', 'accepted', 'enroute']);
    await timers.tickAsync(1);
    await stopping;

    expect(stopped).to.equal(true);
    expect(fake.receipts().map((x) => x.status)).to.deep.equal(['processing', 'accepted', 'enroute', 'delivered']);
    expect(errors).to.deep.equal([]);
  });

  it('when stopped with nothing planned, then it resolves at once', async () => {
    await startConnector();
    await fake.deliver(job('97'));
    await timers.tickAsync(ALL_DONE_MS);
    let stopped = false;

    void connector.stop().then(() => {
      stopped = true;
    });
    await timers.tickAsync(0);

    expect(stopped).to.equal(true);
    expect(fake.consumers[0]!.stopped).to.equal(true);
  });

  it('when a publish hangs at stop, then stop gives up after twice the largest planned delay and reports the lost receipts', async () => {
    await startConnector();
    await fake.deliver(job('98'));
    await timers.tickAsync(0);
    fake.setPublish(() => new Promise<void>(() => undefined));
    await timers.tickAsync(S);
    let stopped = false;

    // still planned: enroute (20 ms) and delivered (1 030 ms) → bound 2 × 1 030 ms
    void connector.stop().then(() => {
      stopped = true;
    });
    await timers.tickAsync(2 * 1_030 - 1);
    expect(stopped).to.equal(false);
    await timers.tickAsync(1);

    expect(stopped).to.equal(true);
    expect(fake.receipts().map((x) => x.status)).to.deep.equal(['processing']);
    expect(errors.map((x) => [String(x.error), x.context])).to.deep.equal([
      ['Error: 3 receipts not published', 'simulator stopped after waiting 2060 ms'],
    ]);
  });

  it('when a publish hangs and every delay is 0, then stop still waits the grace floor', async () => {
    await startConnector({ delays: { stepDelayMs: 0, slowDelayMs: 0 } });
    fake.setPublish(() => new Promise<void>(() => undefined));
    await fake.deliver(job('42'));
    await timers.tickAsync(0);
    let stopped = false;

    void connector.stop().then(() => {
      stopped = true;
    });
    await timers.tickAsync(STOP_GRACE_FLOOR_MS - 1);
    expect(stopped).to.equal(false);
    await timers.tickAsync(1);

    expect(stopped).to.equal(true);
  });

  it('when a publish fails once, then it is retried, reported, and the order of receipts is kept', async () => {
    await startConnector();
    let failures = 1;
    fake.setPublish(() => (failures-- > 0 ? Promise.reject(new Error('broker away')) : Promise.resolve()));

    await fake.deliver(job('42'));
    await timers.tickAsync(ALL_DONE_MS);

    expect(fake.receipts().map((x) => x.status)).to.deep.equal(['processing', 'accepted', 'enroute', 'delivered']);
    expect(errors.map((x) => x.context)).to.deep.equal(['receipt msg_0123456789abcdef:0:0:0 publish failed (attempt 1), retrying']);
  });

  describe('receipt batches', () => {
    // the publisher waits for the check phase (setImmediate) so that receipts falling due in one timers phase leave
    // together; the fake clock must order immediates after the timers of the same instant, as Node does
    beforeEach(() => {
      timers.restore();
      timers = sinon.useFakeTimers({ now: START, toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'Date'] });
    });

    it('when receipts fall due together, then they leave as one batch that validates, under an id made of their receipt ids', async () => {
      await startConnector();
      await Promise.all([0, 1, 2].map((recipient) => fake.deliver(job('42', recipient))));
      // the processing receipts fall due at once; the accepted ones 10 ms later
      await timers.tickAsync(5);

      expect(fake.published).to.have.length(1);
      const [message] = fake.published;
      const checked = checkReceiptBatch(message!.payload);
      expect(checked.ok, JSON.stringify(checked)).to.equal(true);
      const batch = message!.payload as ReceiptBatch;
      expect(batch.receipts.map((r) => [r.dispatch_id, r.status])).to.deep.equal(
        [0, 1, 2].map((i) => [dispatchId('msg_0123456789abcdef', 0, i), 'processing']),
      );
      expect(message!.id)
        .to.equal(batch.batch_id)
        .and.match(/^batch:[0-9a-f]{64}$/);
    });

    it('when more receipts fall due than a batch holds, then they leave in batches of at most receiptBatchMax, in order', async () => {
      await startConnector({ receiptBatchMax: 2 });
      await Promise.all([0, 1, 2, 3, 4].map((recipient) => fake.deliver(job('42', recipient))));
      await timers.tickAsync(ALL_DONE_MS);

      const processing = fake.published
        .slice(0, 3)
        .map((p) =>
          isBatch(p.payload) ? p.payload.receipts.map((r) => r.dispatch_id.slice(-1)) : [(p.payload as Receipt).dispatch_id.slice(-1)],
        );
      expect(processing).to.deep.equal([['0', '1'], ['2', '3'], ['4']]);
      expect(fake.receipts()).to.have.length(20);
      expect(new Set(fake.published.map((p) => p.id)).size, 'every message its own id').to.equal(fake.published.length);
    });

    it('when receiptBatchMax is 1, then every receipt leaves on its own under its receipt id', async () => {
      await startConnector({ receiptBatchMax: 1 });
      await Promise.all([0, 1].map((recipient) => fake.deliver(job('42', recipient))));
      await timers.tickAsync(ALL_DONE_MS);

      expect(fake.published).to.have.length(8);
      for (const message of fake.published) {
        expect(checkReceipt(message.payload).ok).to.equal(true);
        expect(message.id).to.equal((message.payload as Receipt).receipt_id);
      }
    });

    it('when a batch publish fails, then the same batch is published again under the same id', async () => {
      await startConnector();
      const attempts: string[] = [];
      let failures = 1;
      fake.setPublish((p) => {
        attempts.push(p.id);
        return failures-- > 0 ? Promise.reject(new Error('broker away')) : Promise.resolve();
      });
      await Promise.all([0, 1].map((recipient) => fake.deliver(job('42', recipient))));
      await timers.tickAsync(ALL_DONE_MS);

      expect(attempts[0]).to.match(/^batch:/);
      expect(attempts[1]).to.equal(attempts[0]);
      expect(fake.receipts()).to.have.length(8);
    });

    describe('with a linger', () => {
      const statuses = (): [string, string][] => fake.receipts().map((r): [string, string] => [r.dispatch_id.slice(-1), r.status]);

      it('when receipts fall due within the linger, then the first waits for it and they all leave in one message', async () => {
        await startConnector({ receiptLingerMs: 20 });
        await fake.deliver(job('97', 0));
        await timers.tickAsync(5);
        await fake.deliver(job('97', 1));
        // due so far: processing 0 (at 0), processing 1 (at 5), accepted 0 (at 10), accepted 1 (at 15)
        await timers.tickAsync(14);
        expect(fake.published, 'nothing before the linger ends').to.deep.equal([]);

        await timers.tickAsync(2);

        expect(fake.published).to.have.length(1);
        expect(checkReceiptBatch(fake.published[0]!.payload).ok).to.equal(true);
        expect(statuses()).to.deep.equal([
          ['0', 'processing'],
          ['1', 'processing'],
          ['0', 'accepted'],
          ['1', 'accepted'],
        ]);
      });

      it('when a batch fills up, then it leaves at once, and what fell due meanwhile follows without waiting', async () => {
        await startConnector({ receiptLingerMs: 1_000, receiptBatchMax: 2 });
        await Promise.all([0, 1, 2].map((recipient) => fake.deliver(job('42', recipient))));

        await timers.tickAsync(5);

        expect(fake.published.map((p) => (isBatch(p.payload) ? p.payload.receipts.length : 1))).to.deep.equal([2, 1]);
        expect(statuses()).to.deep.equal([
          ['0', 'processing'],
          ['1', 'processing'],
          ['2', 'processing'],
        ]);
      });

      it('when the connector stops, then a receipt waiting for company leaves at once and later ones do not wait', async () => {
        await startConnector({ receiptLingerMs: 1_000 });
        await fake.deliver(job('97'));
        await timers.tickAsync(1);
        expect(fake.published, 'lingering').to.deep.equal([]);

        const stopping = connector.stop();
        await timers.tickAsync(0);
        expect(statuses()).to.deep.equal([['0', 'processing']]);
        await timers.tickAsync(S);
        await stopping;

        expect(statuses()).to.deep.equal([
          ['0', 'processing'],
          ['0', 'accepted'],
        ]);
      });

      it('when receiptLingerMs is negative, not an integer or over 1000, then the connector is not created', () => {
        for (const receiptLingerMs of [-1, 1.5, 1_001]) {
          expect(
            () => createSimulatorConnector({ transport: fake.transport, delays: DELAYS, receiptLingerMs }),
            String(receiptLingerMs),
          ).to.throw(/receiptLingerMs/);
        }
        expect(() => createSimulatorConnector({ transport: fake.transport, delays: DELAYS, receiptLingerMs: 1_000 })).to.not.throw();
      });
    });

    it('when receiptBatchMax is outside 1 to 500, then the connector is not created', () => {
      for (const receiptBatchMax of [0, 501, 1.5]) {
        expect(
          () => createSimulatorConnector({ transport: fake.transport, delays: DELAYS, receiptBatchMax }),
          String(receiptBatchMax),
        ).to.throw(/receiptBatchMax/);
      }
    });
  });

  it('when stopped, then a job handed over late is given back and not taken', async () => {
    await startConnector();
    await connector.stop();

    const disposition = await fake.deliver(job('42'));

    expect(disposition).to.deep.equal({ type: 'retry', delayMs: 0 });
    expect(connector.dispatchesSeen().size).to.equal(0);
  });
});
