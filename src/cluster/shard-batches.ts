import { isNotApplied, type ClusterRouter } from './cluster-router.js';
import { NO_SCOPE, type RequestScope } from '../libraries/actors/request-deadline.js';
import { ACTOR_FAILURE_REASONS, ActorFailureError, type ActorFailureReason } from '../libraries/errors/internal-errors.js';
import { isOneOf, isRecord } from '../libraries/validation/guards.js';

/**
 * Work items for merchants' actors, sent to their shards' owners in batches: the items queued in one turn of the
 * event loop for shards another node owns go to it as one forwarded operation (one remote hop for the batch, not one
 * per item); an item of a shard this node owns runs here at once. Items travel together when the router's hints say
 * their shards share an owner (`shardGroupOf`), otherwise per shard. The owner runs each item on its own and answers
 * each item's outcome; an item of a shard it does not hold (an outdated hint) is answered `moved`, and the forwarder
 * sends it again to its own shard.
 */
export interface ShardBatches<I, O> {
  run(merchantId: string, item: I): Promise<O>;
}

export interface ShardBatchOptions<I, O> {
  /** The operation's name on the wire (one per kind of item). */
  readonly name: string;
  readonly router: Pick<ClusterRouter, 'forward' | 'ownsMerchant' | 'shardOf' | 'handleOperations' | 'shardGroupOf' | 'runForShardOf'>;
  /** Runs one item on the node owning its merchant's shard (its asks, made with `scope`, are then local). */
  readonly perform: (merchantId: string, item: I, scope: RequestScope) => Promise<O>;
  /** An item off the wire, checked (null: malformed). */
  readonly itemOf: (value: unknown) => I | null;
  /** Most items in one batch. */
  readonly maxBatch: number;
}

interface Queued<I, O> {
  readonly merchantId: string;
  readonly item: I;
  readonly resolve: (value: O) => void;
  readonly reject: (error: unknown) => void;
}

type ItemOutcome<O> =
  | { readonly ok: true; readonly value: O }
  | { readonly ok: false; readonly reason: ActorFailureReason; readonly detail: string }
  /** The node holds no longer (or never held) the item's shard: nothing was done, the item goes to its shard. */
  | { readonly ok: false; readonly moved: true };

/** The owner's outcomes off the wire, checked: one per item sent. */
function outcomesOf<O>(value: unknown, count: number): ItemOutcome<O>[] {
  const outcomes = isRecord(value) ? value.outcomes : undefined;
  if (!Array.isArray(outcomes) || outcomes.length !== count)
    throw new Error('the node owning the shard answered a batch with a malformed reply');
  return outcomes.map((outcome: unknown): ItemOutcome<O> => {
    if (isRecord(outcome) && outcome.ok === true) return { ok: true, value: outcome.value as O };
    if (isRecord(outcome) && outcome.moved === true) return { ok: false, moved: true };
    if (isRecord(outcome) && isOneOf(ACTOR_FAILURE_REASONS, outcome.reason)) {
      return { ok: false, reason: outcome.reason, detail: String(outcome.detail) };
    }
    throw new Error('the node owning the shard answered a batch item with a malformed outcome');
  });
}

