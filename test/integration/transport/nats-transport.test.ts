import { expect } from 'chai';
import {
  JetStreamApiCodes,
  JetStreamApiError,
  jetstreamManager,
  RetentionPolicy,
  StorageType,
  type JetStreamManager,
} from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { connectNatsTransport, DEFAULT_MAX_AGE_MS } from '../../../src/libraries/transport/nats-transport.js';
import { NO_NAMESPACE, natsNames, type NatsNames } from '../../../src/libraries/transport/nats-names.js';
import {
  ACK,
  STREAMS,
  type Consumer,
  type Delivery,
  type Disposition,
  type Transport,
} from '../../../src/libraries/transport/transport-port.js';
import { dependencyOf } from '../../../src/libraries/errors/dependency-failure.js';
import { startTestNats, testNats, type TestNats } from '../../helpers/nats.js';
import { startDelayingProxy } from '../../helpers/delaying-proxy.js';
import { pause, transportContract, waitUntil } from './transport-contract.js';
import { NoResponderError } from '../../../src/libraries/errors/internal-errors.js';

/** Polls an asynchronous condition with a generous timeout (no fixed sleep). */
async function waitUntilAsync(condition: () => Promise<boolean>, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!(await condition())) {
    if (Date.now() > deadline) throw new Error(`timed out waiting until ${what}`);
    await pause(20);
  }
}

/**
 * Deletes the streams (and so their consumers), trying again until each is gone: a test that restarted the server
 * leaves an admin connection that may still be reconnecting, or a JetStream still loading its streams, and a stream
 * left behind keeps its durable consumers for the next test (on a work-queue stream, an overlapping filter is refused).
 */
async function deleteStreams(jsm: JetStreamManager, names: NatsNames = NO_NAMESPACE): Promise<void> {
  for (const { name } of Object.values(STREAMS)) {
    await waitUntilAsync(
      async () => {
        try {
          await jsm.streams.delete(names.stream(name));
          return true;
        } catch (error) {
          return error instanceof JetStreamApiError && error.code === JetStreamApiCodes.StreamNotFound;
        }
      },
      `stream ${names.stream(name)} deleted`,
    );
  }
}

describe('transport contract: NATS JetStream (private nats-server)', function () {
  this.timeout(30_000);
  let server: TestNats;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  before(async () => {
    server = await testNats();
    admin = await connect({ servers: server.url });
    jsm = await jetstreamManager(admin);
  });
  after(async () => {
    await admin.close();
  });

  transportContract({
    open: () => connectNatsTransport({ servers: server.url, name: 'contract' }),
    // fresh streams (and so no consumers) for every test
    reset: () => deleteStreams(jsm),
  });
});

describe('transport contract: NATS JetStream under a namespace (private nats-server)', function () {
  this.timeout(30_000);
  const names = natsNames('contract-ns');
  let server: TestNats;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  before(async () => {
    server = await testNats();
    admin = await connect({ servers: server.url });
    jsm = await jetstreamManager(admin);
  });
  after(async () => {
    await deleteStreams(jsm, names);
    await admin.close();
  });

  // the application's subjects, durables and streams, the same contract: the namespace is the transport's business
  transportContract({
    open: () => connectNatsTransport({ servers: server.url, name: 'contract-ns', names }),
    reset: () => deleteStreams(jsm, names),
  });
});

/** A consumer of dispatch jobs on `name` that acknowledges whatever it gets. */
function idleConsumer(transport: Transport, name: string): Promise<Consumer> {
  return transport.consume({
    stream: 'dispatch',
    filter: `sms.dispatch.${name}`,
    durable: name,
    concurrency: 1,
    ackWaitMs: 30_000,
    handler: () => Promise.resolve(ACK),
  });
}

/** Stops the consumer, failing if the stop has not ended within `timeoutMs`. */
async function stopsWithin(consumer: Consumer, timeoutMs: number): Promise<void> {
  let stopped = false;
  const stopping = consumer.stop().then(() => {
    stopped = true;
  });
  await waitUntil(() => stopped, 'the consumer has stopped', timeoutMs);
  await stopping;
}

