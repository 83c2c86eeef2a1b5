import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { PRESENCE_BUCKET, natsNames } from '../../../src/libraries/transport/nats-names.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { readReceipts, type DispatchJob, type Receipt } from '../../../src/carriers/carrier-protocol.js';
import { encodeKey } from '../../../src/carriers/connector/connector-records.js';
import { FORCE_QUIT_AFTER_MS } from '../../../src/libraries/lifecycle/process-terminator.js';
import { startMain, type MainProcess } from '../../helpers/main-process.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const ENTRY = { argv: ['--import', 'tsx', path.join(ROOT, 'test/helpers/fake-connector-main.ts')], cwd: ROOT };
const CLEAN_ENV = {
  NATS_URL: '',
  NATS_NAMESPACE: '',
  CONNECTOR_CARRIER: '',
  CONNECTOR_NAME: '',
  CONNECTOR_PRIORITY: '',
  CONNECTOR_WEIGHT: '',
  LOG_LEVEL: 'info',
};

const job = (dispatchId: string): DispatchJob => ({
  version: 1,
  dispatch_id: dispatchId,
  message_id: dispatchId.split(':')[0]!,
  occurrence_index: 0,
  recipient_index: 0,
  to: '+243812345601',
  sender_id: null,
  text: 'hello',
  encoding: 'GSM-7',
  segments: 1,
  submitted_at: new Date().toISOString(),
});

