import { expect } from 'chai';
import {
  ACK,
  DROP,
  retryAfter,
  type Consumer,
  type ConsumerSpec,
  type Delivery,
  type Disposition,
  type Transport,
} from '../../../src/libraries/transport/transport-port.js';
import { NoResponderError, RequestTimeoutError } from '../../../src/libraries/errors/internal-errors.js';

/**
 * The contract both transports pass (NATS JetStream, database bus). `open` may be called several times in a test:
 * each call is another "process" on the same broker or database. `reset` empties the backend before each test.
 */
export interface TransportFixture {
  open(): Promise<Transport>;
  reset(): Promise<void>;
}

/** Polls until `condition` holds; fails with `what` after the deadline. */
export async function waitUntil(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await pause(10);
  }
}

export const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Received extends Delivery {
  readonly at: number;
}

/** A handler that records what it receives and answers with `decide` (ACK by default). */
export function recorder(decide: (delivery: Delivery, seen: readonly Received[]) => Disposition | Promise<Disposition> = () => ACK) {
  const received: Received[] = [];
  return {
    received,
    ids: () => received.map((d) => d.id),
    handler: async (delivery: Delivery): Promise<Disposition> => {
      received.push({ ...delivery, at: Date.now() });
      return decide(delivery, received);
    },
  };
}