export function createShardBatches<I, O>(options: ShardBatchOptions<I, O>): ShardBatches<I, O> {
  const { router, name } = options;
  /** Batches being gathered this turn: `group <n>` by routing hint, `shard <n>` for items sent to their own shard. */
  const queued = new Map<string, Queued<I, O>[]>();
  let flushScheduled = false;

  /** One item on the owner's side; an actor's failure is that item's outcome. */
  async function serveItem(shard: number, entry: unknown, scope: RequestScope): Promise<ItemOutcome<O>> {
    const merchantId = isRecord(entry) && typeof entry.merchantId === 'string' ? entry.merchantId : null;
    const item = isRecord(entry) && merchantId !== null ? options.itemOf(entry.item) : null;
    if (merchantId === null || item === null) return { ok: false, reason: 'crashed', detail: `malformed ${name} item` };
    const ofThisShard = router.shardOf(merchantId) === shard;
    try {
      // an item grouped in by a hint runs as its own shard's work (or is answered moved when that shard is not here)
      const value = ofThisShard
        ? await options.perform(merchantId, item, scope)
        : await router.runForShardOf(merchantId, (itsScope) => options.perform(merchantId, item, itsScope), scope);
      return { ok: true, value };
    } catch (error) {
      if (isNotApplied(error)) {
        // the operation's own shard left this node: the whole batch goes to its new owner (items are idempotent or reads)
        if (ofThisShard) throw error;
        return { ok: false, moved: true };
      }
      if (error instanceof ActorFailureError) return { ok: false, reason: error.reason, detail: error.message };
      return { ok: false, reason: 'crashed', detail: error instanceof Error ? error.message : String(error) };
    }
  }

  router.handleOperations(name, async (merchantId, operation, scope) => {
    const items = isRecord(operation) && Array.isArray(operation.items) ? (operation.items as unknown[]) : null;
    if (items === null) throw new Error(`malformed ${name} batch`);
    const shard = router.shardOf(merchantId);
    return { outcomes: await Promise.all(items.map((entry) => serveItem(shard, entry, scope))) };
  });

  function settle(entry: Queued<I, O>, outcome: ItemOutcome<O>): void {
    if (outcome.ok) entry.resolve(outcome.value);
    else if ('moved' in outcome) enqueue(entry, 'shard');
    else entry.reject(new ActorFailureError(`${name} of ${entry.merchantId}`, outcome.reason, outcome.detail));
  }

  function send(batch: readonly Queued<I, O>[]): void {
    const first = batch[0];
    if (!first) return;
    const operation = { items: batch.map(({ merchantId, item }) => ({ merchantId, item })) };
    router.forward(name, first.merchantId, operation).then(
      (reply) => {
        let outcomes: ItemOutcome<O>[];
        try {
          outcomes = outcomesOf<O>(reply, batch.length);
        } catch (error) {
          for (const entry of batch) entry.reject(error);
          return;
        }
        batch.forEach((entry, index) => {
          settle(entry, outcomes[index] ?? { ok: false, reason: 'crashed', detail: 'no outcome' });
        });
      },
      (error: unknown) => {
        for (const entry of batch) entry.reject(error);
      },
    );
  }

  function flush(): void {
    flushScheduled = false;
    const batches = [...queued.values()];
    queued.clear();
    for (const batch of batches) send(batch);
  }

  /**
   * Queues an item for this turn's batch of its shard's group (`group`), or of its shard alone (`shard`: an item the
   * hinted owner answered moved, which then follows its shard's owner through hand-overs like any request). An item
   * whose shard became this node's runs here.
   */
  function enqueue(entry: Queued<I, O>, by: 'group' | 'shard'): void {
    if (router.ownsMerchant(entry.merchantId)) {
      options.perform(entry.merchantId, entry.item, NO_SCOPE).then(entry.resolve, entry.reject);
      return;
    }
    const shard = router.shardOf(entry.merchantId);
    const key = by === 'group' ? `group ${router.shardGroupOf(shard)}` : `shard ${shard}`;
    const batch = queued.get(key) ?? [];
    batch.push(entry);
    queued.set(key, batch);
    if (batch.length >= options.maxBatch) {
      queued.delete(key);
      send(batch);
      return;
    }
    if (!flushScheduled) {
      flushScheduled = true;
      setImmediate(flush);
    }
  }

  return {
    run(merchantId, item) {
      if (router.ownsMerchant(merchantId)) return options.perform(merchantId, item, NO_SCOPE);
      return new Promise<O>((resolve, reject) => {
        enqueue({ merchantId, item, resolve, reject }, 'group');
      });
    },
  };
}
