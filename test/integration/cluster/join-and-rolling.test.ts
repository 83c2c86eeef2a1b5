import { expect } from 'chai';
import {
  runSendLoad,
  settleSends,
  startCluster,
  type ClusterNode,
  type ExitStatus,
  type LoadSend,
  type TestCluster,
} from '../../helpers/cluster.js';
import {
  GENEROUS_RATE_LIMITS,
  accepted,
  expectAllVisible,
  expectDispatchedOnce,
  expectFencingHeld,
  expectLedgerExact,
  isFailoverAnswer,
  outcomeCounts,
  recipientsOf,
  seedMerchants,
  type ClusterMerchant,
} from './cluster-checks.js';

const NODE_IDS = ['node-1', 'node-2', 'node-3', 'node-4'];

describe('cluster membership under load: a node joins, then every node restarts in turn', function () {
  this.timeout(300_000);
  let cluster: TestCluster;
  let merchants: ClusterMerchant[] = [];
  /** Nodes about to get SIGTERM: no new request goes to them. */
  const draining = new Set<ClusterNode>();
  const targets = (): string[] =>
    cluster
      .running()
      .filter((n) => !draining.has(n))
      .map((n) => n.api);
  const allSends: LoadSend[] = [];

  before(async function () {
    this.timeout(120_000);
    cluster = await startCluster({ nodes: 3, leaseTtlMs: 3_000, failoverDeadlineMs: 20_000, env: GENEROUS_RATE_LIMITS });
    merchants = await seedMerchants(cluster, { count: 6 });
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
  });

  it('when a fourth node joins under load, then the shards rebalance to 16 each and no request fails', async () => {
    const joining: { done: Promise<void> | null } = { done: null };
    let joinStartedAt = 0;
    let balancedAt = 0;
    let balance = new Map<string, number[]>();
    const sends = await runSendLoad({
      sends: 200,
      concurrency: 10,
      ratePerSecond: 25,
      merchants,
      targets,
      recipients: recipientsOf(0),
      runId: 'join',
      onProgress: (done) => {
        if (done !== 40) return;
        joinStartedAt = Date.now();
        joining.done = (async () => {
          await cluster.startNode('node-4');
          balance = await cluster.waitForBalance(NODE_IDS, 60_000);
          balancedAt = Date.now();
        })();
      },
    });
    await joining.done;
    allSends.push(...sends);

    expect(balancedAt, 'the fourth node joined during the load').to.be.greaterThan(0);
    expect([...balance.keys()].sort()).to.deep.equal(NODE_IDS);
    for (const id of NODE_IDS) expect(balance.get(id), id).to.have.length(16);
    // nothing failed but, at most, a few asks that timed out around the hand-over, retried with their key below
    const failures = sends.flatMap((s) => s.attempts).filter((a) => a.outcome !== 201);
    for (const a of failures) {
      expect(isFailoverAnswer(a), `${String(a.outcome)} ${a.detail ?? a.errorCode ?? ''}`).to.equal(true);
      expect(a.endedAt).to.be.within(joinStartedAt, balancedAt + 10_000);
    }
    expect(failures.length, JSON.stringify(outcomeCounts(sends))).to.be.at.most(5);
    await settleSends(sends, targets);
    expect(accepted(sends)).to.have.length(200);
  });

  it('when every node restarts in turn under load (SIGTERM, exit 0, start again), then each stops cleanly and the shards rebalance each time', async () => {
    let rolling = true;
    const exits: ExitStatus[] = [];
    const load = runSendLoad({
      sends: 2_000,
      concurrency: 8,
      ratePerSecond: 15,
      merchants,
      targets,
      recipients: recipientsOf(10_000),
      runId: 'rolling',
      shouldStop: () => !rolling,
    });
    try {
      for (const id of NODE_IDS) {
        const node = cluster.node(id);
        draining.add(node);
        exits.push(await cluster.kill(node, 'SIGTERM', 60_000));
        draining.delete(node);
        await cluster.startNode(id);
        await cluster.waitForBalance(NODE_IDS, 60_000);
      }
    } finally {
      rolling = false;
    }
    const sends = await load;
    allSends.push(...sends);

    expect(exits).to.deep.equal(NODE_IDS.map(() => ({ code: 0, signal: null })));
    expect(sends.length, 'sends during the rolling restart').to.be.greaterThan(100);
    const failures = sends.flatMap((s) => s.attempts).filter((a) => a.outcome !== 201);
    // a request whose node was chosen just before the node was marked draining can still meet its closed port:
    // refused, it never reached a gateway (nothing applied), like a request cut by the network
    const harmless = (a: (typeof failures)[number]) => isFailoverAnswer(a) || a.outcome === 'network' || a.outcome === 'refused';
    for (const a of failures) expect(harmless(a), `${String(a.outcome)} ${a.detail ?? a.errorCode ?? ''}`).to.equal(true);
    expect(failures.length, JSON.stringify(outcomeCounts(sends))).to.be.at.most(10);
    await settleSends(sends, targets);
    // every send that reached a gateway was accepted (a refused one stays unsent, nothing charged)
    expect(accepted(sends)).to.have.length(sends.filter((send) => send.attempts.some((a) => a.outcome !== 'refused')).length);
  });

  it('when it is over, then nothing was lost: every 201 has its message in GET /status', async () => {
    await expectAllVisible(cluster, allSends);
  });

  it("when it is over, then nothing was doubled: each merchant's balance is exact", async () => {
    await expectLedgerExact(cluster, merchants, allSends);
  });

  it('when it is over, then the connector got every dispatch id once', async () => {
    await expectDispatchedOnce(cluster, allSends);
  });

  it('when it is over, then no journal record was written without the current lease', async () => {
    await expectFencingHeld(cluster);
  });
});
