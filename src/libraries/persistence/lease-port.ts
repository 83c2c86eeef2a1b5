/**
 * Shard leases (docs/architecture.md, "Cluster"): a node owns a shard while it holds its lease, renewed every few seconds; each
 * new owner gets a higher epoch, and journal appends carry (shard, owner, epoch) so a node that lost a lease cannot
 * write for that shard any more. Time is the database's, so nodes' clocks do not matter.
 */
export interface Lease {
  readonly shard: number;
  readonly owner: string;
  readonly epoch: number;
  readonly expiresAt: number;
}

export interface LeaseStore {
  /** Records that this node is alive (nodes without a recent heartbeat do not count towards the fair share). */
  heartbeat(nodeId: string, ttlMs: number): Promise<void>;
  /** Nodes with a heartbeat younger than their TTL, sorted. */
  liveNodes(): Promise<readonly string[]>;
  /** Extends the leases this node still holds at the given epochs; returns the shards it still holds. */
  renew(nodeId: string, held: readonly { readonly shard: number; readonly epoch: number }[], ttlMs: number): Promise<readonly number[]>;
  /** Takes at most `max` of the candidate shards that nobody holds (or whose lease expired), each with a new epoch. */
  acquire(nodeId: string, candidates: readonly number[], max: number, ttlMs: number): Promise<readonly Lease[]>;
  /** Gives shards up at once (graceful hand-over); the next owner bumps the epoch. */
  release(nodeId: string, shards: readonly number[]): Promise<void>;
  /** Stops counting this node as live (graceful leave). */
  leave(nodeId: string): Promise<void>;
  list(): Promise<readonly Lease[]>;
}