describe('connector process entry', function () {
  this.timeout(90_000);
  let nats: TestNats;
  let gateway: Transport;
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  const processes: MainProcess[] = [];

  before(async () => {
    nats = await startTestNats();
    gateway = await connectNatsTransport({ servers: nats.url, name: 'test-gateway' });
    nc = await connectNats({ servers: [nats.url] });
    jsm = await jetstreamManager(nc);
  });

  afterEach(async () => {
    await Promise.all(processes.splice(0).map((p) => p.kill()));
  });

  after(async () => {
    await gateway.close();
    await nc.close();
    await nats.stop();
  });

  const start = (env: Record<string, string>): MainProcess => {
    const child = startMain({ ...CLEAN_ENV, ...env }, ENTRY);
    processes.push(child);
    return child;
  };

  it('exits 1 naming the variables that are missing or invalid', async () => {
    const child = start({ CONNECTOR_PRIORITY: 'first', NATS_NAMESPACE: 'tenant.a' });
    const exit = await child.exited;
    expect(exit.code).to.equal(1);
    expect(child.stderr()).to.include('NATS_URL is required');
    expect(child.stderr()).to.include('CONNECTOR_CARRIER is required');
    expect(child.stderr()).to.include('CONNECTOR_PRIORITY must be an integer');
    expect(child.stderr()).to.include('NATS_NAMESPACE must be 1 to 32 letters, digits, - or _');
  });

  /** The receipt of `dispatchId` in a receipts stream, once there (null after 20 s). */
  async function receiptIn(stream: string, subject: string, dispatchId: string): Promise<Receipt | null> {
    const deadline = Date.now() + 20_000;
    while (Date.now() < deadline) {
      const info = await jsm.streams.info(stream);
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const stored = await jsm.streams.getMessage(stream, { seq }).catch(() => null);
        const found =
          stored?.subject === subject ? readReceipts(stored.json()).receipts.find((r) => r.dispatch_id === dispatchId) : undefined;
        if (found) return found;
      }
      await new Promise((resolve) => setTimeout(resolve, 100));
    }
    return null;
  }

  it("with NATS_NAMESPACE=b, it takes deployment b's jobs only: its durable, buckets, presence and receipts carry b, and the jobs of deployment a and of the unprefixed deployment stay where they are", async () => {
    const [a, b] = [natsNames('a'), natsNames('b')];
    const gatewayA = await connectNatsTransport({ servers: nats.url, name: 'gateway-a', names: a });
    const gatewayB = await connectNatsTransport({ servers: nats.url, name: 'gateway-b', names: b });
    try {
      // jobs of the other deployments wait for it from before it starts
      await gatewayA.publish('sms.dispatch.ns-fake', job('msg_nsa:0:0'), { id: 'msg_nsa:0:0' });
      await gateway.publish('sms.dispatch.ns-fake', job('msg_ns0:0:0'), { id: 'msg_ns0:0:0' });

      const child = start({ NATS_URL: nats.url, NATS_NAMESPACE: 'b', CONNECTOR_CARRIER: 'ns-fake', CONNECTOR_NAME: 'fake-b' });
      const ready = await child.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('connector ready'));
      expect(ready.msg).to.equal('connector ready: consuming b.sms.dispatch.ns-fake, publishing b.sms.receipts.ns-fake');
      const presence = await new Kvm(nc).open('b_gateway-connectors');
      expect((await presence.get(`ns-fake.${String(ready.connector_id)}`))?.json<{ name: string }>()).to.include({ name: 'fake-b' });

      await gatewayB.publish('sms.dispatch.ns-fake', job('msg_nsb:0:0'), { id: 'msg_nsb:0:0' });
      expect(await receiptIn('b_SMS_RECEIPTS', 'b.sms.receipts.ns-fake', 'msg_nsb:0:0')).to.include({ status: 'accepted' });
      expect(await (await new Kvm(nc).open('b_carrier-dispatches-ns-fake')).get(encodeKey('msg_nsb:0:0'))).to.not.equal(null);

      // the others' jobs: still in their streams, no durable of this connector on them
      const waiting = async (stream: string, subject: string): Promise<number> =>
        (await jsm.streams.info(stream, { subjects_filter: subject })).state.subjects?.[subject] ?? 0;
      expect(await waiting('a_SMS_DISPATCH', 'a.sms.dispatch.ns-fake')).to.equal(1);
      expect(await waiting('SMS_DISPATCH', 'sms.dispatch.ns-fake')).to.equal(1);
      const durables = async (stream: string): Promise<string[]> => {
        const list: string[] = [];
        for await (const info of jsm.consumers.list(stream)) list.push(info.name);
        return list;
      };
      expect(await durables('a_SMS_DISPATCH')).to.deep.equal([]);
      expect(await durables('SMS_DISPATCH')).not.to.include('connector-ns-fake');
      expect(await durables('b_SMS_DISPATCH')).to.deep.equal(['b_connector-ns-fake']);
      const buckets: string[] = [];
      for await (const info of jsm.streams.list())
        if (info.config.name.startsWith('KV_') && info.config.name.includes('ns-fake')) buckets.push(info.config.name);
      expect(buckets.sort()).to.deep.equal(['KV_b_carrier-dispatches-ns-fake', 'KV_b_carrier-references-ns-fake']);
    } finally {
      await gatewayA.close();
      await gatewayB.close();
    }
  });

  it('takes jobs, announces itself, and stops once on repeated SIGTERM, removing its presence entry', async () => {
    const child = start({ NATS_URL: nats.url, CONNECTOR_CARRIER: 'proc-fake', CONNECTOR_NAME: 'fake-primary', CONNECTOR_PRIORITY: '1' });
    const ready = await child.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('connector ready'));
    const connectorId = String(ready.connector_id);
    const kv = await new Kvm(nc).open(PRESENCE_BUCKET);
    const entry = await kv.get(`proc-fake.${connectorId}`);
    expect(entry?.json<{ name: string; active: boolean }>()).to.include({ name: 'fake-primary', active: true });

    const dispatchId = 'msg_proc1:0:0';
    await gateway.publish(
      'sms.dispatch.proc-fake',
      {
        version: 1,
        dispatch_id: dispatchId,
        message_id: 'msg_proc1',
        occurrence_index: 0,
        recipient_index: 0,
        to: '+243812345601',
        sender_id: null,
        text: 'hello',
        encoding: 'GSM-7',
        segments: 1,
        submitted_at: new Date().toISOString(),
      },
      { id: dispatchId },
    );
    const deadline = Date.now() + 20_000;
    let accepted: Receipt | undefined;
    while (!accepted && Date.now() < deadline) {
      const info = await jsm.streams.info('SMS_RECEIPTS');
      for (let seq = info.state.first_seq; seq <= info.state.last_seq && info.state.messages > 0; seq++) {
        const stored = await jsm.streams.getMessage('SMS_RECEIPTS', { seq }).catch(() => null);
        if (stored?.subject === 'sms.receipts.proc-fake')
          accepted ??= readReceipts(stored.json()).receipts.find((r) => r.dispatch_id === dispatchId);
      }
      if (!accepted) await new Promise((resolve) => setTimeout(resolve, 100));
    }
    expect(accepted).to.include({ status: 'accepted', carrier_reference: 'proc-1' });

    child.signal('SIGTERM');
    child.signal('SIGTERM');
    const exit = await child.exited;
    expect(exit.code).to.equal(0);
    expect(child.logs.filter((line) => line.msg === 'stopped')).to.have.length(1);
    // the gateway's terminator: one stop for the copies, a force-quit for a signal after its window
    const stops = child.logs.filter((line) => line.msg === 'shutting down');
    expect(stops).to.have.length(1);
    expect(stops[0]).to.include({ reason: 'SIGTERM', force_quit_after_ms: FORCE_QUIT_AFTER_MS });
    expect(child.logs.map((line) => line.msg)).not.to.include('force-quit: another signal while stopping, exiting now');
    const after = await kv.get(`proc-fake.${connectorId}`);
    expect(after === null || after.operation !== 'PUT').to.equal(true);
  });
});
