import type { Lease, LeaseStore } from '../lease-port.js';
import type { Collections, LeaseDoc } from './mongo-collections.js';
import { isDuplicateKey } from './mongo-errors.js';

/**
 * Leases on MongoDB: one document per shard, changed by single-document atomic updates whose time is the server's
 * (`$$NOW` in pipeline updates), so two nodes cannot both take a shard and nodes' clocks do not matter.
 *
 * A release sets the lease's expiry to a fixed instant long past ({@link RELEASED_AT}), not to `$$NOW`. `$$NOW` is
 * one value for a whole operation: a renewal that began before the release and was retried after it (a write
 * conflict on the document) would judge the released lease by its earlier `$$NOW`, find it live, and bring it back
 * for a TTL, keeping the shard from the node that takes it next. No renewal's time is before the epoch.
 */
export const RELEASED_AT = new Date(0);

export function createMongoLeases(c: Collections): LeaseStore {
  const expiry = (ttlMs: number) => ({ $add: ['$$NOW', ttlMs] });
  const toLease = (doc: LeaseDoc): Lease => ({
    shard: doc._id,
    owner: String(doc.owner),
    epoch: Number(doc.epoch),
    expiresAt: doc.expiresAt instanceof Date ? doc.expiresAt.getTime() : 0,
  });
  return {
    async heartbeat(nodeId, ttlMs) {
      await c.clusterNodes.updateOne({ _id: nodeId }, [{ $set: { expiresAt: expiry(ttlMs) } }], { upsert: true });
    },
    async liveNodes() {
      const docs = await c.clusterNodes
        .find({ $expr: { $gt: ['$expiresAt', '$$NOW'] } })
        .sort({ _id: 1 })
        .toArray();
      return docs.map((d) => d._id);
    },
    async renew(nodeId, held, ttlMs) {
      const kept: number[] = [];
      for (const { shard, epoch } of held) {
        const result = await c.shardLeases.updateOne({ _id: shard, owner: nodeId, epoch, $expr: { $gt: ['$expiresAt', '$$NOW'] } }, [
          { $set: { expiresAt: expiry(ttlMs) } },
        ]);
        if (result.modifiedCount === 1) kept.push(shard);
      }
      return kept;
    },
    async acquire(nodeId, candidates, max, ttlMs) {
      const taken: Lease[] = [];
      for (const shard of candidates) {
        if (taken.length >= max) break;
        try {
          const doc = await c.shardLeases.findOneAndUpdate(
            { _id: shard, $expr: { $lte: ['$expiresAt', '$$NOW'] } },
            [{ $set: { owner: nodeId, epoch: { $add: [{ $ifNull: ['$epoch', 0] }, 1] }, expiresAt: expiry(ttlMs) } }],
            { upsert: true, returnDocument: 'after' },
          );
          if (doc) taken.push(toLease(doc));
        } catch (error) {
          // a live lease exists: the upsert's insert collides with it
          if (!isDuplicateKey(error)) throw error;
        }
      }
      return taken;
    },
    async release(nodeId, shards) {
      if (shards.length === 0) return;
      await c.shardLeases.updateMany({ _id: { $in: [...shards] }, owner: nodeId }, [{ $set: { expiresAt: RELEASED_AT } }]);
    },
    async leave(nodeId) {
      await c.clusterNodes.deleteOne({ _id: nodeId });
    },
    async list() {
      const docs = await c.shardLeases.find({}).sort({ _id: 1 }).toArray();
      return docs.map(toLease);
    },
  };
}