export function transportContract(fixture: TransportFixture): void {
  const opened: Transport[] = [];
  const consumers: Consumer[] = [];
  const releaseHung: (() => void)[] = [];
  let transport: Transport;

  async function open(): Promise<Transport> {
    const t = await fixture.open();
    opened.push(t);
    return t;
  }

  async function consume(on: Transport, spec: Partial<ConsumerSpec> & Pick<ConsumerSpec, 'durable' | 'handler'>): Promise<Consumer> {
    const consumer = await on.consume({ stream: 'dispatch', filter: 'sms.dispatch.>', concurrency: 4, ackWaitMs: 5_000, ...spec });
    consumers.push(consumer);
    return consumer;
  }

  beforeEach(async () => {
    await fixture.reset();
    transport = await open();
  });

  afterEach(async () => {
    for (const release of releaseHung.splice(0)) release();
    await Promise.all(consumers.splice(0).map((c) => c.stop()));
    await Promise.all(opened.splice(0).map((t) => t.close()));
  });

  describe('publish and consume', () => {
    it('when a message is published, then a consumer receives its subject, id, payload and headers on the first delivery', async () => {
      const payload = { to: '+243810000001', text: 'Mbote ✉️ ünïcødé', parts: [1, 2], nested: { ok: true, none: null } };
      await transport.publish('sms.dispatch.simulator', payload, { id: 'dsp-1', headers: { 'Gw-Version': '1', 'trace-id': 'abc' } });
      const r = recorder();
      await consume(transport, { durable: 'simulator', filter: 'sms.dispatch.simulator', handler: r.handler });
      await waitUntil(() => r.received.length === 1, 'the message is delivered');
      const { at: _at, ...delivery } = r.received[0]!;
      expect(delivery).to.deep.equal({
        subject: 'sms.dispatch.simulator',
        id: 'dsp-1',
        payload,
        headers: { 'Gw-Version': '1', 'trace-id': 'abc' },
        deliveryCount: 1,
      });
    });

    it('when a consumer already runs, then a new publish reaches it', async () => {
      const r = recorder();
      await consume(transport, { durable: 'prompt', handler: r.handler });
      await transport.publish('sms.dispatch.simulator', { n: 1 }, { id: 'prompt-1' });
      // how soon depends on the machine's load: only that it arrives, once, is asserted
      await waitUntil(() => r.received.length === 1, 'the message is delivered');
      expect(r.received.map((d) => d.id)).to.deep.equal(['prompt-1']);
    });

    it('when the same id is published twice, then it is delivered once', async () => {
      const r = recorder();
      await consume(transport, { durable: 'dedupe', handler: r.handler });
      await transport.publish('sms.dispatch.simulator', { n: 1 }, { id: 'same' });
      await transport.publish('sms.dispatch.simulator', { n: 2 }, { id: 'same' });
      await transport.publish('sms.dispatch.simulator', { n: 3 }, { id: 'other' });
      await waitUntil(() => r.received.length >= 2, 'both ids are delivered');
      await pause(300);
      expect(r.ids().sort()).to.deep.equal(['other', 'same']);
      expect(r.received.find((d) => d.id === 'same')!.payload).to.deep.equal({ n: 1 });
    });

    it('when a second process publishes an id already published, then it is still delivered once', async () => {
      const other = await open();
      const r = recorder();
      await consume(transport, { durable: 'dedupe-across', handler: r.handler });
      await transport.publish('sms.dispatch.simulator', { n: 1 }, { id: 'across' });
      await other.publish('sms.dispatch.simulator', { n: 2 }, { id: 'across' });
      await other.publish('sms.dispatch.simulator', { n: 3 }, { id: 'after' });
      await waitUntil(() => r.received.length >= 2, 'both ids are delivered');
      await pause(300);
      expect(r.ids().sort()).to.deep.equal(['across', 'after']);
    });

    it('when consumers filter subjects, then each receives only the subjects its filter matches', async () => {
      const simulator = recorder();
      const all = recorder();
      const dispatch = recorder();
      // overlapping filters on a limits stream (a work-queue stream takes one durable per subject)
      await consume(transport, {
        durable: 'only-simulator',
        stream: 'receipts',
        filter: 'sms.receipts.simulator',
        handler: simulator.handler,
      });
      await consume(transport, { durable: 'all-receipts', stream: 'receipts', filter: 'sms.receipts.>', handler: all.handler });
      await consume(transport, { durable: 'dispatch', filter: 'sms.dispatch.*', handler: dispatch.handler });
      await transport.publish('sms.receipts.simulator', {}, { id: 'f-1' });
      await transport.publish('sms.receipts.orange', {}, { id: 'f-2' });
      await transport.publish('sms.receipts.orange.cd', {}, { id: 'f-3' });
      await transport.publish('sms.dispatch.orange', {}, { id: 'f-4' });
      await transport.publish('sms.dispatch.orange.cd', {}, { id: 'f-5' });
      await waitUntil(
        () => all.received.length === 3 && dispatch.received.length === 1 && simulator.received.length === 1,
        'every consumer has its messages',
      );
      await pause(200);
      expect(simulator.ids()).to.deep.equal(['f-1']);
      expect(all.ids().sort()).to.deep.equal(['f-1', 'f-2', 'f-3']);
      expect(dispatch.ids()).to.deep.equal(['f-4']);
    });

    it('when dispatch jobs were published before their durable existed, then it receives them too', async () => {
      // a connector started after the gateway: its jobs wait for it
      await transport.publish('sms.dispatch.late', { n: 1 }, { id: 'early-1' });
      await transport.publish('sms.dispatch.late', { n: 2 }, { id: 'early-2' });
      const r = recorder();
      await consume(transport, { durable: 'late', filter: 'sms.dispatch.late', handler: r.handler });
      await waitUntil(() => r.received.length === 2, 'both early messages are delivered');
      expect(r.ids().sort()).to.deep.equal(['early-1', 'early-2']);
    });

    it('when a subject belongs to no stream, then publish rejects', async () => {
      const error = await transport.publish('nowhere.at.all', {}, { id: 'x' }).then(
        () => null,
        (e: unknown) => e,
      );
      expect(error).to.be.instanceOf(Error);
    });
  });

  describe('dispositions', () => {
    it('when a handler asks to retry after a delay, then the message comes back after about that delay with deliveryCount 2', async () => {
      const r = recorder((d) => (d.deliveryCount === 1 ? retryAfter(300) : ACK));
      await consume(transport, { durable: 'retry', handler: r.handler });
      await transport.publish('sms.dispatch.simulator', { n: 1 }, { id: 'r-1' });
      await waitUntil(() => r.received.length === 2, 'the message is redelivered');
      const [first, second] = r.received;
      // not before the delay (the server times it); how much later depends on the machine's load
      expect(second!.at - first!.at).to.be.at.least(250);
      expect([first!.deliveryCount, second!.deliveryCount]).to.deep.equal([1, 2]);
      expect(second!.id).to.equal('r-1');
      await pause(300);
      expect(r.received).to.have.length(2);
    });

    it('when a handler drops a message, then it is never redelivered', async () => {
      const r = recorder((d) => (d.id === 'poison' ? DROP : ACK));
      await consume(transport, { durable: 'drop', ackWaitMs: 300, handler: r.handler });
      await transport.publish('sms.dispatch.simulator', {}, { id: 'poison' });
      await transport.publish('sms.dispatch.simulator', {}, { id: 'fine' });
      await waitUntil(() => r.received.length === 2, 'both are delivered');
      await pause(700); // more than the ack wait: an unsettled message would be back
      expect(r.ids().sort()).to.deep.equal(['fine', 'poison']);
    });

    it('when a handler acknowledges, then the message is not redelivered after the ack wait', async () => {
      const r = recorder();
      await consume(transport, { durable: 'acked', ackWaitMs: 300, handler: r.handler });
      await transport.publish('sms.dispatch.simulator', {}, { id: 'acked-1' });
      await waitUntil(() => r.received.length === 1, 'it is delivered');
      await pause(700);
      expect(r.ids()).to.deep.equal(['acked-1']);
    });

    it('when a handler throws, then the consumer keeps going and the message comes back with deliveryCount 2', async () => {
      const r = recorder((d) => {
        if (d.id === 'boom' && d.deliveryCount === 1) throw new Error('handler bug');
        return ACK;
      });
      await consume(transport, { durable: 'throws', concurrency: 1, handler: r.handler });
      await transport.publish('sms.dispatch.simulator', {}, { id: 'boom' });
      await transport.publish('sms.dispatch.simulator', {}, { id: 'next' });
      await waitUntil(() => r.received.length === 3, 'the failed message is redelivered', 4_000);
      expect(r.received.map((d) => `${d.id}#${d.deliveryCount}`)).to.have.members(['boom#1', 'next#1', 'boom#2']);
    });

    it('when a handler never settles and its process goes away, then another consumer of the durable gets the message after the ack wait', async () => {
      const ackWaitMs = 600;
      const hung = recorder(
        () =>
          new Promise<Disposition>((resolve) => {
            releaseHung.push(() => {
              resolve(ACK);
            });
          }),
      );
      const first = await consume(transport, { durable: 'crashy', ackWaitMs, concurrency: 1, handler: hung.handler });
      await transport.publish('sms.dispatch.simulator', { n: 1 }, { id: 'lost-ack' });
      await waitUntil(() => hung.received.length === 1, 'the first process takes it');
      // the other process of the durable is already running, as in a deployment with several replicas
      const survivor = await open();
      const r = recorder();
      await consume(survivor, { durable: 'crashy', ackWaitMs, handler: r.handler });
      await first.stop(); // gives up on the hung handler after the ack wait: as if its process had died
      await waitUntil(() => r.received.length === 1, 'the survivor gets it', 5_000);
      expect(r.received[0]!.id).to.equal('lost-ack');
      expect(r.received[0]!.deliveryCount).to.be.at.least(2);
      expect(r.received[0]!.at - hung.received[0]!.at).to.be.at.least(ackWaitMs - 100);
      await pause(200);
      expect(hung.received).to.have.length(1);
      expect(r.received).to.have.length(1);
    });
  });

  describe('durables', () => {
    it('when two processes consume the same durable, then they share the work and each message is handled once', async () => {
      const other = await open();
      const counts = new Map<string, number>();
      const byProcess = [0, 0];
      const handlerOf =
        (process: 0 | 1) =>
        async (d: Delivery): Promise<Disposition> => {
          counts.set(d.id, (counts.get(d.id) ?? 0) + 1);
          byProcess[process]!++;
          await pause(15);
          return ACK;
        };
      await consume(transport, { durable: 'workers', concurrency: 2, handler: handlerOf(0) });
      await consume(other, { durable: 'workers', concurrency: 2, handler: handlerOf(1) });
      const ids = Array.from({ length: 40 }, (_, i) => `w-${i}`);
      for (const id of ids) await transport.publish('sms.dispatch.simulator', { id }, { id });
      await waitUntil(() => counts.size === ids.length, 'every message is handled', 10_000);
      await pause(200);
      expect([...counts.values()].every((n) => n === 1)).to.equal(true);
      expect(byProcess[0]! + byProcess[1]!).to.equal(40);
      expect(byProcess[0]).to.be.above(0);
      expect(byProcess[1]).to.be.above(0);
    });

    it('when two different durables consume the same subjects of a receipts or webhooks stream, then each receives every message', async () => {
      const a = recorder();
      const b = recorder();
      await consume(transport, { durable: 'audit', stream: 'webhooks', filter: 'webhook.jobs.>', handler: a.handler });
      await consume(transport, { durable: 'worker', stream: 'webhooks', filter: 'webhook.jobs.>', handler: b.handler });
      const ids = Array.from({ length: 10 }, (_, i) => `fan-${i}`);
      for (const id of ids) await transport.publish('webhook.jobs.m1', {}, { id });
      await waitUntil(() => a.received.length === 10 && b.received.length === 10, 'both durables have everything');
      expect(a.ids().sort()).to.deep.equal([...ids].sort());
      expect(b.ids().sort()).to.deep.equal([...ids].sort());
    });

    it('when a consumer has a concurrency of 3, then never more than 3 handlers run at once', async () => {
      let running = 0;
      let peak = 0;
      let done = 0;
      await Promise.all(Array.from({ length: 20 }, (_, i) => transport.publish('sms.dispatch.simulator', {}, { id: `c-${i}` })));
      await consume(transport, {
        durable: 'bounded',
        concurrency: 3,
        handler: async () => {
          running++;
          peak = Math.max(peak, running);
          await pause(25);
          running--;
          done++;
          return ACK;
        },
      });
      await waitUntil(() => done === 20, 'all 20 are handled', 10_000);
      expect(peak).to.equal(3);
    });

    it('when a consumer stops, then it takes no more deliveries', async () => {
      const r = recorder();
      const consumer = await consume(transport, { durable: 'stopper', handler: r.handler });
      await transport.publish('sms.dispatch.simulator', {}, { id: 's-1' });
      await waitUntil(() => r.received.length === 1, 'the first is delivered');
      await consumer.stop();
      await transport.publish('sms.dispatch.simulator', {}, { id: 's-2' });
      await pause(300);
      expect(r.ids()).to.deep.equal(['s-1']);
    });
  });

  describe('request and serve', () => {
    it('when a subject is served, then a request gets the handler answer', async () => {
      const server = await transport.serve('gw.shard.7', (payload) => Promise.resolve({ echo: payload, shard: 7 }));
      const answer = await transport.request('gw.shard.7', { command: 'charge', amount: 1_500 }, 2_000);
      expect(answer).to.deep.equal({ echo: { command: 'charge', amount: 1_500 }, shard: 7 });
      await server.stop();
    });

    it('when several servers share a subject, then each request is answered once', async () => {
      const answered: string[] = [];
      const s1 = await transport.serve('gw.shard.1', () => {
        answered.push('s1');
        return Promise.resolve('s1');
      });
      const s2 = await transport.serve('gw.shard.1', () => {
        answered.push('s2');
        return Promise.resolve('s2');
      });
      const answers = await Promise.all(Array.from({ length: 10 }, () => transport.request('gw.shard.1', {}, 2_000)));
      expect(answers).to.have.length(10);
      expect(answered).to.have.length(10);
      await Promise.all([s1.stop(), s2.stop()]);
    });

    it('when nobody serves a subject, then a request fails at once with NoResponderError', async () => {
      // a request timeout past the test's: waiting it out instead of failing at once would time the test out
      const error = await transport.request('gw.shard.42', {}, 600_000).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(NoResponderError).with.property('subject', 'gw.shard.42');
    });

    it('when the server stops serving, then requests fail with NoResponderError', async () => {
      const server = await transport.serve('gw.shard.3', () => Promise.resolve('ok'));
      expect(await transport.request('gw.shard.3', {}, 2_000)).to.equal('ok');
      await server.stop();
      const error = await transport.request('gw.shard.3', {}, 2_000).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(NoResponderError);
    });

    it('when the handler does not answer in time, then the request fails with RequestTimeoutError', async () => {
      let release: () => void = () => undefined;
      const server = await transport.serve(
        'gw.shard.9',
        () =>
          new Promise((resolve) => {
            release = () => {
              resolve('late');
            };
          }),
      );
      const error = await transport.request('gw.shard.9', {}, 200).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(RequestTimeoutError).with.property('subject', 'gw.shard.9');
      release();
      await server.stop();
    });

    it('when the handler throws, then the request rejects with its message rather than timing out', async () => {
      const server = await transport.serve('gw.shard.5', () => Promise.reject(new Error('actor crashed')));
      // a request timeout past the test's: waiting it out instead of rejecting at once would time the test out
      const error = await transport.request('gw.shard.5', {}, 600_000).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(Error).and.not.instanceOf(RequestTimeoutError);
      expect((error as Error).message).to.contain('actor crashed');
      await server.stop();
    });
  });

  describe('notify and listen', () => {
    it('when two listeners are on a subject, then each hears every notice once, in order, as a copy', async () => {
      const heard: { a: unknown[]; b: unknown[] } = { a: [], b: [] };
      const a = await transport.listen('gw.owners', (payload) => heard.a.push(payload));
      const b = await transport.listen('gw.owners', (payload) => heard.b.push(payload));
      const notice = { owner: 'node-1', leases: [{ shard: 3, epoch: 7 }] };
      transport.notify('gw.owners', notice);
      transport.notify('gw.owners', { owner: 'node-2', leases: [] });
      notice.leases.length = 0;
      await waitUntil(() => heard.a.length === 2 && heard.b.length === 2, 'both listeners heard both notices');
      await pause(100);
      for (const got of [heard.a, heard.b]) {
        expect(got).to.deep.equal([
          { owner: 'node-1', leases: [{ shard: 3, epoch: 7 }] },
          { owner: 'node-2', leases: [] },
        ]);
      }
      await Promise.all([a.stop(), b.stop()]);
    });

    it('when a listener stopped, or listens on another subject, then it hears nothing', async () => {
      const stopped: unknown[] = [];
      const other: unknown[] = [];
      const still: unknown[] = [];
      const gone = await transport.listen('gw.owners', (payload) => stopped.push(payload));
      const elsewhere = await transport.listen('gw.owners.other', (payload) => other.push(payload));
      const kept = await transport.listen('gw.owners', (payload) => still.push(payload));
      await gone.stop();
      transport.notify('gw.owners', 'after the stop');
      await waitUntil(() => still.length === 1, 'the remaining listener heard the notice');
      await pause(100);
      expect(stopped).to.deep.equal([]);
      expect(other).to.deep.equal([]);
      await Promise.all([elsewhere.stop(), kept.stop()]);
    });

    it('when nobody listens, then a notice is dropped without an error and a later listener never hears it', async () => {
      transport.notify('gw.owners', 'unheard');
      const heard: unknown[] = [];
      const late = await transport.listen('gw.owners', (payload) => heard.push(payload));
      transport.notify('gw.owners', 'heard');
      await waitUntil(() => heard.length === 1, 'the late listener heard the second notice');
      await pause(100);
      expect(heard).to.deep.equal(['heard']);
      await late.stop();
    });

    it('when a listener throws, then the other listeners still hear the notice', async () => {
      const heard: unknown[] = [];
      const failing = await transport.listen('gw.owners', () => {
        throw new Error('listener broken');
      });
      const working = await transport.listen('gw.owners', (payload) => heard.push(payload));
      transport.notify('gw.owners', 1);
      transport.notify('gw.owners', 2);
      await waitUntil(() => heard.length === 2, 'the working listener heard both notices');
      expect(heard).to.deep.equal([1, 2]);
      await Promise.all([failing.stop(), working.stop()]);
    });
  });

  it('when the transport is up, then ping resolves', async () => {
    await transport.ping();
  });
}
