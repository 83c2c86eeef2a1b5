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
  /**
   * Once per round that changed this node's shards, after `onAcquired` / `onLost` of each (and once for the hand-over
   * of `stop()`): what the round changed, for one log line per rebalance instead of one per shard.
   */
  readonly onRebalanced?: (changes: ShardChanges) => void;
  /**
   * Once per round that acquired shards, after serving them (`onAcquired`): the leases won, to tell the other nodes
   * (`learn` there), whose routing hints would otherwise name the former holder until their own next round.
   */
  readonly announce?: (acquired: readonly ShardHold[]) => void;
  readonly onError?: (error: unknown) => void;
  /**
   * Renews this node's leases besides the main thread (a worker thread with its own connection), so a busy event
   * loop or a queued pool does not let them expire; started with the manager, told of every gain and loss.
   */
  readonly renewer?: () => Promise<LeaseRenewer>;
}

/** A shard's lease at one epoch: a later owner holds it at a higher epoch. */
export interface ShardHold {
  readonly shard: number;
  readonly epoch: number;
}

/** What one round of the shard manager changed (shards in ascending order). */
export interface ShardChanges {
  readonly acquired: readonly number[];
  readonly handedOver: readonly number[];
  /** Leases that could not be renewed (expired, or taken over): their actors stopped. */
  readonly expired: readonly number[];
  /** Shards this node holds after the round. */
  readonly owned: number;
}

/** Renewal of the leases this node holds, independent of the main thread's event loop. */
export interface LeaseRenewer {
  /** The leases this node holds now (each gain and loss). */
  hold(held: readonly { readonly shard: number; readonly epoch: number }[]): void;
  stop(): Promise<void>;
}

export interface ShardManager {
  owns(shard: number): boolean;
  ownedShards(): number[];
  /** The fence of a shard's appends: the current lease, or one that can never match when the shard is not ours. */
  fenceOf(shard: number): Fence;
  /**
   * The node holding the shard's lease, as of this node's last round (null: no lease known). A routing hint for
   * requests to other nodes, which may be out of date by up to a round; only the lease decides who may write.
   */
  ownerOf(shard: number): string | null;
  /**
   * What another node announced it acquired (its `announce`): a routing hint taken for each shard at an epoch higher
   * than the one this node knows, and kept by a read under way that found an older one. The next read begun after it
   * has the last word (a notice that names a wrong epoch does not outlive it).
   */
  learn(owner: string, acquired: readonly ShardHold[]): void;
  /** Takes this node's first share, then keeps renewing and rebalancing. */
  start(): Promise<void>;
  /**
   * From now on takes no shard (and hands none over), only renews what it holds: called when the process begins
   * to stop, for whatever reason, long before `stop()` hands the shards over.
   */
  stopAcquiring(): void;
  /** Hands every shard over (actors stopped first), then leaves the cluster. */
  stop(): Promise<void>;
  /** One renewal and rebalancing round now (tests, and after joining). */
  tick(): Promise<void>;
}

/** Leases are renewed three times per TTL: two renewals in a row may fail before one expires. */
export const renewalTickMs = (ttlMs: number): number => Math.max(100, Math.floor(ttlMs / 3));

/**
 * Shard ownership by leases in the database. Live nodes converge to a fair share (ceil(shards / live nodes)): a
 * node under its share takes free or expired shards, a node over it hands the excess over. A node that fails to
 * renew a lease stops that shard's actors before anything else; the lease epoch in every append fences what it
 * might still try to write.
 */
