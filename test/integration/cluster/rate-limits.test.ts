import { expect } from 'chai';
import { runCommand } from '../../helpers/command-process.js';
import { call, type CallResult } from '../../helpers/http-fixture.js';
import path from 'node:path';
import { REPO_ROOT, TSX_LOADER, startCluster, type TestCluster } from '../../helpers/cluster.js';
import { seedMerchants, type ClusterMerchant } from './cluster-checks.js';

/** The contract's balance limit: 30 per key per minute (config default). */
const BALANCE_LIMIT = 30;

describe('cluster: one key across three nodes, and the operator CLI', function () {
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
    expect(
      byNode.every((n) => n > 0 && n < 30),
      `admitted per node: ${byNode.join(', ')}`,
    ).to.equal(true);
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

  describe('operator CLI against the running cluster', () => {
    const runCli = (args: readonly string[], env: Readonly<Record<string, string>>) =>
      runCommand(process.execPath, ['--import', TSX_LOADER, path.join(REPO_ROOT, 'src/entry-points/cli/cli-main.ts'), ...args], {
        cwd: REPO_ROOT,
        env: {
          NODE_ENV: 'test',
          GATEWAY_MODE: 'server',
          DATABASE_URL: cluster.databaseUrl,
          CLUSTER_SHARDS: String(cluster.shards),
          ...env,
        },
      });

    it('when `cluster status` runs, then it lists the three live nodes, every shard held once and none unowned', async () => {
      const { code, stdout, stderr } = await runCli(['cluster', 'status', '--json'], { NATS_URL: cluster.nats.url });
      expect(code, stderr).to.equal(0);
      const status = JSON.parse(stdout) as {
        shards: number;
        live_nodes: string[];
        unowned_shards: number[];
        nodes: { node_id: string; live: boolean; shard_count: number; shards: { shard: number; epoch: number }[] }[];
      };
      expect(status.shards).to.equal(cluster.shards);
      expect(status.live_nodes).to.deep.equal(['node-1', 'node-2', 'node-3']);
      expect(status.unowned_shards).to.deep.equal([]);
      const held = status.nodes.flatMap((node) => node.shards.map((s) => s.shard)).sort((a, b) => a - b);
      expect(held).to.deep.equal(Array.from({ length: cluster.shards }, (_, shard) => shard));
      const owners = await cluster.ownership();
      for (const node of status.nodes)
        expect(
          node.shards.map((s) => s.shard),
          node.node_id,
        ).to.deep.equal(owners.get(node.node_id));

      const text = await runCli(['cluster', 'status'], { NATS_URL: cluster.nats.url });
      expect(text.stdout)
        .to.match(/Live nodes:\s+3/)
        .and.to.match(/Unowned shards:\s+none/)
        .and.to.match(/node-2\s+yes\s+\d+/);
    });

    it("when the CLI tops a wallet up, then the command reaches the wallet's actor on its owner node: GET /balance on every node shows it at once", async () => {
      // a merchant of its own: the first one's balance bucket is spent
      const [fresh] = await seedMerchants(cluster, { count: 1 });
      const { code, stderr } = await runCli(['wallet', 'top-up', fresh!.merchantId, 'prepaid', '7.5'], { NATS_URL: cluster.nats.url });
      expect(code, stderr).to.equal(0);
      const shown = await runCli(['wallet', 'balance', fresh!.merchantId, '--json'], { NATS_URL: cluster.nats.url });
      expect(shown.code, shown.stderr).to.equal(0);
      expect((JSON.parse(shown.stdout) as { sms_wallet_balance: number }).sms_wallet_balance).to.equal(1007.5);
      // the owner's actor (in memory, warm from the seeding) took it: an actor copy in the CLI process would have
      // left the owner's state stale
      for (const node of cluster.running()) {
        const answer = await call(`${node.api}/balance`, { key: fresh!.apiKey });
        expect(answer.status, answer.text).to.equal(200);
        expect((answer.body as { data: { sms_wallet_balance: number } }).data.sms_wallet_balance, node.id).to.equal(1007.5);
      }
    });

    it('when nodes are running and NATS_URL is missing, then the CLI refuses (exit 1) instead of writing beside the owners', async () => {
      const { code, stdout, stderr } = await runCli(['wallet', 'top-up', merchant.merchantId, 'prepaid', '1'], {});
      expect(code).to.equal(1);
      expect(stdout).to.equal('');
      expect(stderr).to.contain('nodes are running').and.to.contain('set NATS_URL');
    });
  });
});
