import type { Lease, LeaseStore } from '../lease-port.js';
import type { SqlQueries } from './sql-executor.js';

interface LeaseRow {
  shard: number;
  owner: string;
  epoch: number;
  expires_at: number;
}

const toLease = (r: LeaseRow): Lease => ({ shard: r.shard, owner: r.owner, epoch: r.epoch, expiresAt: r.expires_at });
const LEASE_COLUMNS = 'shard, owner, epoch::float8 AS epoch, (extract(epoch FROM expires_at) * 1000)::float8 AS expires_at';

/**
 * Renews the leases a node holds at their epochs, while they are still live. "Live" is judged by the clock when the
 * row is reached (`clock_timestamp()`), not when the statement began (`now()`): a renewal that began just before a
 * release of the same shard and waited for its row lock would otherwise find the released lease (expired at the
 * release's `now()`, later than its own) live and bring it back for a whole TTL, keeping the shard from the node that
 * should take it.
 */
export const RENEW_SQL = `UPDATE shard_leases l SET expires_at = clock_timestamp() + make_interval(secs => $3::float8 / 1000)
  FROM jsonb_to_recordset($2::jsonb) AS h(shard integer, epoch bigint)
  WHERE l.shard = h.shard AND l.epoch = h.epoch AND l.owner = $1 AND l.expires_at > clock_timestamp()
  RETURNING l.shard`;

export function createSqlLeases(db: SqlQueries): LeaseStore {
  return {
    async heartbeat(nodeId, ttlMs) {
      await db.query(
        `INSERT INTO cluster_nodes (node_id, expires_at) VALUES ($1, now() + make_interval(secs => $2::float8 / 1000))
         ON CONFLICT (node_id) DO UPDATE SET expires_at = EXCLUDED.expires_at`,
        [nodeId, ttlMs],
      );
    },
    async liveNodes() {
      const rows = await db.query<{ node_id: string }>('SELECT node_id FROM cluster_nodes WHERE expires_at > now() ORDER BY node_id');
      return rows.map((r) => r.node_id);
    },
    async renew(nodeId, held, ttlMs) {
      if (held.length === 0) return [];
      const rows = await db.query<{ shard: number }>(RENEW_SQL, [nodeId, JSON.stringify(held), ttlMs]);
      return rows.map((r) => r.shard);
    },
    async acquire(nodeId, candidates, max, ttlMs) {
      if (candidates.length === 0 || max <= 0) return [];
      // free shards first (never leased), then expired ones; one statement, so two nodes cannot both win a shard
      const rows = await db.query<LeaseRow>(
        `WITH wanted AS (
           SELECT c.shard FROM unnest($2::integer[]) AS c(shard)
           LEFT JOIN shard_leases l ON l.shard = c.shard
           WHERE l.shard IS NULL OR l.expires_at <= now()
           ORDER BY c.shard LIMIT $3
         )
         INSERT INTO shard_leases (shard, owner, epoch, expires_at)
         SELECT shard, $1, 1, now() + make_interval(secs => $4::float8 / 1000) FROM wanted
         ON CONFLICT (shard) DO UPDATE SET owner = EXCLUDED.owner, epoch = shard_leases.epoch + 1, expires_at = EXCLUDED.expires_at
           WHERE shard_leases.expires_at <= now()
         RETURNING ${LEASE_COLUMNS}`,
        [nodeId, [...candidates], max, ttlMs],
      );
      return rows.map(toLease);
    },
    async release(nodeId, shards) {
      if (shards.length === 0) return;
      await db.query('UPDATE shard_leases SET expires_at = now() WHERE owner = $1 AND shard = ANY($2::integer[])', [nodeId, [...shards]]);
    },
    async leave(nodeId) {
      await db.query('DELETE FROM cluster_nodes WHERE node_id = $1', [nodeId]);
    },
    async list() {
      const rows = await db.query<LeaseRow>(`SELECT ${LEASE_COLUMNS} FROM shard_leases ORDER BY shard`);
      return rows.map(toLease);
    },
  };
}
