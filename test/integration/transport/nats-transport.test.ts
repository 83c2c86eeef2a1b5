import { expect } from 'chai';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { connect, type NatsConnection } from '@nats-io/transport-node';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import { ACK, STREAMS, type Delivery, type Disposition, type Transport } from '../../../src/libraries/transport/transport-port.js';
import { startTestNats, testNats, type TestNats } from '../../helpers/nats.js';
import { pause, transportContract, waitUntil } from './transport-contract.js';

async function deleteStreams(jsm: JetStreamManager): Promise<void> {
  for (const { name } of Object.values(STREAMS)) await jsm.streams.delete(name).catch(() => false);
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

  it('when it connects, then the three streams exist with file storage and the dedupe window', async () => {
    for (const { name, subjects } of Object.values(STREAMS)) {
      const info = await jsm.streams.info(name);
      expect(info.config.subjects).to.deep.equal([subjects]);
      expect(info.config.storage).to.equal('file');
      expect(info.config.retention).to.equal('limits');
      expect(info.config.duplicate_window).to.equal(60_000 * 1_000_000);
    }
  });

  it('when a second transport connects with another dedupe window, then the streams are updated, not refused', async () => {
    const second = await connectNatsTransport({ servers: server.url, duplicateWindowMs: 90_000 });
    await second.close();
    expect((await jsm.streams.info(STREAMS.receipts.name)).config.duplicate_window).to.equal(90_000 * 1_000_000);
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

  it('when the same id is published twice, then the stream stores it once', async () => {
    await transport.publish('sms.receipts.orange', { n: 1 }, { id: 'rcpt-1' });
    await transport.publish('sms.receipts.orange', { n: 2 }, { id: 'rcpt-1' });
    await transport.publish('sms.receipts.orange', { n: 3 }, { id: 'rcpt-2' });
    expect((await jsm.streams.info(STREAMS.receipts.name)).state.messages).to.equal(2);
  });

  it('when nats-server restarts mid-stream, then the consumer resumes and every message is delivered', async () => {
    const seen = new Set<string>();
    await transport.consume({
      stream: 'dispatch',
      filter: 'sms.dispatch.>',
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
          await transport.publish('sms.dispatch.simulator', { id }, { id });
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
