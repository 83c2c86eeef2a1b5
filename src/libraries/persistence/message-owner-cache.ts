import { LRUCache } from 'lru-cache';
import type { Directory } from './directory-port.js';

/** The directory with a memory of message owners; `rememberOwner` keeps an owner this node has just seen recorded. */
export type MessageOwnerCache = Directory & {
  rememberOwner(messageId: string, merchantId: string): void;
};

/** Most message ids in one owners query; more misses in one turn go out as several queries. */
export const OWNER_LOOKUP_BATCH = 500;

/**
 * The directory with a memory of message owners. A message's owner never changes once recorded, so a cached
 * answer is never stale: status reads and receipts find the owner without a database round trip. The lookups that
 * miss during one turn of the event loop (the messages of a receipt batch, or of several batches arriving together)
 * go to the database as one query; concurrent lookups of one message share it. An unknown message is not remembered
 * (it may be recorded later, on this node or another). At `limit` entries the least recently used is forgotten first.
 */
export function withMessageOwnerCache(
  directory: Directory,
  limit: number,
  /** Told of every query of the database: how many message ids it asks for (the cache's misses). */
  onDatabaseLookup?: (messageIds: number) => void,
): MessageOwnerCache {
  const owners = new LRUCache<string, string>({ max: limit });
  const lookups = new Map<string, Promise<string | null>>();
  /** Misses waiting for the end of this turn, each with the settling of its promise. */
  let gathered = new Map<string, { resolve(owner: string | null): void; reject(error: unknown): void }>();
  let flushing: NodeJS.Immediate | null = null;

  function rememberOwner(messageId: string, merchantId: string): void {
    if (!owners.has(messageId)) owners.set(messageId, merchantId);
  }

  function settle(ids: readonly string[], found: ReadonlyMap<string, string> | null, error: unknown, waiting: typeof gathered): void {
    for (const id of ids) {
      lookups.delete(id);
      const owner = found?.get(id) ?? null;
      if (owner !== null) rememberOwner(id, owner);
      if (found) waiting.get(id)?.resolve(owner);
      else waiting.get(id)?.reject(error);
    }
  }

  function flush(): void {
    flushing = null;
    const waiting = gathered;
    gathered = new Map();
    const ids = [...waiting.keys()];
    for (let from = 0; from < ids.length; from += OWNER_LOOKUP_BATCH) {
      const chunk = ids.slice(from, from + OWNER_LOOKUP_BATCH);
      onDatabaseLookup?.(chunk.length);
      directory.messageOwners(chunk).then(
        (found) => {
          settle(chunk, found, null, waiting);
        },
        (error: unknown) => {
          settle(chunk, null, error, waiting);
        },
      );
    }
  }

  const cached: Pick<MessageOwnerCache, 'messageOwner' | 'rememberOwner'> = {
    rememberOwner,
    messageOwner(messageId) {
      const cached = owners.get(messageId);
      if (cached !== undefined) return Promise.resolve(cached);
      const running = lookups.get(messageId);
      if (running) return running;
      const lookup = new Promise<string | null>((resolve, reject) => {
        gathered.set(messageId, { resolve, reject });
      });
      lookups.set(messageId, lookup);
      flushing ??= setImmediate(flush);
      return lookup;
    },
  };
  // every other method is looked up on `directory` at call time (it is not copied)
  return Object.assign(Object.create(directory) as Directory, cached);
}
