import { expect } from 'chai';
import { NotApplied, type OperationHandler } from '../../../src/cluster/cluster-router.js';
import { createShardBatches } from '../../../src/cluster/shard-batches.js';
import { ActorFailureError } from '../../../src/libraries/errors/internal-errors.js';
import { NO_SCOPE, type RequestScope } from '../../../src/libraries/actors/request-deadline.js';

/**
 * Two nodes in one process: `here` owns shard 0 (merchant m0), `owner` the shards in `ownerShards` (by default all
 * the others). A forward from here crosses a JSON "wire" to the owner's handler, as NATS would carry it; `hints` are
 * here's routing hints (shard → its group).
 */
interface Item {
  readonly n: number;
}

const shardOf = (merchantId: string): number => Number(merchantId.slice('m'.length)) % 4;

function twoNodes(
  perform: (merchantId: string, item: Item, scope: RequestScope) => Promise<string>,
  maxBatch = 100,
  ownerShards: ReadonlySet<number> = new Set([1, 2, 3]),
) {
  const forwards: { name: string; merchantId: string; items: number }[] = [];
  const handlers = new Map<string, OperationHandler>();
  const hints = new Map<number, number>();
  const ranForOtherShards: string[] = [];
  const owner = {
    ownsMerchant: (merchantId: string) => ownerShards.has(shardOf(merchantId)),
    shardOf,
    forward: () => Promise.reject(new Error('the owner forwards nothing')),
    handleOperations: (name: string, handler: OperationHandler) => {
      handlers.set(name, handler);
    },
    shardGroupOf: (shard: number) => shard,
    runForShardOf<T>(merchantId: string, step: (scope: RequestScope) => Promise<T>, scope: RequestScope = NO_SCOPE): Promise<T> {
      if (!ownerShards.has(shardOf(merchantId))) return Promise.reject(new NotApplied(`${merchantId}'s shard is not here`));
      ranForOtherShards.push(merchantId);
      return step({ ...scope, forwardedShard: shardOf(merchantId) });
    },
  };
  const here = {
    ownsMerchant: (merchantId: string) => shardOf(merchantId) === 0,
    shardOf,
    shardGroupOf: (shard: number) => hints.get(shard) ?? shard,
    runForShardOf: () => Promise.reject(new Error('here serves no batch')),
    async forward(name: string, merchantId: string, operation: unknown) {
      forwards.push({ name, merchantId, items: (operation as { items: unknown[] }).items.length });
      const handler = handlers.get(name);
      if (!handler) throw new Error('no handler');
      const served = await handler(merchantId, JSON.parse(JSON.stringify(operation)), {
        deadline: null,
        forwardedShard: shardOf(merchantId),
      });
      return JSON.parse(JSON.stringify(served)) as unknown;
    },
    handleOperations: () => undefined,
  };
  const itemOf = (value: unknown): Item | null =>
    typeof value === 'object' && value !== null && typeof (value as Item).n === 'number' ? { n: (value as Item).n } : null;
  createShardBatches<Item, string>({ name: 'things', router: owner, perform, itemOf, maxBatch });
  const batches = createShardBatches<Item, string>({ name: 'things', router: here, perform, itemOf, maxBatch });
  return { batches, forwards, handlers, hints, ranForOtherShards };
}

