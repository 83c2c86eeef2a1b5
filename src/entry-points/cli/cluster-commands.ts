import type { Lease } from '../../libraries/persistence/lease-port.js';
import { done, type CliGateway, type CommandOutcome, type CommandSpec } from './command.js';
import { fields, humanTime, isoTime, table } from './format.js';

/**
 * Shard ownership as the database records it (docs/architecture.md, "Cluster"): live nodes (recent heartbeat), who holds which
 * shard under which epoch, and the shards nobody holds right now (a failover in progress, or no node running).
 */

/** "0-3,7,9-10" */
export function shardRanges(shards: readonly number[]): string {
  const runs: [number, number][] = [];
  for (const shard of [...shards].sort((a, b) => a - b)) {
    const last = runs.at(-1);
    if (last && shard === last[1] + 1) last[1] = shard;
    else runs.push([shard, shard]);
  }
  return runs.map(([first, end]) => (first === end ? String(first) : `${String(first)}-${String(end)}`)).join(',');
}

export async function clusterStatus(gateway: CliGateway): Promise<CommandOutcome> {
  const now = gateway.clock.now();
  const [live, leases] = await Promise.all([gateway.persistence.leases.liveNodes(), gateway.persistence.leases.list()]);
  const total = gateway.config.cluster.shards;
  const held = leases.filter((lease) => lease.expiresAt > now && lease.shard < total);
  const byOwner = new Map<string, Lease[]>();
  for (const lease of held) byOwner.set(lease.owner, [...(byOwner.get(lease.owner) ?? []), lease]);
  const owners = [...new Set([...live, ...byOwner.keys()])].sort();
  const heldShards = new Set(held.map((lease) => lease.shard));
  const unowned = Array.from({ length: total }, (_, shard) => shard).filter((shard) => !heldShards.has(shard));

  const nodes = owners.map((node) => {
    const mine = (byOwner.get(node) ?? []).sort((a, b) => a.shard - b.shard);
    return {
      node_id: node,
      live: live.includes(node),
      shard_count: mine.length,
      shards: mine.map((lease) => ({ shard: lease.shard, epoch: lease.epoch, expires_at: isoTime(lease.expiresAt) })),
    };
  });
  const summary = fields([
    ['Mode', gateway.config.mode],
    ['Shards', String(total)],
    ['Live nodes', String(live.length)],
    ['Unowned shards', unowned.length === 0 ? 'none' : `${String(unowned.length)} (${shardRanges(unowned)})`],
    ['As of', humanTime(now)],
  ]);
  const ownership = table(
    ['NODE', 'LIVE', 'SHARDS', 'HELD'],
    nodes.map((node) => [node.node_id, node.live ? 'yes' : 'no', String(node.shard_count), shardRanges(node.shards.map((s) => s.shard))]),
    'No node holds a shard.',
  );
  return done(`${summary}\n\n${ownership}`, { shards: total, live_nodes: live, unowned_shards: unowned, nodes, as_of: isoTime(now) });
}

export const CLUSTER_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['cluster', 'status'],
    args: [],
    summary: 'live nodes, the shards each holds (with lease epochs in --json) and the shards nobody holds',
    prepare: () => clusterStatus,
  },
];
