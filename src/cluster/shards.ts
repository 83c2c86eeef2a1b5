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

/**
 * A set of shards on the wire: a bitmap (bit `s % 8` of byte `s / 8` set for shard `s`) in base64url, `ceil(shards /
 * 6)` characters at most whatever the set holds (64 shards: 11 characters).
 */
export function encodeShardSet(set: readonly number[], shards: number): string {
  const bytes = Buffer.alloc(Math.ceil(shards / 8));
  for (const shard of set) {
    if (Number.isInteger(shard) && shard >= 0 && shard < shards)
      bytes.writeUInt8(bytes.readUInt8(shard >> 3) | (1 << (shard & 7)), shard >> 3);
  }
  return bytes.toString('base64url');
}

/** The shards of an encoded set, ascending; null when `encoded` is not a set of `shards` shards. */
export function decodeShardSet(encoded: unknown, shards: number): number[] | null {
  if (typeof encoded !== 'string' || !/^[A-Za-z0-9_-]*$/.test(encoded)) return null;
  const bytes = Buffer.from(encoded, 'base64url');
  if (bytes.length !== Math.ceil(shards / 8)) return null;
  const set: number[] = [];
  for (let shard = 0; shard < shards; shard++) if ((bytes.readUInt8(shard >> 3) & (1 << (shard & 7))) !== 0) set.push(shard);
  return set;
}
