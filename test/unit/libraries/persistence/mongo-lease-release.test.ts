import { expect } from 'chai';
import { createMongoLeases, RELEASED_AT } from '../../../../src/libraries/persistence/mongo/mongo-leases.js';
import type { Collections, LeaseDoc } from '../../../../src/libraries/persistence/mongo/mongo-collections.js';

type Doc = { -readonly [K in keyof LeaseDoc]: LeaseDoc[K] };

/**
 * The shard-lease collection as MongoDB documents it for the few shapes the adapter uses: `$expr` comparisons and
 * pipeline `$set`s whose `$$NOW` is one value for the whole operation, given here by the test per operation.
 */
function leaseCollection(docs: Map<number, Doc>, operationTimes: number[]) {
  const evaluate = (expression: unknown, doc: Doc, now: Date): unknown => {
    if (expression === '$$NOW') return now;
    if (typeof expression === 'string' && expression.startsWith('$')) return doc[expression.slice(1) as keyof Doc];
    if (expression instanceof Date || typeof expression !== 'object' || expression === null) return expression;
    const [operator, operands] = Object.entries(expression)[0] as [string, unknown[]];
    const values = operands.map((operand) => evaluate(operand, doc, now));
    const time = (value: unknown) => (value instanceof Date ? value.getTime() : Number(value));
    if (operator === '$add') return new Date(time(values[0]) + time(values[1]));
    if (operator === '$gt') return time(values[0]) > time(values[1]);
    if (operator === '$lte') return time(values[0]) <= time(values[1]);
    throw new Error(`operator ${operator} not in this fake`);
  };
  const matches = (filter: Record<string, unknown>, doc: Doc, now: Date): boolean =>
    Object.entries(filter).every(([field, wanted]) => {
      if (field === '$expr') return evaluate(wanted, doc, now) === true;
      const value = doc[field as keyof Doc];
      if (typeof wanted === 'object' && wanted !== null && '$in' in wanted) return (wanted.$in as unknown[]).includes(value);
      return value === wanted;
    });
  const update = (filter: Record<string, unknown>, pipeline: { $set: Record<string, unknown> }[], many: boolean) => {
    const now = new Date(operationTimes.shift() ?? Number.NaN);
    let modifiedCount = 0;
    for (const doc of docs.values()) {
      if (!matches(filter, doc, now) || (!many && modifiedCount === 1)) continue;
      for (const stage of pipeline)
        for (const [field, value] of Object.entries(stage.$set)) Object.assign(doc, { [field]: evaluate(value, doc, now) });
      modifiedCount += 1;
    }
    return Promise.resolve({ modifiedCount });
  };
  return {
    updateOne: (filter: Record<string, unknown>, pipeline: { $set: Record<string, unknown> }[]) => update(filter, pipeline, false),
    updateMany: (filter: Record<string, unknown>, pipeline: { $set: Record<string, unknown> }[]) => update(filter, pipeline, true),
  };
}

describe('shard leases on MongoDB: a release against a renewal under way', () => {
  const TTL_MS = 5_000;
  const storeWith = (docs: Map<number, Doc>, operationTimes: number[]) =>
    createMongoLeases({ shardLeases: leaseCollection(docs, operationTimes) } as unknown as Collections);

  it('when a renewal whose $$NOW is from before the release applies after it (a write conflict retried), then the lease stays released', async () => {
    const docs = new Map<number, Doc>([[1, { _id: 1, owner: 'node-a', epoch: 3, expiresAt: new Date(10_000) }]]);
    // the release runs at 8 000; the renewal's operation time is 7 990, fixed when it began
    const store = storeWith(docs, [8_000, 7_990]);

    await store.release('node-a', [1]);
    const kept = await store.renew('node-a', [{ shard: 1, epoch: 3 }], TTL_MS);

    expect(kept, 'renewed after its release').to.deep.equal([]);
    expect(docs.get(1)?.expiresAt).to.deep.equal(RELEASED_AT);
  });

  it('when the lease is not released, then the same renewal extends it by the TTL from its own time', async () => {
    const docs = new Map<number, Doc>([[1, { _id: 1, owner: 'node-a', epoch: 3, expiresAt: new Date(10_000) }]]);
    const store = storeWith(docs, [7_990]);

    expect(await store.renew('node-a', [{ shard: 1, epoch: 3 }], TTL_MS)).to.deep.equal([1]);
    expect(docs.get(1)?.expiresAt).to.deep.equal(new Date(7_990 + TTL_MS));
  });

  it('when a node releases, then only its own leases are released', async () => {
    const docs = new Map<number, Doc>([
      [1, { _id: 1, owner: 'node-a', epoch: 3, expiresAt: new Date(10_000) }],
      [2, { _id: 2, owner: 'node-b', epoch: 1, expiresAt: new Date(10_000) }],
    ]);
    await storeWith(docs, [8_000]).release('node-a', [1, 2]);

    expect(docs.get(1)?.expiresAt).to.deep.equal(RELEASED_AT);
    expect(docs.get(2)?.expiresAt).to.deep.equal(new Date(10_000));
  });
});
