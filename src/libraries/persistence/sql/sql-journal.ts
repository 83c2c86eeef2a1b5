import {
  outboxEntriesOf,
  recordsOf,
  type Journal,
  type JournalAppend,
  type JournalRecord,
  type Outbox,
  type PendingOutboxEntry,
  type Snapshot,
} from '../journal-port.js';
import { createGroupCommit, DEFAULT_GROUP_COMMIT_OPTIONS, type GroupCommitOptions, type PendingAppend } from '../group-commit.js';
import type { SqlExecutor } from './sql-executor.js';
import { JournalConflictError } from '../../errors/internal-errors.js';

export interface SqlJournalOptions extends GroupCommitOptions {
  /**
   * How long outbox done marks wait for a journal append to carry them (a delete in the append's own statement)
   * before they go out in a statement of their own; 0 or unset: every `markDone` is a statement at once. On a busy
   * node an append leaves every few milliseconds, and the marks cost no statement of their own.
   */
  readonly doneMarksWaitMs?: number;
}

export const DEFAULT_SQL_JOURNAL_OPTIONS: SqlJournalOptions = { ...DEFAULT_GROUP_COMMIT_OPTIONS, doneMarksWaitMs: 20 };

const DELETE_DONE_SQL = 'DELETE FROM outbox WHERE id = ANY($1::text[])';

// One statement writes every append of a batch whose fence (if any) is current, skips (key, seq) pairs already
// taken, writes the companion records of exactly the appends that went in (an append whose companion's key already
// holds a record is refused), the outbox entries and owners of every record written, and removes the entries those
// appends retire (only entries of their own key); it also deletes the outbox entries marked done since the last one.
export const APPEND_BATCH_SQL = `
WITH input AS (
  SELECT * FROM jsonb_to_recordset($1::jsonb)
    AS i(key text, seq bigint, events jsonb, at bigint, fence_shard integer, fence_owner text, fence_epoch bigint)
), companion_input AS (
  SELECT * FROM jsonb_to_recordset($5::jsonb)
    AS c(parent_key text, parent_seq bigint, key text, seq bigint, events jsonb, at bigint)
), allowed AS (
  SELECT i.key, i.seq, i.events, i.at FROM input i
  WHERE (i.fence_shard IS NULL OR EXISTS (
    SELECT 1 FROM shard_leases l
    WHERE l.shard = i.fence_shard AND l.owner = i.fence_owner AND l.epoch = i.fence_epoch AND l.expires_at > now()))
    -- a key pruned past this sequence number (journal prune) keeps a later record: a stale writer still conflicts
    AND NOT EXISTS (SELECT 1 FROM journal j WHERE j.key = i.key AND j.seq > i.seq)
    -- a companion is a key's first record: one whose key is already written refuses its carrier. Each companion's key
    -- is probed through the journal's primary key: written as a join, the check was planned as a hash join over a scan
    -- of the whole journal, on every batch that carried a companion (every send). The probe asks for the key's first
    -- record in the primary key's order, which only the index gives at no cost: without the order, a plan made while
    -- the journal was small (a new database, statistics not yet gathered) scanned it, and the prepared statement kept
    -- that plan as the journal grew
    AND NOT EXISTS (
      SELECT 1 FROM companion_input c
      WHERE c.parent_key = i.key AND c.parent_seq = i.seq
        AND (SELECT j.seq FROM journal j WHERE j.key = c.key ORDER BY j.seq LIMIT 1) IS NOT NULL)
), written AS (
  INSERT INTO journal (key, seq, events, at) SELECT key, seq, events, at FROM allowed
  ON CONFLICT (key, seq) DO NOTHING
  RETURNING key, seq
), companions_written AS (
  INSERT INTO journal (key, seq, events, at)
  SELECT c.key, c.seq, c.events, c.at FROM companion_input c
  JOIN written w ON w.key = c.parent_key AND w.seq = c.parent_seq
  ON CONFLICT (key, seq) DO NOTHING
  RETURNING key, seq
), all_written AS (
  SELECT key, seq FROM written UNION ALL SELECT key, seq FROM companions_written
), queued AS (
  INSERT INTO outbox (id, key, seq, topic, payload, shard, created_at)
  SELECT o.id, o.key, o.seq, o.topic, o.payload, o.shard, o.created_at
  FROM jsonb_to_recordset($2::jsonb)
    AS o(id text, key text, seq bigint, topic text, payload jsonb, shard integer, created_at bigint)
  JOIN all_written w ON w.key = o.key AND w.seq = o.seq
  ON CONFLICT (id) DO NOTHING
), retired AS (
  DELETE FROM outbox
  USING jsonb_to_recordset($3::jsonb) AS r(id text, key text, seq bigint)
  JOIN written w ON w.key = r.key AND w.seq = r.seq
  WHERE outbox.id = r.id AND outbox.key = r.key
), owned AS (
  INSERT INTO message_owners (message_id, merchant_id, created_at)
  SELECT o.id, o.owner, o.at
  FROM jsonb_to_recordset($4::jsonb) AS o(id text, owner text, at bigint, key text, seq bigint)
  JOIN all_written w ON w.key = o.key AND w.seq = o.seq
  ON CONFLICT (message_id) DO NOTHING
), done AS (
  -- outbox entries carried out meanwhile (done marks), whatever the appends' fate
  DELETE FROM outbox WHERE id = ANY($6::text[])
)
SELECT key, seq::float8 AS seq FROM written`;

