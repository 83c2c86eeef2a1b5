import { LRUCache } from 'lru-cache';
import type { Directory } from './directory-port.js';

/** The directory with a memory of message owners; `rememberOwner` keeps an owner this node has just seen recorded. */
export type MessageOwnerCache = Directory & {
  rememberOwner(messageId: string, merchantId: string): void;
};

/**
 * The directory with a memory of message owners. A message's owner never changes once recorded, so a cached
 * answer is never stale: status reads and receipts find the owner without a database round trip. Concurrent
 * lookups of one message share one query. An unknown message is not remembered (it may be recorded later, on this
 * node or another). At `limit` entries the least recently used is forgotten first.
 */
export function withMessageOwnerCache(directory: Directory, limit: number): MessageOwnerCache {
  const owners = new LRUCache<string, string>({ max: limit });
  const lookups = new Map<string, Promise<string | null>>();

  function rememberOwner(messageId: string, merchantId: string): void {
    if (!owners.has(messageId)) owners.set(messageId, merchantId);
  }

  const cached: Pick<MessageOwnerCache, 'messageOwner' | 'rememberOwner'> = {
    rememberOwner,
    messageOwner(messageId) {
      const cached = owners.get(messageId);
      if (cached !== undefined) return Promise.resolve(cached);
      const running = lookups.get(messageId);
      if (running) return running;
      const lookup = directory.messageOwner(messageId).then(
        (owner) => {
          lookups.delete(messageId);
          if (owner !== null) rememberOwner(messageId, owner);
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
