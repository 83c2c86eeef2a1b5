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

/** Shards as compact ranges, ascending: [0, 1, 2, 3, 7, 9, 10] → `0-3, 7, 9-10` (for log lines). */
export function shardRanges(shards: readonly number[]): string {
  const ranges: [number, number][] = [];
  for (const shard of [...new Set(shards)].sort((a, b) => a - b)) {
    const last = ranges.at(-1);
    if (last && last[1] === shard - 1) last[1] = shard;
    else ranges.push([shard, shard]);
  }
  return ranges.map(([first, last]) => (first === last ? String(first) : `${first}-${last}`)).join(', ');
}
