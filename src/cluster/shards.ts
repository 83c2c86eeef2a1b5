/**
 * Merchant → shard by a stable hash (FNV-1a, 32 bits): a merchant's key, wallet and messages share one shard,
 * so a send is one hop. The shard count is fixed per deployment.
 */
export function shardOf(merchantId: string, shards: number): number {
  let hash = 0x811c9dc5;
  for (let i = 0; i < merchantId.length; i++) {
    hash ^= merchantId.charCodeAt(i);
    hash = Math.imul(hash, 0x01000193) >>> 0;
  }
  return hash % shards;
}