export function createShardManager(options: ShardManagerOptions): ShardManager {
  const owned = new Map<number, number>(); // shard → epoch
  /**
   * Every shard's lease holder, at its epoch, as of the last round's read or a notice heard since (expired leases
   * included: their holder may be frozen). `heard` numbers the notices: 0 for what a read found.
   */
  const holders = new Map<number, { readonly owner: string; readonly epoch: number; readonly heard: number }>();
  /** Notices heard so far. */
  let heard = 0;
  const tickMs = options.tickMs ?? renewalTickMs(options.ttlMs);
  let timer: NodeJS.Timeout | null = null;
  let running: Promise<void> | null = null;
  /** No more taking or handing over shards: the process is stopping. */
  let stopping = false;
  /** No more rounds. */
  let stopped = false;
  let renewer: LeaseRenewer | null = null;
  // read through a call: a stop may begin while a round awaits the database
  const stoppingNow = (): boolean => stopping;

  const tellRenewer = (): void => {
    renewer?.hold([...owned].map(([shard, epoch]) => ({ shard, epoch })));
  };

  // the changes of the round under way (rounds never overlap, and stop() waits for the one running)
  let changes = { acquired: [] as number[], handedOver: [] as number[], expired: [] as number[] };
  /** Reports the changes gathered since the last report, if any: one report per round. */
  function reportChanges(): void {
    const { acquired, handedOver, expired } = changes;
    if (acquired.length + handedOver.length + expired.length === 0) return;
    changes = { acquired: [], handedOver: [], expired: [] };
    const ascending = (shards: number[]): number[] => shards.sort((a, b) => a - b);
    try {
      options.onRebalanced?.({
        acquired: ascending(acquired),
        handedOver: ascending(handedOver),
        expired: ascending(expired),
        owned: owned.size,
      });
    } catch (error) {
      options.onError?.(error);
    }
  }

  async function lose(shard: number, why: 'expired' | 'handed_over'): Promise<void> {
    owned.delete(shard);
    (why === 'expired' ? changes.expired : changes.handedOver).push(shard);
    tellRenewer();
    await options.onLost(shard, why).catch((error: unknown) => options.onError?.(error));
  }

  /**
   * Stops a shard's actors, then lets its lease go at once, so another node may take it in its next round. Released
   * one by one: a lease whose actors stopped is no longer renewed, and waiting for the others' actors (a stop under
   * load, many shards) would let it lapse first, handing the shard over only once its TTL ran out.
   */
  async function handOver(shard: number): Promise<void> {
    await lose(shard, 'handed_over');
    await options.leases.release(options.nodeId, [shard]);
  }

  /** Announces the leases this round won (its changes, reported only once the round ends), each at its epoch. */
  function announceWon(): void {
    const acquired = changes.acquired.flatMap((shard) => {
      const epoch = owned.get(shard);
      return epoch === undefined ? [] : [{ shard, epoch }];
    });
    if (acquired.length === 0) return;
    try {
      options.announce?.(acquired);
    } catch (error) {
      options.onError?.(error);
    }
  }

  async function gain(lease: Lease): Promise<void> {
    owned.set(lease.shard, lease.epoch);
    changes.acquired.push(lease.shard);
    tellRenewer();
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
    // stopping may have begun while the query ran (a crash does not wait for the round)
    if (stoppingNow()) return;
    const fairShare = Math.ceil(shards / Math.max(1, live.length));
    if (owned.size < fairShare) {
      const candidates = Array.from({ length: shards }, (_, shard) => shard).filter((shard) => !owned.has(shard));
      const taken = await leases.acquire(nodeId, candidates, fairShare - owned.size, ttlMs);
      if (stoppingNow()) {
        // won as the stop began: never served, given back at once
        await leases.release(
          nodeId,
          taken.map((lease) => lease.shard),
        );
        return;
      }
      for (const lease of taken) await gain(lease);
    } else if (owned.size > fairShare) {
      // hand the excess over: stop the actors first, then let the lease go so another node takes it at once
      const excess = [...owned.keys()].sort((a, b) => b - a).slice(0, owned.size - fairShare);
      for (const shard of excess) await handOver(shard);
    }
  }

  /**
   * Reads every shard's holder: the routing hints of `ownerOf`, one query per round. The table has the last word on
   * whatever was known before the read began (a notice is sent only once its lease is committed); a notice heard
   * while the read was under way is kept when its epoch is newer than the one read.
   */
  async function readHolders(): Promise<void> {
    if (stopped) return;
    const since = heard;
    const leases = await options.leases.list();
    const read = new Set<number>();
    for (const lease of leases) {
      read.add(lease.shard);
      const known = holders.get(lease.shard);
      if (known !== undefined && known.heard > since && known.epoch > lease.epoch) continue;
      holders.set(lease.shard, { owner: lease.owner, epoch: lease.epoch, heard: 0 });
    }
    // a shard the table does not hold (never leased) keeps only a notice heard during the read
    for (const [shard, known] of holders) if (!read.has(shard) && known.heard <= since) holders.delete(shard);
  }

  async function tick(): Promise<void> {
    if (running) return running;
    // a round that failed (the database away) reads no holders: one error per round, the last read kept
    running = round()
      // what the round won is served, even when it failed part way: told at once, before the holders' read
      .finally(announceWon)
      .then(readHolders)
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        reportChanges();
        running = null;
      });
    return running;
  }

  function schedule(): void {
    if (stopped) return;
    timer = setTimeout(() => {
      void tick().finally(schedule);
    }, tickMs);
  }

  return {
    owns: (shard) => owned.has(shard),
    ownedShards: () => [...owned.keys()].sort((a, b) => a - b),
    fenceOf: (shard) => ({ shard, owner: options.nodeId, epoch: owned.get(shard) ?? -1 }),
    ownerOf: (shard) => (owned.has(shard) ? options.nodeId : (holders.get(shard)?.owner ?? null)),
    learn(owner, acquired) {
      heard++;
      for (const { shard, epoch } of acquired) {
        if (shard < 0 || shard >= options.shards) continue;
        const known = holders.get(shard);
        if (known === undefined || epoch > known.epoch) holders.set(shard, { owner, epoch, heard });
      }
    },
    async start() {
      stopping = false;
      stopped = false;
      // without it the main thread still renews, as it always does
      renewer =
        (await Promise.resolve()
          .then(() => options.renewer?.())
          .catch((error: unknown) => options.onError?.(error))) ?? null;
      await tick();
      schedule();
    },
    stopAcquiring() {
      stopping = true;
    },
    async stop() {
      stopping = true;
      stopped = true;
      if (timer) clearTimeout(timer);
      await running;
      // once a release fails (the database away), the rest only stop their actors: their leases lapse after the TTL
      let releasing = true;
      for (const shard of [...owned.keys()]) {
        if (!releasing) {
          await lose(shard, 'handed_over');
          continue;
        }
        try {
          await handOver(shard);
        } catch (error) {
          releasing = false;
          options.onError?.(error);
        }
      }
      reportChanges();
      // before leaving: its heartbeat would count this node as live again
      await renewer?.stop().catch((error: unknown) => options.onError?.(error));
      renewer = null;
      await options.leases.leave(options.nodeId).catch((error: unknown) => options.onError?.(error));
    },
    tick,
  };
}
