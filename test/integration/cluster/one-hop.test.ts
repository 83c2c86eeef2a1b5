import { expect } from 'chai';
import { shardOf } from '../../../src/cluster/shards.js';
import { call } from '../../helpers/http-fixture.js';
import { startCluster, type ClusterNode, type TestCluster } from '../../helpers/cluster.js';
import { M, parseExposition, totalOf, valueOf } from '../../helpers/prometheus-text.js';
import { eventually } from '../../helpers/eventually.js';
import { natsNames } from '../../../src/libraries/transport/nats-names.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import { GENEROUS_RATE_LIMITS, seedMerchants, type ClusterMerchant } from './cluster-checks.js';

/** `sms_gateway_remote_hops_per_request` of one route on a node: observations, and those of at most 0 and 1 hop. */
async function hopsOf(node: ClusterNode, route: string): Promise<{ count: number; le0: number; le1: number }> {
  const text = await (await fetch(node.metricsUrl)).text();
  const value = (pattern: RegExp): number => Number(pattern.exec(text)?.[1] ?? 0);
  return {
    count: value(new RegExp(`^sms_gateway_remote_hops_per_request_count\\{route="${route}"\\} (\\d+)`, 'm')),
    le0: value(new RegExp(`^sms_gateway_remote_hops_per_request_bucket\\{le="0",route="${route}"\\} (\\d+)`, 'm')),
    le1: value(new RegExp(`^sms_gateway_remote_hops_per_request_bucket\\{le="1",route="${route}"\\} (\\d+)`, 'm')),
  };
}

/** `sms_gateway_message_owner_lookups_total` of a node (the series must exist). */
async function ownerLookupsOf(node: ClusterNode): Promise<number> {
  const lookups = valueOf(parseExposition(await (await fetch(node.metricsUrl)).text()), M('message_owner_lookups_total'));
  expect(lookups, 'the message owner lookups counter').to.not.equal(undefined);
  return lookups!;
}

/** A counter of a node, summed over the series whose labels include `labels` (0 before the first sample). */
async function counterOf(node: ClusterNode, suffix: string, labels: Record<string, string> = {}): Promise<number> {
  return totalOf(parseExposition(await (await fetch(node.metricsUrl)).text()), M(suffix), labels);
}

/** Two nodes, one merchant: the node owning the merchant's shard and the other one. */
async function twoNodesAndAMerchant(env: Record<string, string>): Promise<{
  cluster: TestCluster;
  merchant: ClusterMerchant;
  owner: ClusterNode;
  other: ClusterNode;
}> {
  const cluster = await startCluster({ nodes: 2, simulator: true, env: { ...GENEROUS_RATE_LIMITS, ...env } });
  const owners = await cluster.waitForBalance(['node-1', 'node-2']);
  const merchant = (await seedMerchants(cluster, { count: 1 }))[0]!;
  const shard = shardOf(merchant.merchantId, cluster.shards);
  const ownerId = [...owners].find(([, shards]) => shards.includes(shard))![0];
  return { cluster, merchant, owner: cluster.node(ownerId), other: cluster.running().find((node) => node.id !== ownerId)! };
}

/** Waits until the message's first recipient is delivered, read through `node`. */
async function eventuallyDelivered(node: ClusterNode, merchant: ClusterMerchant, messageId: string): Promise<void> {
  await eventually(async () => {
    const status = await call(`${node.api}/status/${messageId}`, { key: merchant.apiKey });
    expect(status.status, status.text).to.equal(200);
    expect((status.body as { data: { recipients: { status: string }[] } }).data.recipients[0]!.status).to.equal('delivered');
    return true;
  }, 30_000);
}