/** SQLSTATE class 22, "data exception": the statement's data, not the database, is at fault. */
function isDataException(error: unknown): boolean {
  const code = (error as { code?: unknown } | null)?.code;
  return typeof code === 'string' && code.startsWith('22');
}

export function createSqlJournal(db: SqlExecutor, options: SqlJournalOptions = DEFAULT_SQL_JOURNAL_OPTIONS): Journal & Outbox {
  const listeners = new Set<(entries: readonly PendingOutboxEntry[]) => void>();
  const doneMarks = createDoneMarks(db, options.doneMarksWaitMs ?? 0);

  async function writeBatch(batch: readonly PendingAppend[]): Promise<void> {
    // two appends of one (key, seq) in a batch: the first competes, the others lost already
    const seen = new Set<string>();
    const contenders: PendingAppend[] = [];
    for (const pending of batch) {
      const id = `${pending.item.key}\u0000${pending.item.seq}`;
      if (seen.has(id)) pending.reject(new JournalConflictError(pending.item.key, pending.item.seq, 'sequence_taken'));
      else {
        seen.add(id);
        contenders.push(pending);
      }
    }
    const appends = contenders.map((p) => p.item);
    const journalRows = appends.map((a) => ({
      key: a.key,
      seq: a.seq,
      events: a.events,
      at: a.at,
      fence_shard: a.fence?.shard ?? null,
      fence_owner: a.fence?.owner ?? null,
      fence_epoch: a.fence?.epoch ?? null,
    }));
    const records = appends.flatMap(recordsOf);
    const outboxRows = records.flatMap((r) =>
      r.outbox.map((entry) => ({
        id: entry.id,
        key: r.key,
        seq: r.seq,
        topic: entry.topic,
        payload: entry.payload,
        shard: entry.shard,
        created_at: r.at,
      })),
    );
    const retiredRows = appends.flatMap((a) => (a.retire ?? []).map((id) => ({ id, key: a.key, seq: a.seq })));
    const ownerRows = records.flatMap((r) => (r.owner ? [{ id: r.owner.id, owner: r.owner.owner, at: r.at, key: r.key, seq: r.seq }] : []));
    const companionRows = appends.flatMap((a) =>
      (a.companions ?? []).map((c) => ({ parent_key: a.key, parent_seq: a.seq, key: c.key, seq: c.seq, events: c.events, at: a.at })),
    );
    const marks = doneMarks.take();
    let written: readonly { key: string; seq: number }[];
    try {
      written = await db.query<{ key: string; seq: number }>(
        APPEND_BATCH_SQL,
        [
          JSON.stringify(journalRows),
          JSON.stringify(outboxRows),
          JSON.stringify(retiredRows),
          JSON.stringify(ownerRows),
          JSON.stringify(companionRows),
          marks.ids,
        ],
        {
          prepare: true,
        },
      );
      marks.done();
    } catch (error) {
      // the marks do not depend on the appends: they go out on their own
      void doneMarks.deleteAlone(marks);
      // an append whose data the database refuses (a NUL in its text, say) must not fail the others batched with
      // it: the batch is halved until the guilty one is alone. Any other failure (the database down) fails all.
      if (contenders.length > 1 && isDataException(error)) {
        const middle = Math.ceil(contenders.length / 2);
        await Promise.all([writeBatch(contenders.slice(0, middle)), writeBatch(contenders.slice(middle))]);
      } else for (const pending of contenders) pending.reject(error);
      return;
    }
    const ok = new Set(written.map((w) => `${w.key}\u0000${w.seq}`));
    const refused = contenders.filter((p) => !ok.has(`${p.item.key}\u0000${p.item.seq}`));
    const taken = refused.length > 0 ? await existing(refused.map((p) => p.item)) : new Set<string>();
    const relayable: PendingOutboxEntry[] = [];
    for (const pending of contenders) {
      const id = `${pending.item.key}\u0000${pending.item.seq}`;
      if (ok.has(id)) {
        pending.resolve();
        relayable.push(...outboxEntriesOf(pending.item));
      } else
        pending.reject(
          new JournalConflictError(pending.item.key, pending.item.seq, taken.has(id) || !pending.item.fence ? 'sequence_taken' : 'fenced'),
        );
    }
    if (relayable.length > 0) for (const listener of listeners) listener(relayable);
  }

  async function existing(appends: readonly JournalAppend[]): Promise<Set<string>> {
    // probes: the append's own (key, seq), and any record of each companion's key
    const probes = appends.flatMap((a) => [
      { key: a.key, seq: a.seq, probe: a.key, probe_seq: a.seq },
      ...(a.companions ?? []).map((c) => ({ key: a.key, seq: a.seq, probe: c.key, probe_seq: 0 })),
    ]);
    const rows = await db
      .query<{ key: string; seq: number }>(
        `SELECT DISTINCT i.key, i.seq::float8 AS seq FROM journal j
         JOIN jsonb_to_recordset($1::jsonb) AS i(key text, seq bigint, probe text, probe_seq bigint)
           ON i.probe = j.key AND i.probe_seq <= j.seq`,
        [JSON.stringify(probes)],
      )
      .catch(() => []);
    // a later record taken counts as this one taken (a pruned key keeps its last record)
    return new Set(rows.map((r) => `${r.key}\u0000${r.seq}`));
  }

  return {
    // an append waits for the earlier one of its key still being written: the later one committing first would make
    // the earlier look stale (a later record of its key exists) and refuse it
    append: createGroupCommit({ ...options, keyOf: (append) => append.key }, writeBatch),
    writesCompanions: true,

    async read(key, afterSeq) {
      const rows = await db.query<{ seq: number; events: unknown[]; at: number }>(
        'SELECT seq::float8 AS seq, events, at::float8 AS at FROM journal WHERE key = $1 AND seq > $2 ORDER BY seq',
        [key, afterSeq],
      );
      return rows.map((r): JournalRecord => ({ key, seq: r.seq, events: r.events, at: r.at }));
    },

    async latestSnapshot(key) {
      const rows = await db.query<{ seq: number; state: unknown; at: number }>(
        'SELECT seq::float8 AS seq, state, at::float8 AS at FROM snapshots WHERE key = $1',
        [key],
      );
      const row = rows[0];
      return row ? { key, seq: row.seq, state: row.state, at: row.at } : null;
    },

    async saveSnapshot(snapshot: Snapshot) {
      await db.query(
        `INSERT INTO snapshots (key, seq, state, at) VALUES ($1, $2, $3::jsonb, $4)
         ON CONFLICT (key) DO UPDATE SET seq = EXCLUDED.seq, state = EXCLUDED.state, at = EXCLUDED.at
         WHERE snapshots.seq < EXCLUDED.seq`,
        [snapshot.key, snapshot.seq, JSON.stringify(snapshot.state), snapshot.at],
      );
    },

    async prunable({ prefix, lastBefore, limit }) {
      const rows = await db.query<{ key: string; seq: number }>(
        `SELECT key, max(seq)::float8 AS seq FROM journal
         WHERE left(key, length($1)) = $1
         GROUP BY key HAVING max(at) < $2 AND min(seq) < max(seq)
         ORDER BY max(at), key LIMIT $3`,
        [prefix, lastBefore, limit],
      );
      return rows.map((r) => ({ key: r.key, seq: r.seq }));
    },

    async pruneBefore(key, seq) {
      const rows = await db.query<{ n: number }>(
        `WITH gone AS (
           DELETE FROM journal WHERE key = $1 AND seq < $2
           AND EXISTS (SELECT 1 FROM snapshots s WHERE s.key = $1 AND s.seq >= $2)
           RETURNING 1)
         SELECT count(*)::integer AS n FROM gone`,
        [key, seq],
      );
      return rows[0]?.n ?? 0;
    },

    async pending({ limit, shards, topics, olderThan }) {
      // only the conditions asked for, each a plain comparison, and the order by the table's column (a bare
      // `created_at` would name the float8 output column), so the planner walks outbox_by_topic_and_age in order and
      // stops at the limit instead of collecting and sorting (the outbox holds a day of receipt deadlines)
      const params: unknown[] = [limit];
      const where: string[] = [];
      if (topics)
        where.push(topics.length === 1 ? `topic = $${params.push(topics[0])}` : `topic = ANY($${params.push([...topics])}::text[])`);
      if (olderThan !== undefined) where.push(`created_at < $${params.push(olderThan)}::bigint`);
      if (shards) where.push(`shard = ANY($${params.push([...shards])}::integer[])`);
      const rows = await db.query<{
        id: string;
        key: string;
        seq: number;
        topic: string;
        payload: unknown;
        shard: number;
        created_at: number;
      }>(
        `SELECT id, key, seq::float8 AS seq, topic, payload, shard, created_at::float8 AS created_at FROM outbox
         ${where.length > 0 ? `WHERE ${where.join(' AND ')}` : ''}
         ORDER BY outbox.created_at, outbox.id LIMIT $1`,
        params,
      );
      return rows.map((r): PendingOutboxEntry => ({
        id: r.id,
        key: r.key,
        seq: r.seq,
        topic: r.topic,
        payload: r.payload,
        shard: r.shard,
        createdAt: r.created_at,
      }));
    },

    async pendingTopics({ topics, shards }) {
      if (topics.length === 0) return new Set();
      // an age limit for every topic (none: later than any entry), so each probe is one index range of
      // outbox_by_topic_and_age that stops at its first entry
      const params: unknown[] = [topics.map((t) => t.topic), topics.map((t) => t.olderThan ?? Number.MAX_SAFE_INTEGER)];
      const inShards = shards ? ` AND o.shard = ANY($${params.push([...shards])}::integer[])` : '';
      const rows = await db.query<{ topic: string }>(
        `SELECT t.topic FROM unnest($1::text[], $2::bigint[]) AS t(topic, older_than)
         WHERE EXISTS (SELECT 1 FROM outbox o WHERE o.topic = t.topic AND o.created_at < t.older_than${inShards})`,
        params,
      );
      return new Set(rows.map((r) => r.topic));
    },

    markDone: (ids) => doneMarks.mark(ids),

    async backlog() {
      const rows = await db.query<{ n: number }>('SELECT count(*)::integer AS n FROM outbox');
      return rows[0]?.n ?? 0;
    },

    onAppended(listener) {
      listeners.add(listener);
      return () => listeners.delete(listener);
    },
  };
}

