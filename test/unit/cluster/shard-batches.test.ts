import { expect } from 'chai';
import type { OperationHandler } from '../../../src/cluster/cluster-router.js';
import { createShardBatches } from '../../../src/cluster/shard-batches.js';
import { ActorFailureError } from '../../../src/libraries/errors/internal-errors.js';

/**
 * Two nodes in one process: `here` owns no shard of the merchants below, `owner` owns them all. A forward from here
 * crosses a JSON "wire" to the owner's handler, as NATS would carry it.
 */
interface Item {
  readonly n: number;
}

const shardOf = (merchantId: string): number => Number(merchantId.slice('m'.length)) % 4;

function twoNodes(perform: (merchantId: string, item: Item) => Promise<string>, maxBatch = 100) {
  const forwards: { name: string; merchantId: string; items: number }[] = [];
  const handlers = new Map<string, OperationHandler>();
  const owner = {
    ownsMerchant: () => true,
    shardOf,
    forward: () => Promise.reject(new Error('the owner forwards nothing')),
    handleOperations: (name: string, handler: OperationHandler) => {
      handlers.set(name, handler);
    },
  };
  const here = {
    ownsMerchant: (merchantId: string) => merchantId === 'm0',
    shardOf,
    async forward(name: string, merchantId: string, operation: unknown) {
      forwards.push({ name, merchantId, items: (operation as { items: unknown[] }).items.length });
      const handler = handlers.get(name);
      if (!handler) throw new Error('no handler');
      return JSON.parse(JSON.stringify(await handler(merchantId, JSON.parse(JSON.stringify(operation))))) as unknown;
    },
    handleOperations: () => undefined,
  };
  const itemOf = (value: unknown): Item | null =>
    typeof value === 'object' && value !== null && typeof (value as Item).n === 'number' ? { n: (value as Item).n } : null;
  createShardBatches<Item, string>({ name: 'things', router: owner, perform, itemOf, maxBatch });
  const batches = createShardBatches<Item, string>({ name: 'things', router: here, perform, itemOf, maxBatch });
  return { batches, forwards, handlers };
}

describe("shard batches: items for another node's shards reach it in one hop per shard", () => {
  it('when items of three shards are queued in one turn, then each shard gets one forward with all its items, and each item its own answer', async () => {
    const performed: string[] = [];
    const { batches, forwards } = twoNodes((merchantId, item) => {
      performed.push(`${merchantId}:${item.n}`);
      return Promise.resolve(`done ${merchantId}:${item.n}`);
    });
    // m1 and m5 share shard 1; m2 is shard 2; m3 shard 3; m0 is owned here
    const answers = await Promise.all(
      [
        ['m1', 1],
        ['m5', 2],
        ['m2', 3],
        ['m1', 4],
        ['m3', 5],
        ['m0', 6],
      ].map(([merchantId, n]) => batches.run(merchantId as string, { n: n as number })),
    );
    expect(answers).to.deep.equal(['done m1:1', 'done m5:2', 'done m2:3', 'done m1:4', 'done m3:5', 'done m0:6']);
    expect(forwards.map((f) => f.items).sort()).to.deep.equal([1, 1, 3]);
    expect(forwards.every((f) => f.name === 'things')).to.equal(true);
    expect(performed).to.have.members(['m1:1', 'm5:2', 'm2:3', 'm1:4', 'm3:5', 'm0:6']);
  });

  it("when one item of a batch fails in its actor, then only that item is refused, with the actor's reason", async () => {
    const { batches } = twoNodes((merchantId, item) =>
      item.n === 2
        ? Promise.reject(new ActorFailureError(`message:${item.n}`, 'unavailable', 'journal down'))
        : Promise.resolve(`ok ${item.n}`),
    );
    const settled = await Promise.allSettled([1, 2, 3].map((n) => batches.run('m1', { n })));
    expect(settled.map((s) => s.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled']);
    const reason = (settled[1] as PromiseRejectedResult).reason as ActorFailureError;
    expect(reason).to.be.instanceOf(ActorFailureError);
    expect(reason.reason).to.equal('unavailable');
  });

  it('when the forward itself fails, then every item of the batch is refused with its error', async () => {
    const { batches, handlers } = twoNodes(() => Promise.resolve('never'));
    handlers.set('things', () => Promise.reject(new ActorFailureError('things of m1', 'timeout', 'no answer')));
    const settled = await Promise.allSettled([1, 2].map((n) => batches.run('m1', { n })));
    expect(settled.map((s) => s.status)).to.deep.equal(['rejected', 'rejected']);
  });

  it('when more items than the batch size are queued, then they go in batches of at most that size', async () => {
    const { batches, forwards } = twoNodes((_m, item) => Promise.resolve(String(item.n)), 4);
    const answers = await Promise.all(Array.from({ length: 10 }, (_, n) => batches.run('m1', { n })));
    expect(answers).to.deep.equal(Array.from({ length: 10 }, (_, n) => String(n)));
    expect(forwards.map((f) => f.items)).to.deep.equal([4, 4, 2]);
  });

  it('when the owner gets a malformed item or one of another shard, then that item is refused and the others are served', async () => {
    const { handlers } = twoNodes((_m, item) => Promise.resolve(`ok ${item.n}`));
    const handler = handlers.get('things')!;
    const reply = (await handler('m1', {
      items: [
        { merchantId: 'm1', item: { n: 1 } },
        { merchantId: 'm1', item: { n: 'x' } },
        { merchantId: 'm2', item: { n: 3 } },
      ],
    })) as {
      outcomes: { ok: boolean }[];
    };
    expect(reply.outcomes.map((o) => o.ok)).to.deep.equal([true, false, false]);
    let refused: unknown = null;
    await handler('m1', { nothing: true }).catch((error: unknown) => {
      refused = error;
    });
    expect(refused).to.be.instanceOf(Error);
  });
});