describe('cluster: a request reaching a node that does not own its merchant makes one remote hop (the default)', function () {
  this.timeout(180_000);
  let cluster: TestCluster;
  let merchant: ClusterMerchant;
  let owner: ClusterNode;
  let other: ClusterNode;

  before(async function () {
    this.timeout(180_000);
    // no CLUSTER_FORWARD_REQUESTS: forwarding is what a cluster does unless told otherwise
    ({ cluster, merchant, owner, other } = await twoNodesAndAMerchant({}));
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
  });

  it('when every merchant route is called on the other node, then each answers as the owner would, each with exactly one remote hop', async () => {
    const before = await hopsOf(other, 'send');
    const sent = await call(`${other.api}/send`, {
      method: 'POST',
      key: merchant.apiKey,
      headers: { 'Idempotency-Key': 'one-hop-1' },
      json: { to: ['+243812345600'], message: 'One hop' },
    });
    expect(sent.status, sent.text).to.equal(201);
    const messageId = (sent.body as { data: { message_id: string } }).data.message_id;
    // the replay is answered by the owner's wallet, with its header carried back
    const replay = await call(`${other.api}/send`, {
      method: 'POST',
      key: merchant.apiKey,
      headers: { 'Idempotency-Key': 'one-hop-1' },
      json: { to: ['+243812345600'], message: 'One hop' },
    });
    expect(replay.status, replay.text).to.equal(201);
    expect(replay.headers.get('idempotent-replayed')).to.equal('true');
    const after = await hopsOf(other, 'send');
    expect(after.count - before.count, 'two sends observed').to.equal(2);
    expect(after.le1 - before.le1, 'each within one hop').to.equal(2);
    expect(after.le0 - before.le0, 'none served without a hop').to.equal(0);

    await eventuallyDelivered(other, merchant, messageId);
    const balance = await call(`${other.api}/balance`, { key: merchant.apiKey });
    expect(balance.status, balance.text).to.equal(200);
    const calculate = await call(`${other.api}/calculate`, {
      method: 'POST',
      key: merchant.apiKey,
      json: { mode: 'sms_to_amount', sms_count: 10 },
    });
    expect(calculate.status, calculate.text).to.equal(200);
    const unknown = await call(`${other.api}/status/msg_00000000000000000000000000000000`, { key: merchant.apiKey });
    expect(unknown.status).to.equal(404);
    expect(unknown.body).to.deep.equal({ detail: 'Message not found.' });
    const invalid = await call(`${other.api}/send`, { method: 'POST', key: merchant.apiKey, json: { to: [], message: '' } });
    expect(invalid.status, invalid.text).to.equal(400);
    expect((invalid.body as { error_code: string; request_id: string }).error_code).to.equal('1110');
    expect(invalid.headers.get('x-request-id'), 'the envelope names the request id the client got').to.equal(
      (invalid.body as { request_id: string }).request_id,
    );

    for (const route of ['status', 'balance', 'calculate']) {
      const hops = await hopsOf(other, route);
      expect(hops.count, route).to.be.greaterThan(0);
      expect(hops.le1, `${route}: at most one hop`).to.equal(hops.count);
      expect(hops.le0, `${route}: always forwarded`).to.equal(0);
    }
    // on the owner the same routes make none
    const local = await call(`${owner.api}/balance`, { key: merchant.apiKey });
    expect(local.status).to.equal(200);
    const ownerHops = await hopsOf(owner, 'balance');
    expect(ownerHops.le0).to.equal(ownerHops.count);
  });

  it('when sends are forwarded, then the forwarding node remembers their owner: their receipts reaching it need no database lookup', async () => {
    /** `count` sends through `node`, 20 ms apart (their receipts then fall due apart and travel in batches of their own). */
    const sendSpaced = async (node: ClusterNode, count: number): Promise<string[]> => {
      const ids: string[] = [];
      for (let i = 0; i < count; i++) {
        const sent = await call(`${node.api}/send`, {
          method: 'POST',
          key: merchant.apiKey,
          json: { to: ['+243812345600'], message: `owner ${i}` },
        });
        expect(sent.status, sent.text).to.equal(201);
        ids.push((sent.body as { data: { message_id: string } }).data.message_id);
        await new Promise((resolve) => setTimeout(resolve, 20));
      }
      return ids;
    };
    const before = await ownerLookupsOf(other);
    const receiptsBefore = await counterOf(other, 'receipts_total');
    // the simulator waits while the sends are made, so that no receipt can reach this node before the send's 201
    // did; rounds until this node took some of their receipts (each NATS message goes to one node or the other)
    for (let round = 0; round < 6 && (await counterOf(other, 'receipts_total')) === receiptsBefore; round++) {
      await cluster.stopSimulator('SIGTERM');
      const ids = await sendSpaced(other, 4);
      await cluster.startSimulator();
      for (const messageId of ids) await eventuallyDelivered(other, merchant, messageId);
    }
    expect(await counterOf(other, 'receipts_total'), 'receipts of the forwarded sends this node applied').to.be.greaterThan(receiptsBefore);
    expect(await ownerLookupsOf(other), 'owners looked up by the node that forwarded the sends').to.equal(before);
    // the contrast: receipts of messages created on the owner also reach this node, which must look those up
    for (const messageId of await sendSpaced(owner, 8)) await eventuallyDelivered(owner, merchant, messageId);
    expect(await ownerLookupsOf(other), 'owners of messages this node never saw').to.be.greaterThan(before);
  });

  it("when receipts of several of the owner's shards reach the other node together, then they cross to the owner in one hop, not one per shard", async () => {
    // merchants of distinct shards, all the owner's: one receipt of each travels in every batch below
    const candidates = await seedMerchants(cluster, { count: 1, onNode: { node: owner.id, atLeast: 6 } });
    const ownerShards = new Set((await cluster.ownership()).get(owner.id));
    const byShard = new Map<number, ClusterMerchant>();
    for (const candidate of candidates) {
      const shard = shardOf(candidate.merchantId, cluster.shards);
      if (ownerShards.has(shard) && !byShard.has(shard)) byShard.set(shard, candidate);
    }
    const merchants = [...byShard.values()];
    expect(merchants.length, 'merchants of distinct shards of the owner').to.be.at.least(3);
    // each message sent through the other node (its forwards also tell it which shards the owner holds)
    const messages: string[] = [];
    for (const [index, each] of merchants.entries()) {
      const sent = await call(`${other.api}/send`, {
        method: 'POST',
        key: each.apiKey,
        json: { to: ['+243812345600'], message: `grouped ${index}` },
      });
      expect(sent.status, sent.text).to.equal(201);
      const messageId = (sent.body as { data: { message_id: string } }).data.message_id;
      await eventuallyDelivered(other, each, messageId);
      messages.push(messageId);
    }

    const transport = await connectNatsTransport({ servers: cluster.nats.url, name: 'receipt-batches', names: natsNames('') });
    try {
      const appliedEverywhere = async (): Promise<number> =>
        (await counterOf(owner, 'receipts_total')) + (await counterOf(other, 'receipts_total'));
      const hopsBefore = await counterOf(other, 'cluster_remote_hops_total', { what: 'receipts' });
      const appliedBefore = await counterOf(other, 'receipts_total');
      // batches one at a time, each applied before the next, until the other node has taken three of them
      for (let batch = 0; batch < 40 && (await counterOf(other, 'receipts_total')) - appliedBefore < 3 * messages.length; batch++) {
        const before = await appliedEverywhere();
        const batchId = `grouped-${batch}`;
        await transport.publish(
          'sms.receipts.simulator',
          {
            version: 1,
            batch_id: batchId,
            receipts: messages.map((messageId, index) => ({
              version: 1,
              receipt_id: `${batchId}-${index}`,
              dispatch_id: `${messageId}:0:0`,
              status: 'delivered',
              occurred_at: new Date().toISOString(),
            })),
          },
          { id: batchId },
        );
        await eventually(async () => (await appliedEverywhere()) - before === messages.length, 30_000);
      }
      const batchesTaken = ((await counterOf(other, 'receipts_total')) - appliedBefore) / messages.length;
      expect(batchesTaken, 'batches the other node took').to.be.at.least(3);
      const hops = (await counterOf(other, 'cluster_remote_hops_total', { what: 'receipts' })) - hopsBefore;
      expect(hops, `crossings for ${batchesTaken} batches of ${messages.length} shards each`).to.equal(batchesTaken);
    } finally {
      await transport.close();
    }
  });

  it('when the key is locked, then the very next request through the other node is refused, before its body is read', async () => {
    expect(await cluster.operator.useCases.apiKeys.setStatus(merchant.keyId, 'locked')).to.equal(true);
    const refused = await call(`${other.api}/balance`, { key: merchant.apiKey });
    expect(refused.status, refused.text).to.equal(403);
    // a malformed body with a locked key: the key's verdict comes first (verified on the owner on its own)
    const malformed = await call(`${other.api}/send`, {
      method: 'POST',
      key: merchant.apiKey,
      headers: { 'content-type': 'application/json' },
      raw: '{"to": [',
    });
    expect(malformed.status, malformed.text).to.equal(403);
    expect(await cluster.operator.useCases.apiKeys.setStatus(merchant.keyId, 'allowed')).to.equal(true);
    const malformedAllowed = await call(`${other.api}/send`, {
      method: 'POST',
      key: merchant.apiKey,
      headers: { 'content-type': 'application/json' },
      raw: '{"to": [',
    });
    expect(malformedAllowed.status, malformedAllowed.text).to.equal(400);
  });

  it('when the key is rotated, then the old key is refused on the very next request through the other node and the new one works', async () => {
    const rotated = await cluster.operator.useCases.apiKeys.rotateKey(merchant.keyId);
    expect(rotated).to.not.equal(null);
    const old = await call(`${other.api}/balance`, { key: merchant.apiKey });
    expect(old.status, old.text).to.equal(401);
    const fresh = await call(`${other.api}/balance`, { key: rotated!.apiKey });
    expect(fresh.status, fresh.text).to.equal(200);
  });
});

describe('cluster: with CLUSTER_FORWARD_REQUESTS=false, the node receiving a request asks each actor on the owner', function () {
  this.timeout(180_000);
  let cluster: TestCluster;
  let merchant: ClusterMerchant;
  let other: ClusterNode;

  before(async function () {
    this.timeout(180_000);
    ({ cluster, merchant, other } = await twoNodesAndAMerchant({ CLUSTER_FORWARD_REQUESTS: 'false' }));
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
  });

  it('when a send and its status are asked of the other node, then they are served with one hop per actor asked, and the message is delivered', async () => {
    const before = await hopsOf(other, 'send');
    const sent = await call(`${other.api}/send`, {
      method: 'POST',
      key: merchant.apiKey,
      json: { to: ['+243812345601'], message: 'Asked actor by actor' },
    });
    expect(sent.status, sent.text).to.equal(201);
    const messageId = (sent.body as { data: { message_id: string } }).data.message_id;
    const after = await hopsOf(other, 'send');
    expect(after.count - before.count, 'one send observed').to.equal(1);
    // the key's actor and the wallet, each asked over NATS: not one forward
    expect(after.le1 - before.le1, 'more than one hop').to.equal(0);
    await eventuallyDelivered(other, merchant, messageId);
  });
});