describe("shard batches: items for another node's shards reach it in one hop per shard, or per owner once known", () => {
  it('when nothing is known of the owners and items of three shards are queued in one turn, then each shard gets one forward with all its items, and each item its own answer', async () => {
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

  it('when the router knows that three shards share an owner, then their items queued in one turn go there in one forward', async () => {
    const { batches, forwards, hints, ranForOtherShards } = twoNodes((merchantId, item) => Promise.resolve(`done ${merchantId}:${item.n}`));
    for (const shard of [1, 2, 3]) hints.set(shard, 1);
    const sends: [string, number][] = [
      ['m2', 1],
      ['m1', 2],
      ['m3', 3],
      ['m5', 4],
      ['m0', 5],
    ];
    const answers = await Promise.all(sends.map(([merchantId, n]) => batches.run(merchantId, { n })));
    expect(answers).to.deep.equal(['done m2:1', 'done m1:2', 'done m3:3', 'done m5:4', 'done m0:5']);
    expect(forwards, 'one hop for the four items of the three shards').to.deep.equal([{ name: 'things', merchantId: 'm2', items: 4 }]);
    // the operation went to m2's shard: the items of shards 1 and 3 ran there as their own shard's work
    expect(ranForOtherShards).to.have.members(['m1', 'm3', 'm5']);
  });

  it('when a hint is out of date, then the owner answers its items moved and they reach their own shard in a forward of their own', async () => {
    const performed: string[] = [];
    // the owner holds shards 1 and 2 only: shard 3 has gone elsewhere since the hint was learnt
    const moving = twoNodes(
      (merchantId, item) => {
        performed.push(`${merchantId}:${item.n}`);
        return Promise.resolve(`done ${item.n}`);
      },
      100,
      new Set([1, 2]),
    );
    for (const shard of [1, 2, 3]) moving.hints.set(shard, 1);
    const answers = await Promise.all([
      moving.batches.run('m1', { n: 1 }),
      moving.batches.run('m3', { n: 2 }),
      moving.batches.run('m2', { n: 3 }),
    ]);
    expect(answers).to.deep.equal(['done 1', 'done 2', 'done 3']);
    // the group's forward, then m3's item alone to shard 3 (whose owner, in this fake, serves every forward)
    expect(moving.forwards.map((f) => [f.merchantId, f.items])).to.deep.equal([
      ['m1', 3],
      ['m3', 1],
    ]);
    expect(
      performed.filter((p) => p === 'm3:2'),
      'the moved item performed once, by its shard',
    ).to.have.length(1);
  });

  it('when the owner gets a malformed item, one of another shard it holds and one of a shard it does not hold, then it refuses the first, serves the second and answers the third moved', async () => {
    const scopes: string[] = [];
    const { handlers, ranForOtherShards } = twoNodes(
      (merchantId, item, scope) => {
        scopes.push(`${merchantId} shard ${String(scope.forwardedShard)} deadline ${String(scope.deadline)}`);
        return Promise.resolve(`ok ${item.n}`);
      },
      100,
      new Set([1, 2]),
    );
    const handler = handlers.get('things')!;
    const reply = (await handler(
      'm1',
      {
        items: [
          { merchantId: 'm1', item: { n: 1 } },
          { merchantId: 'm1', item: { n: 'x' } },
          { merchantId: 'm2', item: { n: 3 } },
          { merchantId: 'm3', item: { n: 4 } },
        ],
      },
      { deadline: 1_000, forwardedShard: 1 },
    )) as {
      outcomes: { ok: boolean; value?: string; moved?: boolean; reason?: string }[];
    };
    expect(reply.outcomes).to.deep.equal([
      { ok: true, value: 'ok 1' },
      { ok: false, reason: 'crashed', detail: 'malformed things item' },
      { ok: true, value: 'ok 3' },
      { ok: false, moved: true },
    ]);
    expect(ranForOtherShards).to.deep.equal(['m2']);
    // each item's asks carry the operation's deadline and name the shard served for it: the operation's own, or the
    // shard of an item grouped in
    expect(scopes).to.deep.equal(['m1 shard 1 deadline 1000', 'm2 shard 2 deadline 1000']);
    let refused: unknown = null;
    await handler('m1', { nothing: true }, NO_SCOPE).catch((error: unknown) => {
      refused = error;
    });
    expect(refused).to.be.instanceOf(Error);
  });

  it("when the operation's own shard leaves the owner while serving, then the whole batch is given back for the shard's new owner", async () => {
    const { handlers } = twoNodes((merchantId) =>
      merchantId === 'm1' ? Promise.reject(new NotApplied('shard 1 left')) : Promise.resolve('ok'),
    );
    let failure: unknown = null;
    await handlers.get('things')!(
      'm1',
      {
        items: [
          { merchantId: 'm1', item: { n: 1 } },
          { merchantId: 'm2', item: { n: 2 } },
        ],
      },
      NO_SCOPE,
    ).catch((error: unknown) => {
      failure = error;
    });
    expect(failure).to.be.instanceOf(NotApplied);
  });
});
