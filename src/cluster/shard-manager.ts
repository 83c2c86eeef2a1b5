import type { Fence } from '../libraries/persistence/journal-port.js';
import type { Lease, LeaseStore } from '../libraries/persistence/lease-port.js';

export interface ShardManagerOptions {
  readonly nodeId: string;
  readonly shards: number;
  readonly leases: LeaseStore;
  /** A lease not renewed for this long expires and another node may take the shard. */
  readonly ttlMs: number;
  /** How often leases are renewed and the share rebalanced (a third of the TTL by default). */
  readonly tickMs?: number;
  /** This node now owns the shard: serve it. */
  readonly onAcquired: (shard: number) => Promise<void>;
  /** This node no longer owns the shard (lost, or handed over): stop its actors. */
  readonly onLost: (shard: number, why: 'expired' | 'handed_over') => Promise<void>;
  readonly onError?: (error: unknown) => void;
}

export interface ShardManager {
  owns(shard: number): boolean;
  ownedShards(): number[];
  /** The fence of a shard's appends: the current lease, or one that can never match when the shard is not ours. */
  fenceOf(shard: number): Fence;
  /** Takes this node's first share, then keeps renewing and rebalancing. */
  start(): Promise<void>;
  /** Hands every shard over (actors stopped first), then leaves the cluster. */
  stop(): Promise<void>;
  /** One renewal and rebalancing round now (tests, and after joining). */
  tick(): Promise<void>;
}

/**
 * Shard ownership by leases in the database. Live nodes converge to a fair share (ceil(shards / live nodes)): a
 * node under its share takes free or expired shards, a node over it hands the excess over. A node that fails to
 * renew a lease stops that shard's actors before anything else; the lease epoch in every append fences what it
 * might still try to write.
 */
export function createShardManager(options: ShardManagerOptions): ShardManager {
  const owned = new Map<number, number>(); // shard → epoch
  const tickMs = options.tickMs ?? Math.max(100, Math.floor(options.ttlMs / 3));
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  let stopping = false;

  async function lose(shard: number, why: 'expired' | 'handed_over'): Promise<void> {
    owned.delete(shard);
    await options.onLost(shard, why).catch((error: unknown) => options.onError?.(error));
  }

  async function gain(lease: Lease): Promise<void> {
    owned.set(lease.shard, lease.epoch);
    await options.onAcquired(lease.shard).catch((error: unknown) => options.onError?.(error));
  }

  async function round(): Promise<void> {
    const { leases, nodeId, ttlMs, shards } = options;
    await leases.heartbeat(nodeId, ttlMs);
    const held = [...owned].map(([shard, epoch]) => ({ shard, epoch }));
    const kept = new Set(await leases.renew(nodeId, held, ttlMs));
    for (const { shard } of held) if (!kept.has(shard)) await lose(shard, 'expired');
    if (stopping) return;

    const live = await leases.liveNodes();
    const fairShare = Math.ceil(shards / Math.max(1, live.length));
    if (owned.size < fairShare) {
      const candidates = Array.from({ length: shards }, (_, shard) => shard).filter((shard) => !owned.has(shard));
      for (const lease of await leases.acquire(nodeId, candidates, fairShare - owned.size, ttlMs)) await gain(lease);
    } else if (owned.size > fairShare) {
      // hand the excess over: stop the actors first, then let the lease go so another node takes it at once
      const excess = [...owned.keys()].sort((a, b) => b - a).slice(0, owned.size - fairShare);
      for (const shard of excess) await lose(shard, 'handed_over');
      await leases.release(nodeId, excess);
    }
  }

  async function tick(): Promise<void> {
    if (running) return running;
    running = round()
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        running = null;
      });
    return running;
  }

  function schedule(): void {
    if (stopping) return;
    timer = setTimeout(() => {
      void tick().finally(schedule);
    }, tickMs);
  }

  return {
    owns: (shard) => owned.has(shard),
    ownedShards: () => [...owned.keys()].sort((a, b) => a - b),
    fenceOf: (shard) => ({ shard, owner: options.nodeId, epoch: owned.get(shard) ?? -1 }),
    async start() {
      stopping = false;
      await tick();
      schedule();
    },
    async stop() {
      stopping = true;
      if (timer) clearTimeout(timer);
      await running;
      const shards = [...owned.keys()];
      for (const shard of shards) await lose(shard, 'handed_over');
      await options.leases.release(options.nodeId, shards).catch((error: unknown) => options.onError?.(error));
      await options.leases.leave(options.nodeId).catch((error: unknown) => options.onError?.(error));
    },
    tick,
  };
}
