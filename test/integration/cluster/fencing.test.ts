import { expect } from 'chai';
import { fileURLToPath } from 'node:url';
import { shardOf } from '../../../src/cluster/shards.js';
import { runSendLoad, settleSends, startCluster, type ClusterNode, type LoadSend, type TestCluster } from '../../helpers/cluster.js';
import { eventually } from '../../helpers/eventually.js';
import {
  GENEROUS_RATE_LIMITS,
  accepted,
  expectAllVisible,
  expectDispatchedOnce,
  expectFencingHeld,
  expectLedgerExact,
  isFailoverAnswer,
  recipientsOf,
  seedMerchants,
  type ClusterMerchant,
} from './cluster-checks.js';

/** The NATS settings docker-compose.yml ships: a client that stops answering pings is dropped within seconds. */
const SHIPPED_NATS_CONFIG = fileURLToPath(new URL('../../../deploy/nats/nats-server.conf', import.meta.url));

describe('cluster fencing: a node frozen past its lease TTL', function () {
  this.timeout(240_000);
  let cluster: TestCluster;
  let merchants: ClusterMerchant[] = [];
  let frozen: ClusterNode;
  let others: ClusterNode[];
  /** The frozen node's shards and their epochs just before the freeze. */
  let lost = new Map<number, number>();
  let onLost: ClusterMerchant[] = [];
  let freezeAt = 0;
  let resumeAt = 0;
  let staleSends: LoadSend[] = [];
  let staleRequests: Promise<LoadSend[]> | null = null;
  let survivorSends: LoadSend[] = [];
  const allSends: LoadSend[] = [];

  before(async function () {
    this.timeout(120_000);
    cluster = await startCluster({
      nodes: 3,
      leaseTtlMs: 3_000,
      failoverDeadlineMs: 20_000,
      env: GENEROUS_RATE_LIMITS,
      natsMonitoring: true,
      natsConfigFile: SHIPPED_NATS_CONFIG,
    });
    frozen = cluster.node('node-2');
    others = cluster.nodes.filter((n) => n !== frozen);
    merchants = await seedMerchants(cluster, { count: 6, onNode: { node: frozen.id, atLeast: 2 } });
    const shards = (await cluster.ownership()).get(frozen.id) ?? [];
    const epochs = new Map((await cluster.leases()).map((l) => [l.shard, l.epoch]));
    lost = new Map(shards.map((shard) => [shard, epochs.get(shard)!]));
    onLost = merchants.filter((m) => lost.has(shardOf(m.merchantId, cluster.shards)));
    expect(onLost.length).to.be.at.least(2);
    // warm up: the frozen node's actors of its merchants are in memory (state it will hold while stale)
    allSends.push(
      ...(await runSendLoad({
        sends: 30,
        concurrency: 6,
        merchants,
        targets: () => cluster.nodes.map((n) => n.api),
        recipients: recipientsOf(0),
        runId: 'warm',
      })),
    );
    expect(accepted(allSends)).to.have.length(30);
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
  });

  it('when a node is frozen (SIGSTOP) past its lease TTL, then the other nodes take its shards, with new epochs, while it is frozen', async () => {
    freezeAt = await cluster.dbNow();
    cluster.pause(frozen);
    // requests for its own merchants wait in its socket buffers: it will see them, stale, on waking
    staleRequests = runSendLoad({
      sends: 8,
      concurrency: 8,
      merchants: onLost,
      targets: () => [frozen.api],
      recipients: recipientsOf(20_000),
      runId: 'stale',
    });
    // meanwhile the others serve every merchant, those of the frozen node's shards included
    const load = runSendLoad({
      sends: 60,
      concurrency: 6,
      ratePerSecond: 8,
      merchants,
      targets: () => others.map((n) => n.api),
      recipients: recipientsOf(30_000),
      runId: 'others',
    });

    const taken = await eventually(
      async () => {
        const owners = await cluster.ownership();
        const held = [...owners.values()].reduce((n, list) => n + list.length, 0);
        return !owners.has(frozen.id) && held === cluster.shards ? owners : null;
      },
      30_000,
      'every shard held by the other nodes',
    );
    expect([...taken.keys()].sort()).to.deep.equal(others.map((n) => n.id));
    const leases = new Map((await cluster.leases()).map((l) => [l.shard, l]));
    for (const [shard, epoch] of lost) {
      expect(leases.get(shard)!.owner, `shard ${shard}`).to.not.equal(frozen.id);
      expect(leases.get(shard)!.epoch, `epoch of shard ${shard}`).to.be.greaterThan(epoch);
    }
    // the new owners write for the lost shards while the old one is still frozen
    survivorSends = await load;
    expect(frozen.state()).to.equal('paused');
  });

  it('when the NATS server has dropped its connection (the shipped ping settings), then every send for its merchants through the others is accepted at once', async () => {
    // until then NATS may hand the frozen node, still subscribed, part of the requests forwarded for the shards it
    // lost (one queue group per shard): those wait out their timeout and answer 500/1401
    await eventually(
      async () => ((await natsClientNames(cluster)).includes(frozen.id) ? null : true),
      60_000,
      'the frozen node dropped by NATS',
    );
    const sends = await runSendLoad({
      sends: 12,
      concurrency: 4,
      merchants: onLost,
      targets: () => others.map((n) => n.api),
      recipients: recipientsOf(40_000),
      runId: 'after-drop',
    });
    allSends.push(...sends);
    for (const send of sends) {
      const outcomes = send.attempts.map((a) => `${String(a.outcome)} ${a.errorCode ?? ''} after ${a.endedAt - a.startedAt} ms`);
      expect(outcomes, `send ${send.index} for a merchant of a lost shard`).to.have.length(1);
      expect(send.attempts[0]!.outcome, outcomes[0]).to.equal(201);
    }
    expect(frozen.state()).to.equal('paused');
  });

  it('when it resumes (SIGCONT), then it writes nothing for the shards it lost: its stale requests fail over to the new owners', async () => {
    resumeAt = await cluster.dbNow();
    cluster.resume(frozen);
    staleSends = await staleRequests!;
    allSends.push(...staleSends, ...survivorSends);
    for (const a of staleSends.flatMap((s) => s.attempts)) {
      // 'network': the connection was idle from the warm-up and its keep-alive timer fired as the node woke (the
      // request was never read); retried with its Idempotency-Key below like the rest
      expect(
        a.outcome === 201 || a.outcome === 'network' || isFailoverAnswer(a),
        `${String(a.outcome)} ${a.detail ?? a.errorCode ?? ''} after ${a.endedAt - a.startedAt} ms\n${frozen.output()}`,
      ).to.equal(true);
    }
    await cluster.waitForBalance(
      cluster.nodes.map((n) => n.id),
      60_000,
    );
    await settleSends(allSends, () => cluster.running().map((n) => n.api));

    // the frozen node wrote nothing from the freeze until it was given shards again
    const [first] = await cluster.sql<{ at: number }>(
      `SELECT (extract(epoch FROM min(at)) * 1000)::float8 AS at FROM lease_audit WHERE owner = $1 AND at > to_timestamp($2::float8 / 1000)`,
      [frozen.id, freezeAt],
    );
    const rejoinedAt = first!.at;
    expect(rejoinedAt, 'it took shards again after waking').to.be.greaterThan(resumeAt);
    // from the first takeover of one of its shards (until then its leases were valid: an append it sent just as
    // it froze may land then, legitimately) until it was given shards again, it wrote nothing
    const [lostAt] = await cluster.sql<{ at: number }>(
      `SELECT (extract(epoch FROM min(at)) * 1000)::float8 AS at FROM lease_audit
       WHERE owner <> $1 AND shard = ANY($2::int[]) AND at > to_timestamp($3::float8 / 1000)`,
      [frozen.id, [...lost.keys()], freezeAt],
    );
    expect(lostAt!.at, 'its shards were taken over while it was frozen').to.be.within(freezeAt, resumeAt);
    const [writes] = await cluster.sql<{ n: number }>(
      `SELECT count(*)::int AS n FROM journal_audit WHERE writer = $1 AND at >= to_timestamp($2::float8 / 1000) AND at < to_timestamp($3::float8 / 1000)`,
      [frozen.id, lostAt!.at, rejoinedAt],
    );
    expect(writes!.n, 'journal records by the frozen node between losing its first shard and rejoining').to.equal(0);

    // each charge of a request it held while frozen was journaled by the shard's owner of the moment, not by it
    for (const send of accepted(staleSends)) {
      const records = await cluster.sql<{ writer: string; at: number }>(
        `SELECT a.writer, (extract(epoch FROM a.at) * 1000)::float8 AS at FROM journal j JOIN journal_audit a ON a.key = j.key AND a.seq = j.seq
         WHERE j.key = $1 AND strpos(j.events::text, $2) > 0`,
        [`wallet:${send.merchant.merchantId}`, send.accepted!.messageId],
      );
      expect(records, `the charge of ${send.accepted!.messageId}`).to.have.length(1);
      const record = records[0]!;
      expect(
        record.writer !== frozen.id || record.at >= rejoinedAt,
        `charge of ${send.accepted!.messageId} written by ${record.writer}`,
      ).to.equal(true);
    }
    await expectFencingHeld(cluster);
  });

  it('when it has rejoined, then it owns a fair share again, under new epochs', async () => {
    const owners = await cluster.waitForBalance(
      cluster.nodes.map((n) => n.id),
      60_000,
    );
    const mine = owners.get(frozen.id) ?? [];
    expect(mine.length).to.be.within(1, Math.ceil(cluster.shards / 3));
    const leases = new Map((await cluster.leases()).map((l) => [l.shard, l]));
    for (const shard of mine)
      if (lost.has(shard)) expect(leases.get(shard)!.epoch, `epoch of shard ${shard}`).to.be.greaterThan(lost.get(shard)! + 1);
  });

  it('when it is over, then nothing was lost or doubled: every 201 visible, balances exact, each dispatch once', async () => {
    await expectAllVisible(cluster, allSends);
    await expectLedgerExact(cluster, merchants, allSends);
    await expectDispatchedOnce(cluster, allSends);
  });
});

/** Names of the clients connected to the cluster's nats-server now (its monitoring endpoint). */
async function natsClientNames(cluster: TestCluster): Promise<string[]> {
  const response = await fetch(`${cluster.nats.monitorUrl ?? ''}/connz?limit=1024`);
  const body = (await response.json()) as { connections?: { name?: string }[] };
  return (body.connections ?? []).map((c) => c.name ?? '');
}