describe('NATS transport', function () {
  this.timeout(30_000);
  // its own server: these tests restart it
  let server: TestNats;
  let transport: Transport;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  before(async () => {
    server = await startTestNats();
  });
  after(async () => {
    await server.stop();
  });
  beforeEach(async () => {
    // a publish sent while the server is away can be lost and time out: fail fast so the test retries it
    transport = await connectNatsTransport({ servers: server.url, name: 'nats-only', duplicateWindowMs: 60_000, publishTimeoutMs: 1_000 });
    admin = await connect({ servers: server.url, maxReconnectAttempts: -1, reconnectTimeWait: 100 });
    jsm = await jetstreamManager(admin);
  });
  afterEach(async () => {
    await transport.close();
    await deleteStreams(jsm);
    await admin.close();
  });

  it('when it connects, then the three streams exist with file storage, their retention and the dedupe window', async () => {
    for (const key of ['dispatch', 'receipts', 'webhooks'] as const) {
      const { name, subjects } = STREAMS[key];
      const info = await jsm.streams.info(name);
      expect(info.config.subjects).to.deep.equal([subjects]);
      expect(info.config.storage).to.equal('file');
      expect(info.config.retention).to.equal({ work_queue: 'workqueue', limits: 'limits' }[STREAMS[key].retention]);
      expect(info.config.duplicate_window).to.equal(60_000 * 1_000_000);
      expect(info.config.max_age, 'the bound on what a stream keeps').to.equal(DEFAULT_MAX_AGE_MS * 1_000_000);
    }
  });

  it('when a second transport connects with another dedupe window, then the streams are updated, not refused', async () => {
    const second = await connectNatsTransport({ servers: server.url, duplicateWindowMs: 90_000 });
    await second.close();
    expect((await jsm.streams.info(STREAMS.receipts.name)).config.duplicate_window).to.equal(90_000 * 1_000_000);
  });

  describe('bounded streams: what was consumed is not kept', () => {
    const stored = async (stream: keyof typeof STREAMS): Promise<number> => (await jsm.streams.info(STREAMS[stream].name)).state.messages;
    /** Polls until the stream holds `count` (the server removes settled messages as their acks arrive). */
    const untilStored = (stream: keyof typeof STREAMS, count: number) =>
      waitUntilAsync(async () => (await stored(stream)) === count, `${stream} holds ${count}`);

    it('when every dispatch job is acknowledged or dropped, then the dispatch stream holds none; jobs not yet consumed stay', async () => {
      for (let i = 0; i < 20; i++) await transport.publish(`sms.dispatch.${i < 15 ? 'simulator' : 'orange'}`, { i }, { id: `job-${i}` });
      expect(await stored('dispatch'), 'before any connector: every job waits').to.equal(20);
      const seen: string[] = [];
      const consumer = await transport.consume({
        stream: 'dispatch',
        durable: 'connector-simulator',
        filter: 'sms.dispatch.simulator',
        concurrency: 4,
        ackWaitMs: 5_000,
        handler: (d: Delivery): Promise<Disposition> => {
          seen.push(d.id);
          return Promise.resolve(d.id === 'job-3' ? { type: 'drop' } : ACK);
        },
      });
      await untilStored('dispatch', 5);
      expect(seen).to.have.length(15);
      await consumer.stop();
      // the 5 left are the orange jobs, still waiting for their connector
      expect(seen.filter((id) => Number(id.slice(4)) >= 15)).to.deep.equal([]);
    });

    it('when a second connector durable would overlap a carrier, then the work-queue stream refuses it rather than share its jobs', async () => {
      const handler = (): Promise<Disposition> => Promise.resolve(ACK);
      const spec = { stream: 'dispatch', concurrency: 1, ackWaitMs: 5_000, handler } as const;
      const consumer = await transport.consume({ ...spec, durable: 'connector-simulator', filter: 'sms.dispatch.simulator' });
      const error = await transport.consume({ ...spec, durable: 'auditor', filter: 'sms.dispatch.>' }).catch((e: unknown) => e);
      expect(String(error)).to.contain('not unique');
      await consumer.stop();
    });

    it('when a stream exists with limits retention (an earlier version), then connecting updates the rest, says how to migrate, and works', async () => {
      await deleteStreams(jsm);
      await jsm.streams.add({
        name: STREAMS.dispatch.name,
        subjects: [STREAMS.dispatch.subjects],
        retention: RetentionPolicy.Limits,
        storage: StorageType.File,
      });
      const reported: string[] = [];
      const older = await connectNatsTransport({
        servers: server.url,
        duplicateWindowMs: 90_000,
        onError: (error, context) => {
          reported.push(`${String(error)} | ${context}`);
        },
      });
      try {
        const info = await jsm.streams.info(STREAMS.dispatch.name);
        expect(info.config.retention).to.equal('limits');
        expect(info.config.duplicate_window).to.equal(90_000 * 1_000_000);
        expect(reported).to.have.length(1);
        expect(reported[0])
          .to.contain(`stream ${STREAMS.dispatch.name} has limits retention, not workqueue`)
          .and.contain('docs/operations.md');
        expect((await jsm.streams.info(STREAMS.receipts.name)).config.retention, 'the others are created right').to.equal('limits');
      } finally {
        await older.close();
      }
    });
  });

  it('when another process serves a subject, then a request from this one reaches it', async () => {
    const other = await connectNatsTransport({ servers: server.url });
    const served = await other.serve('gw.shard.12', (payload) => Promise.resolve({ got: payload }));
    try {
      expect(await transport.request('gw.shard.12', { n: 1 }, 2_000)).to.deep.equal({ got: { n: 1 } });
    } finally {
      await served.stop();
      await other.close();
    }
  });

  it('when processes listen on a subject, then a notice from another process reaches each of them, and none of another namespace', async () => {
    const listeners = await Promise.all([connectNatsTransport({ servers: server.url }), connectNatsTransport({ servers: server.url })]);
    const elsewhereNames = natsNames('elsewhere');
    const elsewhere = await connectNatsTransport({ servers: server.url, names: elsewhereNames });
    const heard = listeners.map(() => [] as unknown[]);
    const heardElsewhere: unknown[] = [];
    const listening = [
      ...(await Promise.all(listeners.map((t, i) => t.listen('gw.owners', (payload) => heard[i]!.push(payload))))),
      await elsewhere.listen('gw.owners', (payload) => heardElsewhere.push(payload)),
    ];
    try {
      transport.notify('gw.owners', { owner: 'node-9', leases: [{ shard: 1, epoch: 2 }] });
      await waitUntil(() => heard.every((list) => list.length === 1), 'both processes heard the notice');
      for (const list of heard) expect(list).to.deep.equal([{ owner: 'node-9', leases: [{ shard: 1, epoch: 2 }] }]);
      elsewhere.notify('gw.owners', 'from another deployment');
      await waitUntil(() => heardElsewhere.length === 1, 'the other deployment heard its own notice');
      await pause(100);
      expect(heardElsewhere, 'only its own deployment').to.deep.equal(['from another deployment']);
      for (const list of heard) expect(list, 'nothing from the other deployment').to.have.length(1);
    } finally {
      await Promise.all(listening.map((l) => l.stop()));
      await Promise.all([...listeners, elsewhere].map((t) => t.close()));
      await deleteStreams(jsm, elsewhereNames);
    }
  });

  it('when deployments a, b and one without a namespace share the server, then each has its own streams, durables and subjects and gets only its own messages and requests', async () => {
    const a = natsNames('a');
    const b = natsNames('b');
    const ta = await connectNatsTransport({ servers: server.url, name: 'deployment-a', names: a });
    const tb = await connectNatsTransport({ servers: server.url, name: 'deployment-b', names: b });
    try {
      const streams: string[] = [];
      for await (const info of jsm.streams.list()) streams.push(info.config.name);
      expect(streams.sort()).to.deep.equal([
        'SMS_DISPATCH',
        'SMS_RECEIPTS',
        'WEBHOOK_JOBS',
        'a_SMS_DISPATCH',
        'a_SMS_RECEIPTS',
        'a_WEBHOOK_JOBS',
        'b_SMS_DISPATCH',
        'b_SMS_RECEIPTS',
        'b_WEBHOOK_JOBS',
      ]);
      expect((await jsm.streams.info('a_SMS_DISPATCH')).config.subjects).to.deep.equal(['a.sms.dispatch.>']);

      const deployments = [
        { label: 'a', transport: ta },
        { label: 'b', transport: tb },
        { label: 'none', transport },
      ];
      const received = new Map<string, Delivery[]>(deployments.map(({ label }) => [label, []]));
      for (const { label, transport: t } of deployments) {
        await t.consume({
          stream: 'dispatch',
          durable: 'connector-simulator',
          filter: 'sms.dispatch.simulator',
          concurrency: 1,
          ackWaitMs: 5_000,
          handler: (delivery) => {
            received.get(label)!.push(delivery);
            return Promise.resolve(ACK);
          },
        });
      }
      // the same publish id in each: every deployment's stream deduplicates on its own
      for (const { label, transport: t } of deployments) await t.publish('sms.dispatch.simulator', { from: label }, { id: 'job-1' });
      await waitUntilAsync(() => Promise.resolve([...received.values()].every((list) => list.length === 1)), 'each deployment got its job');
      for (const { label } of deployments) {
        const [delivery] = received.get(label)!;
        expect(delivery?.payload, label).to.deep.equal({ from: label });
        expect(delivery?.subject, 'the subject as the application names it').to.equal('sms.dispatch.simulator');
      }
      const consumer = await jsm.consumers.info('a_SMS_DISPATCH', 'a_connector-simulator');
      expect(consumer.config.filter_subject).to.equal('a.sms.dispatch.simulator');
      const durablesOfA: string[] = [];
      for await (const info of jsm.consumers.list('a_SMS_DISPATCH')) durablesOfA.push(info.name);
      expect(durablesOfA).to.deep.equal(['a_connector-simulator']);

      const served = await ta.serve('gw.shard.3', () => Promise.resolve('a'));
      try {
        expect(await ta.request('gw.shard.3', {}, 2_000)).to.equal('a');
        for (const other of [tb, transport]) {
          const error = await other.request('gw.shard.3', {}, 2_000).catch((e: unknown) => e);
          expect(error).to.be.instanceOf(NoResponderError).with.property('subject', 'gw.shard.3');
        }
      } finally {
        await served.stop();
      }
    } finally {
      await ta.close();
      await tb.close();
      await deleteStreams(jsm, a);
      await deleteStreams(jsm, b);
    }
  });

  it('when the same id is published twice, then the stream stores it once', async () => {
    // the dispatch stream keeps jobs nobody consumed yet (a receipt no durable wants is dropped at once)
    await transport.publish('sms.dispatch.orange', { n: 1 }, { id: 'job-1' });
    await transport.publish('sms.dispatch.orange', { n: 2 }, { id: 'job-1' });
    await transport.publish('sms.dispatch.orange', { n: 3 }, { id: 'job-2' });
    expect((await jsm.streams.info(STREAMS.dispatch.name)).state.messages).to.equal(2);
  });

  it('when the server is gone, then a request is refused unsent (dependency unavailable), and nothing is delivered once it is back', async () => {
    const served: unknown[] = [];
    const server2 = await transport.serve('gw.shard.7', (payload) => {
      served.push(payload);
      return Promise.resolve('ok');
    });
    expect(await transport.request('gw.shard.7', { n: 1 }, 2_000)).to.equal('ok');
    const errors: unknown[] = [];
    await server.stopServer();
    // the client notices the loss (its status stream says disconnect) before the request below
    await waitUntilAsync(async () => {
      try {
        await transport.request('gw.shard.7', { n: 2 }, 200);
        return false;
      } catch (error) {
        errors.push(error);
        return dependencyOf(error) === 'transport';
      }
    }, 'a request refused as the transport being unavailable');
    await server.startServer();
    await waitUntilAsync(
      async () => (await transport.request('gw.shard.7', { n: 3 }, 1_000).catch(() => null)) === 'ok',
      'served again after the restart',
    );
    // what was refused while away never reached the server, not even once it was back
    expect(served.filter((p) => (p as { n: number }).n === 2).length, 'refused requests are not sent later').to.be.at.most(
      errors.filter((e) => dependencyOf(e) === null).length,
    );
    await server2.stop();
  });

  it('when a consumer stops while the server is delivering to it, then that delivery is handed back at once, not held for the ack wait', async () => {
    // the stopping consumer's unsubscription reaches the server a second late: meanwhile the server delivers to it
    const proxy = await startDelayingProxy(server.port);
    const stopping = await connectNatsTransport({ servers: proxy.url, name: 'stopping' });
    try {
      const spec = {
        stream: 'dispatch',
        filter: 'sms.dispatch.handover',
        durable: 'handover',
        concurrency: 4,
        ackWaitMs: 120_000,
      } as const;
      const handledByFirst: string[] = [];
      const first = await stopping.consume({
        ...spec,
        handler: (d: Delivery): Promise<Disposition> => {
          handledByFirst.push(d.id);
          return Promise.resolve(ACK);
        },
      });
      await waitUntilAsync(async () => (await jsm.consumers.info('SMS_DISPATCH', 'handover')).num_waiting > 0, 'its pull request waits');
      proxy.delayToServer(1_000);
      const stopped = first.stop();
      await transport.publish('sms.dispatch.handover', { n: 1 }, { id: 'handover-1' });
      await stopped;
      const handledBySecond: string[] = [];
      await transport.consume({
        ...spec,
        handler: (d: Delivery): Promise<Disposition> => {
          handledBySecond.push(d.id);
          return Promise.resolve(ACK);
        },
      });
      // dropped on arrival, it would come back only after the ack wait (two minutes)
      await waitUntil(() => handledBySecond.length === 1, 'the next consumer takes the job', 20_000);
      expect(handledBySecond).to.deep.equal(['handover-1']);
      expect(handledByFirst, 'a stopping consumer hands deliveries back unhandled').to.deep.equal([]);
    } finally {
      await stopping.close();
      await proxy.close();
    }
  });

  it('when the server does not confirm the unsubscription, then a consumer still stops after a short wait', async () => {
    const proxy = await startDelayingProxy(server.port);
    const stalled = await connectNatsTransport({ servers: proxy.url, name: 'stalled' });
    try {
      const consumer = await idleConsumer(stalled, 'stalled');
      // nothing this client sends reaches the server for two minutes: the unsubscription is never confirmed meanwhile
      proxy.delayToServer(120_000);
      await stopsWithin(consumer, 15_000);
    } finally {
      await proxy.close();
      await stalled.close();
    }
  });

  it('when the server is gone, then a consumer still stops (it does not wait for the server to confirm)', async () => {
    const consumer = await idleConsumer(transport, 'outage');
    await server.stopServer();
    try {
      // a stop waiting for the server would still wait when the server is back, long after this
      await stopsWithin(consumer, 15_000);
    } finally {
      await server.startServer();
    }
  });

  it('when nats-server restarts mid-stream, then the consumer resumes and every message is delivered', async () => {
    const seen = new Set<string>();
    await transport.consume({
      stream: 'dispatch',
      // its own subject: a work-queue stream refuses a filter overlapping another durable's
      filter: 'sms.dispatch.restart',
      durable: 'restart',
      concurrency: 4,
      ackWaitMs: 2_000,
      handler: (d: Delivery): Promise<Disposition> => {
        seen.add(d.id);
        return Promise.resolve(ACK);
      },
    });
    const publish = async (id: string): Promise<void> => {
      // publish awaits the stream's ack; retry only if the client gives up while the server is away
      for (let attempt = 0; ; attempt++) {
        try {
          await transport.publish('sms.dispatch.restart', { id }, { id });
          return;
        } catch (error) {
          if (attempt >= 10) throw error;
          await pause(200);
        }
      }
    };
    for (let i = 0; i < 20; i++) await publish(`before-${i}`);
    await waitUntil(() => seen.size === 20, 'the first 20 are delivered');
    await server.restart();
    for (let i = 0; i < 20; i++) await publish(`after-${i}`);
    await waitUntil(() => seen.size === 40, 'the 20 published after the restart are delivered', 15_000);
    expect([...seen].filter((id) => id.startsWith('after-'))).to.have.length(20);
    await transport.ping();
  });
});
