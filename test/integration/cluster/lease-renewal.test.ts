import { expect } from 'chai';
import { startLeaseRenewalWorker } from '../../../src/cluster/lease-renewal-worker.js';
import { createShardManager, renewalTickMs, type ShardManager } from '../../../src/cluster/shard-manager.js';
import { openPostgresPersistence, type Persistence } from '../../../src/libraries/persistence/persistence.js';
import { testPostgres } from '../../helpers/postgres.js';

const SHARDS = 8;
const TTL_MS = 2_000;

/** Keeps this thread busy, its event loop blocked, for `ms` (no timer, no I/O callback runs meanwhile). */
function blockMainThread(ms: number): void {
  const until = Date.now() + ms;
  while (Date.now() < until) {
    // busy
  }
}

describe('lease renewal in a worker thread (real PostgreSQL)', function () {
  this.timeout(60_000);
  let persistence: Persistence;
  let url: string;
  const managers: ShardManager[] = [];

  before(async () => {
    url = await (await testPostgres()).createDatabase('lease_renewal');
    persistence = await openPostgresPersistence({ url, poolSize: 2 });
  });

  after(async () => {
    for (const manager of managers) await manager.stop();
    await persistence.close();
  });

  function manager(nodeId: string, stallToleranceMs: number | null, expired: number[], errors: unknown[]): ShardManager {
    const created = createShardManager({
      nodeId,
      shards: SHARDS,
      leases: persistence.leases,
      ttlMs: TTL_MS,
      onAcquired: () => Promise.resolve(),
      onLost: (shard, why) => {
        if (why === 'expired') expired.push(shard);
        return Promise.resolve();
      },
      onError: (error) => errors.push(error),
      ...(stallToleranceMs === null
        ? {}
        : {
            renewer: () =>
              startLeaseRenewalWorker({
                connectionString: url,
                nodeId,
                ttlMs: TTL_MS,
                tickMs: renewalTickMs(TTL_MS),
                stallToleranceMs,
                onError: (error) => errors.push(error),
              }),
          }),
    });
    managers.push(created);
    return created;
  }

  async function heldBy(nodeId: string): Promise<{ shard: number; epoch: number }[]> {
    const now = Date.now();
    const leases = await persistence.leases.list();
    // the database's clock decides expiry; this one shares the machine's, close enough for "long expired" below
    return leases.filter((l) => l.owner === nodeId && l.expiresAt > now).map((l) => ({ shard: l.shard, epoch: l.epoch }));
  }

  it('when the main thread blocks for three times the lease TTL, then the worker keeps every lease: same owner, same epochs, nothing lost', async () => {
    const expired: number[] = [];
    const errors: unknown[] = [];
    const node = manager('busy-node', 60_000, expired, errors);
    await node.start();
    expect(node.ownedShards()).to.have.length(SHARDS);
    const before = await heldBy('busy-node');

    blockMainThread(3 * TTL_MS);
    const [row] = await persistence.sql!.query<{ renewed: boolean }>(
      `SELECT bool_and(expires_at > now()) AS renewed FROM shard_leases WHERE owner = 'busy-node'`,
    );
    await node.tick();

    expect(row!.renewed, 'every lease unexpired right after the block').to.equal(true);
    expect(await heldBy('busy-node')).to.deep.equal(before);
    expect(node.ownedShards()).to.have.length(SHARDS);
    expect(expired).to.deep.equal([]);
    expect(errors).to.deep.equal([]);
    await node.stop();
    expect(await heldBy('busy-node')).to.deep.equal([]);
  });

  it('when the main thread is silent for longer than the tolerance, then the worker stops renewing and the node loses its leases', async () => {
    const expired: number[] = [];
    const errors: unknown[] = [];
    const node = manager('wedged-node', TTL_MS / 2, expired, errors);
    await node.start();
    expect(node.ownedShards()).to.have.length(SHARDS);
    const before = await heldBy('wedged-node');

    blockMainThread(3 * TTL_MS);
    await node.tick();

    // every lease expired; alone in the cluster, it may take the shards again, under new epochs
    expect(expired).to.have.length(SHARDS);
    for (const lease of await heldBy('wedged-node'))
      expect(lease.epoch).to.be.greaterThan(before.find((b) => b.shard === lease.shard)!.epoch);
    expect(errors.map((error) => (error instanceof Error ? error.message : String(error))).join('\n')).to.match(
      /main thread silent for \d+ ms/,
    );
    await node.stop();
  });
});
