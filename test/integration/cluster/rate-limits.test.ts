import { expect } from 'chai';
import { call, type CallResult } from '../../helpers/http-fixture.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';
import { seedMerchants, type ClusterMerchant } from './cluster-checks.js';

/** The contract's balance limit: 30 per key per minute (config default). */
const BALANCE_LIMIT = 30;

describe('cluster rate limits: one key, three nodes', function () {
  this.timeout(120_000);
  let cluster: TestCluster;
  let merchant: ClusterMerchant;

  before(async function () {
    this.timeout(120_000);
    // suspension after 20 rejections would turn the later 429s into 403s: not what this test measures
    cluster = await startCluster({ nodes: 3, simulator: false, env: { SUSPEND_AFTER_REJECTIONS: '1000' } });
    merchant = (await seedMerchants(cluster, { count: 1 }))[0]!;
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
  });

  it('when 90 GET /balance calls with one key are spread over the three nodes within a minute, then exactly 30 are admitted and 60 get 429', async () => {
    const nodes = cluster.running();
    expect(nodes).to.have.length(3);
    const started = Date.now();
    // six at a time, round-robin over the nodes: the key's actor (on its shard's owner) counts them all
    const answers: { node: string; result: CallResult }[] = [];
    for (let batch = 0; batch < 15; batch++) {
      const calls = Array.from({ length: 6 }, (_, j) => {
        const node = nodes[(batch * 6 + j) % nodes.length]!;
        return call(`${node.api}/balance`, { key: merchant.apiKey }).then((result) => ({ node: node.id, result }));
      });
      answers.push(...(await Promise.all(calls)));
    }
    expect(Date.now() - started, 'all within the window').to.be.below(60_000);

    const statuses = answers.map((a) => a.result.status);
    expect(statuses.filter((s) => s === 200)).to.have.length(BALANCE_LIMIT);
    expect(statuses.filter((s) => s === 429)).to.have.length(90 - BALANCE_LIMIT);
    for (const { result } of answers.filter((a) => a.result.status === 429)) {
      expect((result.body as { error_code: string }).error_code).to.equal('1301');
      expect(Number(result.headers.get('retry-after'))).to.be.greaterThan(0);
    }
    // every node both admitted and refused: the count is the key's, not a node's
    for (const node of nodes) {
      const mine = answers.filter((a) => a.node === node.id).map((a) => a.result.status);
      expect(mine, node.id).to.have.length(30);
      expect(mine.filter((s) => s === 200).length + mine.filter((s) => s === 429).length, node.id).to.equal(30);
    }
    const byNode = nodes.map((node) => answers.filter((a) => a.node === node.id && a.result.status === 200).length);
    expect(byNode.reduce((a, b) => a + b, 0)).to.equal(BALANCE_LIMIT);
    expect(byNode.every((n) => n > 0 && n < 30), `admitted per node: ${byNode.join(', ')}`).to.equal(true);
  });

  it('when the key is over its balance limit on every node, then its other buckets still admit it', async () => {
    const nodes = cluster.running();
    for (const node of nodes) {
      // the status bucket admits it: an unknown message is a 404, not a 429
      const answer = await call(`${node.api}/status/msg_00000000000000000000000000000000`, { key: merchant.apiKey });
      expect(answer.status, `${node.id}: ${answer.text}`).to.equal(404);
      const balance = await call(`${node.api}/balance`, { key: merchant.apiKey });
      expect(balance.status, `${node.id}: ${balance.text}`).to.equal(429);
    }
  });
});
