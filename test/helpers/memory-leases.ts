import type { Lease, LeaseStore } from '../../src/libraries/persistence/lease-port.js';

/**
 * The lease store's contract (sql-leases.ts) in memory, on an injected clock (the database's clock in production):
 * renewals only of unexpired leases at the holder's epoch, acquisitions only of free or expired shards with the
 * next epoch. For unit tests of the shard manager and the renewal.
 */
export function createMemoryLeases(now: () => number) {
  const leases = new Map<number, { owner: string; epoch: number; expiresAt: number }>();
  const nodes = new Map<string, number>();
  const store: LeaseStore = {
    heartbeat(nodeId, ttlMs) {
      nodes.set(nodeId, now() + ttlMs);
      return Promise.resolve();
    },
    liveNodes() {
      return Promise.resolve(
        [...nodes]
          .filter(([, expiresAt]) => expiresAt > now())
          .map(([id]) => id)
          .sort(),
      );
    },
    renew(nodeId, held, ttlMs) {
      const kept: number[] = [];
      for (const { shard, epoch } of held) {
        const lease = leases.get(shard);
        if (lease?.owner === nodeId && lease.epoch === epoch && lease.expiresAt > now()) {
          lease.expiresAt = now() + ttlMs;
          kept.push(shard);
        }
      }
      return Promise.resolve(kept);
    },
    acquire(nodeId, candidates, max, ttlMs) {
      const taken: Lease[] = [];
      for (const shard of [...candidates].sort((a, b) => a - b)) {
        if (taken.length >= max) break;
        const lease = leases.get(shard);
        if (lease && lease.expiresAt > now()) continue;
        const next = { owner: nodeId, epoch: (lease?.epoch ?? 0) + 1, expiresAt: now() + ttlMs };
        leases.set(shard, next);
        taken.push({ shard, ...next });
      }
      return Promise.resolve(taken);
    },
    release(nodeId, shards) {
      for (const shard of shards) {
        const lease = leases.get(shard);
        if (lease?.owner === nodeId) lease.expiresAt = now();
      }
      return Promise.resolve();
    },
    leave(nodeId) {
      nodes.delete(nodeId);
      return Promise.resolve();
    },
    list() {
      return Promise.resolve([...leases].sort(([a], [b]) => a - b).map(([shard, lease]) => ({ shard, ...lease })));
    },
  };
  return {
    store,
    /** Shards held by an unexpired lease of `owner`, sorted. */
    heldBy: (owner: string): number[] =>
      [...leases]
        .filter(([, lease]) => lease.owner === owner && lease.expiresAt > now())
        .map(([shard]) => shard)
        .sort((a, b) => a - b),
  };
}
