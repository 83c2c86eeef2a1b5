import type { DeadLetter, DeadLetters } from '../dead-letters-port.js';
import type { SqlExecutor } from './sql-executor.js';

interface Row {
  id: string;
  event_id: string;
  merchant_id: string;
  key_id: string;
  url: string;
  auth: 'key' | 'none';
  event: unknown;
  attempts: number;
  reason: DeadLetter['reason'];
  last_status: number | null;
  last_error: string | null;
  dropped_at: number;
}

const COLUMNS =
  'id, event_id, merchant_id, key_id, url, auth, event, attempts, reason, last_status, last_error, dropped_at::float8 AS dropped_at';

const toLetter = (r: Row): DeadLetter => ({
  id: r.id,
  eventId: r.event_id,
  merchantId: r.merchant_id,
  keyId: r.key_id,
  url: r.url,
  auth: r.auth,
  event: r.event,
  attempts: r.attempts,
  reason: r.reason,
  lastStatus: r.last_status,
  lastError: r.last_error,
  droppedAt: r.dropped_at,
});

export function createSqlDeadLetters(db: SqlExecutor): DeadLetters {
  return {
    async record(l) {
      await db.query(
        `INSERT INTO webhook_dead_letters (id, event_id, merchant_id, key_id, url, auth, event, attempts, reason, last_status, last_error, dropped_at)
         VALUES ($1, $2, $3, $4, $5, $6, $7::jsonb, $8, $9, $10, $11, $12) ON CONFLICT (id) DO NOTHING`,
        [
          l.id,
          l.eventId,
          l.merchantId,
          l.keyId,
          l.url,
          l.auth,
          JSON.stringify(l.event),
          l.attempts,
          l.reason,
          l.lastStatus,
          l.lastError,
          l.droppedAt,
        ],
      );
    },
    async list({ merchantId, limit }) {
      const rows = await db.query<Row>(
        `SELECT ${COLUMNS} FROM webhook_dead_letters WHERE ($1::text IS NULL OR merchant_id = $1) ORDER BY dropped_at, id LIMIT $2`,
        [merchantId ?? null, limit],
      );
      return rows.map(toLetter);
    },
    async take(id) {
      const rows = await db.query<Row>(`DELETE FROM webhook_dead_letters WHERE id = $1 RETURNING ${COLUMNS}`, [id]);
      return rows[0] ? toLetter(rows[0]) : null;
    },
  };
}
