import { isNotApplied, type ClusterRouter } from './cluster-router.js';
import { ActorFailureError, type ActorFailureReason } from '../libraries/errors/internal-errors.js';

/**
 * Work items for merchants' actors, sent to their shards' owners in batches: the items queued in one turn of the
 * event loop for a shard another node owns go there as one forwarded operation (one remote hop for the batch, not
 * one per item); an item of a shard this node owns runs here at once. The owner runs each item of a batch on its own,
 * and answers each item's outcome.
 */
export interface ShardBatches<I, O> {
  run(merchantId: string, item: I): Promise<O>;
}

export interface ShardBatchOptions<I, O> {
  /** The operation's name on the wire (one per kind of item). */
  readonly name: string;
  readonly router: Pick<ClusterRouter, 'forward' | 'ownsMerchant' | 'shardOf' | 'handleOperations'>;
  /** Runs one item on the node owning its merchant's shard (its asks are then local). */
  readonly perform: (merchantId: string, item: I) => Promise<O>;
  /** An item off the wire, checked (null: malformed). */
  readonly itemOf: (value: unknown) => I | null;
  /** Most items in one batch. */
  readonly maxBatch: number;
}

interface Queued<I, O> {
  readonly merchantId: string;
  readonly item: I;
  resolve(value: O): void;
  reject(error: unknown): void;
}

type ItemOutcome<O> =
  { readonly ok: true; readonly value: O } | { readonly ok: false; readonly reason: ActorFailureReason; readonly detail: string };

const REASONS: readonly string[] = ['crashed', 'fenced', 'unavailable', 'timeout', 'expired'] satisfies ActorFailureReason[];

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null;

/** The owner's outcomes off the wire, checked: one per item sent. */
function outcomesOf<O>(value: unknown, count: number): ItemOutcome<O>[] {
  const outcomes = isRecord(value) ? value.outcomes : undefined;
  if (!Array.isArray(outcomes) || outcomes.length !== count)
    throw new Error('the node owning the shard answered a batch with a malformed reply');
  return outcomes.map((outcome: unknown): ItemOutcome<O> => {
    if (isRecord(outcome) && outcome.ok === true) return { ok: true, value: outcome.value as O };
    if (isRecord(outcome) && typeof outcome.reason === 'string' && REASONS.includes(outcome.reason)) {
      return { ok: false, reason: outcome.reason as ActorFailureReason, detail: String(outcome.detail) };
    }
    throw new Error('the node owning the shard answered a batch item with a malformed outcome');
  });
}

export function createShardBatches<I, O>(options: ShardBatchOptions<I, O>): ShardBatches<I, O> {
  const { router, name } = options;
  const queued = new Map<number, Queued<I, O>[]>();
  let flushScheduled = false;

  /** The owner's side: every item of the batch on its own; an actor's failure is that item's outcome. */
  router.handleOperations(name, async (merchantId, operation) => {
    const items = isRecord(operation) && Array.isArray(operation.items) ? (operation.items as unknown[]) : null;
    if (items === null) throw new Error(`malformed ${name} batch`);
    const shard = router.shardOf(merchantId);
    const outcomes = await Promise.all(
      items.map(async (entry): Promise<ItemOutcome<O>> => {
        const item = isRecord(entry) && typeof entry.merchantId === 'string' ? options.itemOf(entry.item) : null;
        const owner = isRecord(entry) && typeof entry.merchantId === 'string' ? entry.merchantId : '';
        if (item === null || router.shardOf(owner) !== shard) return { ok: false, reason: 'crashed', detail: `malformed ${name} item` };
        try {
          return { ok: true, value: await options.perform(owner, item) };
        } catch (error) {
          // the shard left this node: the whole batch goes to its new owner (items are idempotent or reads)
          if (isNotApplied(error)) throw error;
          if (error instanceof ActorFailureError) return { ok: false, reason: error.reason, detail: error.message };
          return { ok: false, reason: 'crashed', detail: error instanceof Error ? error.message : String(error) };
        }
      }),
    );
    return { outcomes };
  });

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
          const outcome = outcomes[index] ?? { ok: false, reason: 'crashed', detail: 'no outcome' };
          if (outcome.ok) entry.resolve(outcome.value);
          else entry.reject(new ActorFailureError(`${name} of ${entry.merchantId}`, outcome.reason, outcome.detail));
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

  return {
    run(merchantId, item) {
      if (router.ownsMerchant(merchantId)) return options.perform(merchantId, item);
      return new Promise<O>((resolve, reject) => {
        const shard = router.shardOf(merchantId);
        const batch = queued.get(shard) ?? [];
        batch.push({ merchantId, item, resolve, reject });
        queued.set(shard, batch);
        if (batch.length >= options.maxBatch) {
          queued.delete(shard);
          send(batch);
          return;
        }
        if (!flushScheduled) {
          flushScheduled = true;
          setImmediate(flush);
        }
      });
    },
  };
}
