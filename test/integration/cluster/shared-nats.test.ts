import { expect } from 'chai';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { call } from '../../helpers/http-fixture.js';
import { runSendLoad, startCluster, type LoadSend, type TestCluster } from '../../helpers/cluster.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import {
  GENEROUS_RATE_LIMITS,
  accepted,
  closeReceivers,
  expectAllVisible,
  expectDispatchedOnce,
  expectLedgerExact,
  expectTerminalWebhooks,
  recipientsOf,
  seedMerchants,
  type ClusterMerchant,
} from './cluster-checks.js';

interface Deployment {
  readonly label: string;
  readonly namespace: string;
  readonly cluster: TestCluster;
  readonly merchants: ClusterMerchant[];
  sends: LoadSend[];
}

const SENDS = 12;

/**
 * Two deployments on one nats-server (README "Sharing a NATS server"): deployment `a` with NATS_NAMESPACE=a and
 * one without a namespace (today's names), each with its own PostgreSQL database, gateway node process, simulator
 * connector process, operator and merchants with webhook receivers. Each one's traffic stays its own: every message
 * delivered by its own connector, every webhook at its own receiver, and on the server every stream, durable and
 * bucket of `a` carries its prefix.
 */
describe('cluster: two deployments sharing one NATS server (NATS_NAMESPACE)', function () {
  this.timeout(300_000);
  let nats: TestNats;
  let admin: NatsConnection;
  let jsm: JetStreamManager;
  const deployments: Deployment[] = [];

  before(async function () {
    this.timeout(240_000);
    nats = await startTestNats();
    admin = await connectNats({ servers: [nats.url] });
    jsm = await jetstreamManager(admin);
    // one after the other: the two cores are shared
    for (const [label, namespace] of [
      ['a', 'a'],
      ['unprefixed', ''],
    ] as const) {
      const cluster = await startCluster({ nodes: 1, nats, namespace, env: GENEROUS_RATE_LIMITS });
      deployments.push({ label, namespace, cluster, merchants: [], sends: [] });
      deployments.at(-1)!.merchants.push(...(await seedMerchants(cluster, { count: 2, webhooks: true })));
    }
  });

  after(async () => {
    for (const deployment of deployments) {
      await closeReceivers(deployment.merchants);
      await deployment.cluster.stop();
    }
    await (admin as NatsConnection | undefined)?.close();
    await (nats as TestNats | undefined)?.stop();
  });

  it('when each deployment sends through its own node, then every message is delivered by its own connector and its webhooks arrive at its own receivers only', async () => {
    await Promise.all(
      deployments.map(async (deployment, i) => {
        deployment.sends = await runSendLoad({
          sends: SENDS,
          concurrency: 3,
          merchants: deployment.merchants,
          targets: () => deployment.cluster.running().map((node) => node.api),
          recipients: recipientsOf(i * 1_000),
          runId: `shared-${deployment.label}`,
        });
      }),
    );
    for (const deployment of deployments) {
      expect(accepted(deployment.sends), `${deployment.label}: every send accepted`).to.have.length(SENDS);
      await expectAllVisible(deployment.cluster, deployment.sends);
      // the connector of each deployment saw exactly that deployment's dispatch ids, each once
      await expectDispatchedOnce(deployment.cluster, deployment.sends);
      // each merchant's receiver: one terminal event per recipient of its own sends, nothing else
      await expectTerminalWebhooks(deployment.merchants, deployment.sends);
      await expectLedgerExact(deployment.cluster, deployment.merchants, deployment.sends);
    }
    // a merchant of one deployment is unknown to the other
    const [a, unprefixed] = deployments as [Deployment, Deployment];
    const stranger = await call(`${unprefixed.cluster.running()[0]!.api}/balance`, { key: a.merchants[0]!.apiKey });
    expect(stranger.status).to.equal(401);
  });

  it('then every stream, durable and bucket of deployment a carries its prefix, and the unprefixed deployment has exactly the names it always had', async () => {
    const streams: { name: string; subjects: readonly string[] }[] = [];
    for await (const info of jsm.streams.list()) streams.push({ name: info.config.name, subjects: info.config.subjects });
    const names = streams.map((s) => s.name).sort();
    const ofA = names.filter((name) => name.startsWith('a_') || name.startsWith('KV_a_'));
    expect(ofA).to.deep.equal(['KV_a_gateway-connectors', 'a_SMS_DISPATCH', 'a_SMS_RECEIPTS', 'a_WEBHOOK_JOBS']);
    expect(names.filter((name) => !ofA.includes(name))).to.deep.equal([
      'KV_gateway-connectors',
      'SMS_DISPATCH',
      'SMS_RECEIPTS',
      'WEBHOOK_JOBS',
    ]);
    for (const stream of streams) {
      const prefixed = ofA.includes(stream.name);
      for (const subject of stream.subjects) {
        expect(subject.startsWith('a.') || subject.startsWith('$KV.a_'), `${stream.name}: ${subject}`).to.equal(prefixed);
      }
    }

    const durables = async (stream: string): Promise<string[]> => {
      const list: string[] = [];
      for await (const info of jsm.consumers.list(stream)) list.push(info.name);
      return list.sort();
    };
    expect(await durables('a_SMS_DISPATCH')).to.deep.equal(['a_connector-simulator']);
    expect(await durables('a_SMS_RECEIPTS')).to.deep.equal(['a_gateway-receipts']);
    expect(await durables('a_WEBHOOK_JOBS')).to.deep.equal(['a_webhook-delivery']);
    expect(await durables('SMS_DISPATCH')).to.deep.equal(['connector-simulator']);
    expect(await durables('SMS_RECEIPTS')).to.deep.equal(['gateway-receipts']);
    expect(await durables('WEBHOOK_JOBS')).to.deep.equal(['webhook-delivery']);

    // each deployment's receipts went through its own stream (receipts are kept: limits retention)
    for (const stream of ['a_SMS_RECEIPTS', 'SMS_RECEIPTS'])
      expect((await jsm.streams.info(stream)).state.messages, stream).to.be.greaterThan(0);
  });
});