/** Done marks taken by a statement, settled with it. */
interface TakenMarks {
  readonly ids: readonly string[];
  done(): void;
  failed(error: unknown): void;
}

/**
 * Outbox done marks waiting for a statement: the next journal append's (`take`), or their own once they have waited
 * `waitMs`. Each `mark` resolves when a statement that deleted its ids has committed, and rejects when it failed.
 */
function createDoneMarks(db: SqlExecutor, waitMs: number) {
  let ids: string[] = [];
  let waiting: { resolve(): void; reject(error: unknown): void }[] = [];
  let timer: NodeJS.Timeout | null = null;

  function take(): TakenMarks {
    if (timer) clearTimeout(timer);
    timer = null;
    const taken = waiting;
    const marks: TakenMarks = {
      ids,
      done: () => {
        for (const mark of taken) mark.resolve();
      },
      failed: (error) => {
        for (const mark of taken) mark.reject(error);
      },
    };
    ids = [];
    waiting = [];
    return marks;
  }

  async function deleteAlone(marks: TakenMarks): Promise<void> {
    if (marks.ids.length === 0) return;
    try {
      await db.query(DELETE_DONE_SQL, [marks.ids]);
      marks.done();
    } catch (error) {
      marks.failed(error);
    }
  }

  return {
    take,
    deleteAlone,
    async mark(marked: readonly string[]): Promise<void> {
      if (marked.length === 0) return;
      if (waitMs <= 0) {
        await db.query(DELETE_DONE_SQL, [[...marked]]);
        return;
      }
      await new Promise<void>((resolve, reject) => {
        ids.push(...marked);
        waiting.push({ resolve, reject });
        timer ??= setTimeout(() => void deleteAlone(take()), waitMs);
      });
    },
  };
}
