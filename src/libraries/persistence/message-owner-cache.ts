import { LRUCache } from 'lru-cache';
import type { Directory } from './directory-port.js';

/**
 * The directory with a memory of message owners. A message's owner never changes once recorded, so a cached
 * answer is never stale: status reads and receipts find the owner without a database round trip. Concurrent
 * lookups of one message share one query. An unknown message is not remembered (it may be recorded later, on this
 * node or another). At `limit` entries the least recently used is forgotten first.
 */
export function withMessageOwnerCache(directory: Directory, limit: number): Directory {
  const owners = new LRUCache<string, string>({ max: limit });
  const lookups = new Map<string, Promise<string | null>>();

  function remember(messageId: string, merchantId: string): void {
    if (!owners.has(messageId)) owners.set(messageId, merchantId);
  }

  const cached: Pick<Directory, 'recordMessageOwner' | 'messageOwner'> = {
    async recordMessageOwner(messageId, merchantId, at) {
      await directory.recordMessageOwner(messageId, merchantId, at);
      remember(messageId, merchantId);
    },
    messageOwner(messageId) {
      const cached = owners.get(messageId);
      if (cached !== undefined) return Promise.resolve(cached);
      const running = lookups.get(messageId);
      if (running) return running;
      const lookup = directory.messageOwner(messageId).then(
        (owner) => {
          lookups.delete(messageId);
          if (owner !== null) remember(messageId, owner);
          return owner;
        },
        (error: unknown) => {
          lookups.delete(messageId);
          throw error;
        },
      );
      lookups.set(messageId, lookup);
      return lookup;
    },
  };
  // every other method is looked up on `directory` at call time (it is not copied)
  return Object.assign(Object.create(directory) as Directory, cached);
}
