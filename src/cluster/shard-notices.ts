import { SHARD_OWNERS_SUBJECT } from '../libraries/transport/nats-names.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { ShardHold, ShardManager } from './shard-manager.js';

/** What a node tells the others when a round of its shard manager acquired shards. */
export interface ShardOwnersNotice {
  readonly owner: string;
  readonly acquired: readonly ShardHold[];
}

/** A notice as it came off the wire, or null when it is not one (another version, a stray message): ignored. */
export function shardOwnersNoticeOf(payload: unknown): ShardOwnersNotice | null {
  if (typeof payload !== 'object' || payload === null) return null;
  const { owner, acquired } = payload as Record<string, unknown>;
  if (typeof owner !== 'string' || owner === '' || !Array.isArray(acquired)) return null;
  const holds: ShardHold[] = [];
  for (const item of acquired as unknown[]) {
    if (typeof item !== 'object' || item === null) return null;
    const { shard, epoch } = item as Record<string, unknown>;
    if (!Number.isSafeInteger(shard) || !Number.isSafeInteger(epoch)) return null;
    holds.push({ shard: shard as number, epoch: epoch as number });
  }
  return { owner, acquired: holds };
}

/** Tells every node of the shards this node has just acquired (the shard manager's `announce`). */
export function announceShardOwners(transport: Transport, nodeId: string): (acquired: readonly ShardHold[]) => void {
  return (acquired) => {
    const notice: ShardOwnersNotice = { owner: nodeId, acquired };
    transport.notify(SHARD_OWNERS_SUBJECT, notice);
  };
}

/**
 * Hears the other nodes' acquisitions and hands them to this node's shard manager as routing hints (its own, which
 * it knows already, are skipped).
 */
export function listenForShardOwners(
  transport: Transport,
  manager: Pick<ShardManager, 'learn'>,
  nodeId: string,
): Promise<{ stop(): Promise<void> }> {
  return transport.listen(SHARD_OWNERS_SUBJECT, (payload) => {
    const notice = shardOwnersNoticeOf(payload);
    if (notice !== null && notice.owner !== nodeId) manager.learn(notice.owner, notice.acquired);
  });
}
