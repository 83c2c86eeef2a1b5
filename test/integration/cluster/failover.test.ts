import { expect } from 'chai';
import { call } from '../../helpers/http-fixture.js';
import { runSendLoad, settleSends, startCluster, type ClusterNode, type LoadSend, type TestCluster } from '../../helpers/cluster.js';
import {
  GENEROUS_RATE_LIMITS,
  accepted,
  closeReceivers,
  expectAllVisible,
  expectDispatchedOnce,
  expectFencingHeld,
  expectLedgerExact,
  expectTerminalWebhooks,
  isFailoverAnswer,
  outcomeCounts,
  recipientsOf,
  seedMerchants,
  type ClusterMerchant,
} from './cluster-checks.js';

/** How long a node waits for a remote actor (ACTOR_ASK_TIMEOUT_MS default), past the deadline it gave the actor. */
const ASK_TIMEOUT_MS = 5_000;
/**
 * The request deadline in this cluster (its CLUSTER_FAILOVER_DEADLINE_MS, longer than the ask timeout). A request
 * forwarded to the victim just before the kill gives it this deadline, and is called unknown (500) after it and the
 * ask timeout: the latest failure the kill can cause.
 */
const FAILOVER_DEADLINE_MS = 20_000;

describe('cluster failover: a node killed with SIGKILL under load', function () {
  this.timeout(240_000);
  let cluster: TestCluster;
  let merchants: ClusterMerchant[] = [];
  let victim: ClusterNode;
  let survivors: ClusterNode[];
  let sends: LoadSend[];
  let killAt = 0;
  let takeoverAt = 0;
  let victimShards: number[] = [];
  let takenBy = new Map<string, number[]>();

  before(async function () {
    this.timeout(180_000);
    cluster = await startCluster({ nodes: 3, leaseTtlMs: 3_000, failoverDeadlineMs: FAILOVER_DEADLINE_MS, env: GENEROUS_RATE_LIMITS });
    victim = cluster.node('node-2');
    survivors = cluster.nodes.filter((n) => n !== victim);
    // several merchants, at least two of them on the victim's shards
    merchants = await seedMerchants(cluster, { count: 6, onNode: { node: victim.id, atLeast: 2 }, webhooks: true });
    victimShards = (await cluster.ownership()).get(victim.id) ?? [];
    expect(victimShards).to.not.be.empty;

    // 300 sends at 30/s round-robin over the three ports; node-2 is killed after the 90th answer
    const watching: { done: Promise<void> | null } = { done: null };
    sends = await runSendLoad({
      sends: 300,
      concurrency: 12,
      ratePerSecond: 30,
      merchants,
      targets: () => cluster.nodes.map((n) => n.api),
      recipients: recipientsOf(0),
      onProgress: (done) => {
        if (done !== 90) return;
        killAt = Date.now();
        watching.done = (async () => {
          await cluster.kill(victim, 'SIGKILL');
          // the survivors hold every shard, the victim's included, by unexpired leases
          for (;;) {
            const owners = await cluster.ownership();
            const held = [...owners.values()].reduce((n, list) => n + list.length, 0);
            if (!owners.has(victim.id) && held === cluster.shards) {
              takeoverAt = Date.now();
              takenBy = owners;
              return;
            }
            if (Date.now() - killAt > 60_000) throw new Error(`no takeover within 60 s: ${JSON.stringify([...owners])}`);
            await new Promise((resolve) => setTimeout(resolve, 50));
          }
        })();
      },
    });
    await watching.done;
    await settleSends(sends, () => survivors.map((n) => n.api));
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
    await closeReceivers(merchants);
  });

  it('when a node is killed, then the survivors take its shards within the lease TTL (plus a tick)', () => {
    expect(killAt, 'the node was killed during the load').to.be.greaterThan(0);
    expect(takeoverAt - killAt, 'kill → every shard held by a survivor (ms)').to.be.at.most(cluster.leaseTtlMs + 2_000);
    expect([...takenBy.keys()].sort()).to.deep.equal(survivors.map((n) => n.id));
    expect(victimShards.every((shard) => [...takenBy.values()].some((list) => list.includes(shard)))).to.equal(true);
    // fair share of two live nodes: 32 each
    for (const survivor of survivors) expect(takenBy.get(survivor.id), survivor.id).to.have.length(32);
  });

  it('when the node is dead, then requests to its port are refused and nothing else fails but a few timed-out requests in the failover window', async () => {
    const after = await call(`${victim.api}/balance`, { key: merchants[0]!.apiKey }).then(
      () => 'answered',
      (error: unknown) => (error as { cause?: { code?: string } }).cause?.code ?? String(error),
    );
    expect(after).to.equal('ECONNREFUSED');

    const attempts = sends.flatMap((s) => s.attempts.map((a) => ({ ...a, send: s })));
    for (const a of attempts.filter((x) => x.outcome === 'refused' || x.outcome === 'network')) {
      expect(a.target, 'only the killed node fails to answer').to.equal(victim.api);
      expect(a.endedAt).to.be.at.least(killAt);
    }
    const refused = attempts.filter((a) => a.outcome === 'refused');
    expect(refused.length, 'requests to the dead port after the kill').to.be.greaterThan(0);
    // refused sends never reached the gateway: not accepted, never retried
    for (const a of refused) if (a.send.attempts.length === 1) expect(a.send.accepted).to.equal(null);

    const failures = attempts.filter((a) => typeof a.outcome === 'number' && a.outcome !== 201);
    const logs = survivors.map((n) => `--- ${n.id}\n${n.output().slice(-3_000)}`).join('\n');
    for (const a of failures) {
      const what = `a send failed with ${String(a.outcome)} at +${a.endedAt - killAt} ms: ${a.detail ?? ''}`;
      expect(isFailoverAnswer(a), `${what}\n${logs}`).to.equal(true);
      expect(a.endedAt, `${what}: before the kill`).to.be.at.least(killAt);
      expect(a.endedAt - killAt, `${what}: outside the failover window`).to.be.at.most(FAILOVER_DEADLINE_MS + ASK_TIMEOUT_MS + 5_000);
    }
    expect(failures.length, `few failures: ${JSON.stringify(outcomeCounts(sends))}`).to.be.at.most(30);
    // what reached the gateway was accepted, on retry with the same Idempotency-Key when needed
    const reached = sends.filter((s) => s.attempts.some((a) => a.outcome !== 'refused'));
    expect(reached.every((s) => s.accepted !== null)).to.equal(true);
    expect(accepted(sends).length).to.be.greaterThan(200);
  });

  it('when the load is over, then every 201 has its message in GET /status, on any node', async () => {
    await expectAllVisible(cluster, sends);
  });

  it("when the load is over, then each merchant's balance is its funding minus exactly its accepted sends", async () => {
    await expectLedgerExact(cluster, merchants, sends);
  });

  it('when the load is over, then the connector got every dispatch id of the accepted sends, each once', async () => {
    await expectDispatchedOnce(cluster, sends);
  });

  it('when the load is over, then every recipient got its one terminal webhook', async () => {
    await expectTerminalWebhooks(merchants, sends);
  });

  it('when the load is over, then no journal record was written without the current lease, and sequences have no gaps', async () => {
    await expectFencingHeld(cluster);
  });
});
