/**
 * What a send costs the database and NATS (bench:cluster): counters read before and after a stretch of load, as
 * deltas per send.
 *
 * - PostgreSQL: transactions committed (pg_stat_database of the cluster's database: every statement outside a
 *   transaction counts, reads included), rows inserted, updated and deleted per table (pg_stat_user_tables), the
 *   WAL written (pg_current_wal_flush_lsn) and, with pg_walinspect, the COMMIT records in that WAL: the transactions that
 *   wrote something, which are what a primary must flush.
 * - NATS: the server's message and byte totals (`/varz` of its monitoring endpoint: in = published by clients,
 *   out = delivered to them; JetStream's own API requests and acknowledgements included), and what JetStream
 *   stores (`/jsz`).
 * - CPU: the groups of process-cpu.ts (gateway nodes, PostgreSQL with its backends, nats-server, the connector).
 *
 * PostgreSQL's statistics counters reach pg_stat_* only when a backend flushes them, at most once a second while it
 * is busy (and within a second of going idle): read them a second or more after the load stops.
 */
import { CPU_GROUPS, type CpuGroup, type CpuSample } from './process-cpu.js';
import { parseExposition } from '../../test/helpers/prometheus-text.js';

/** One query on the cluster's database. */
export type Query = <T extends object>(text: string, params?: readonly unknown[]) => Promise<readonly T[]>;

/** Tables of the test harness's audit triggers (test/helpers/cluster.ts), not of the product. */
export const HARNESS_TABLES: readonly string[] = ['journal_audit', 'lease_audit'];

/** Counters at one moment, by name: `cpu.<group>` (ms), `db.transactions`, `db.rows.<table>.ins|upd|del`, `wal.bytes`, `nats.in_msgs`... */
export type Counters = Readonly<Record<string, number>>;

export interface CounterSample {
  /** performance.now() when it was taken. */
  readonly atMs: number;
  readonly counters: Counters;
}

/** The difference between two samples: how long, and how much each counter moved. */
export interface CounterInterval {
  readonly ms: number;
  readonly delta: Readonly<Record<string, number>>;
}

/** `X/Y` (hexadecimal halves of a WAL position) as a byte offset: exact below 2^53 bytes (8 PiB). */
export function lsnToBytes(lsn: string): number {
  const match = /^([0-9A-Fa-f]+)\/([0-9A-Fa-f]+)$/.exec(lsn.trim());
  if (!match) throw new Error(`not a WAL position: ${JSON.stringify(lsn)}`);
  return Number.parseInt(match[1] ?? '0', 16) * 2 ** 32 + Number.parseInt(match[2] ?? '0', 16);
}

/** pg_stat_database (this database) and pg_stat_user_tables, as counters. */
export async function readDatabaseCounters(query: Query): Promise<Record<string, number>> {
  const [database] = await query<{ commits: number; rollbacks: number }>(
    'SELECT xact_commit::float8 AS commits, xact_rollback::float8 AS rollbacks FROM pg_stat_database WHERE datname = current_database()',
  );
  const tables = await query<{ name: string; ins: number; upd: number; del: number }>(
    'SELECT relname AS name, n_tup_ins::float8 AS ins, n_tup_upd::float8 AS upd, n_tup_del::float8 AS del FROM pg_stat_user_tables',
  );
  const counters: Record<string, number> = {
    'db.transactions': database?.commits ?? Number.NaN,
    'db.rollbacks': database?.rollbacks ?? Number.NaN,
  };
  for (const table of tables) {
    counters[`db.rows.${table.name}.ins`] = table.ins;
    counters[`db.rows.${table.name}.upd`] = table.upd;
    counters[`db.rows.${table.name}.del`] = table.del;
  }
  return counters;
}

/**
 * How far the server has flushed its WAL, as `wal.position` (bytes) and the LSN text for `walCommits` (which reads
 * only flushed WAL; the flush trails the writes by at most the WAL writer's delay, 200 ms by default).
 */
export async function readWalPosition(query: Query): Promise<{ counters: Record<string, number>; lsn: string }> {
  const [row] = await query<{ lsn: string }>('SELECT pg_current_wal_flush_lsn()::text AS lsn');
  const lsn = row?.lsn ?? '0/0';
  return { counters: { 'wal.position': lsnToBytes(lsn) }, lsn };
}

/** Installs pg_walinspect (contrib) in the database when the server has it; false otherwise (then no write commits). */
export async function enableWalInspection(query: Query): Promise<boolean> {
  try {
    await query('CREATE EXTENSION IF NOT EXISTS pg_walinspect');
    return true;
  } catch {
    return false;
  }
}

/**
 * COMMIT records in the WAL between two positions (every database of the server): transactions that wrote. Null
 * when it cannot be read (no pg_walinspect, or the segments were recycled meanwhile).
 */
export async function walCommits(query: Query, fromLsn: string, toLsn: string): Promise<number | null> {
  try {
    const rows = await query<{ kind: string; n: number }>(
      `SELECT "resource_manager/record_type" AS kind, count::float8 AS n FROM pg_get_wal_stats($1::pg_lsn, $2::pg_lsn, true)`,
      [fromLsn, toLsn],
    );
    return rows.filter((r) => r.kind === 'Transaction/COMMIT').reduce((n, r) => n + r.n, 0);
  } catch {
    return null;
  }
}

/**
 * The nats-server's totals from `<monitorUrl>/varz` (messages and bytes in and out) and `/jsz` (what JetStream
 * stores now, every stream and key-value bucket: its growth is what the streams with limits retention keep).
 */
export async function readNatsCounters(monitorUrl: string): Promise<Record<string, number>> {
  const read = async <T>(path: string): Promise<Partial<T>> => {
    const response = await fetch(`${monitorUrl}${path}`);
    if (!response.ok) throw new Error(`${monitorUrl}${path} answered ${response.status}`);
    return (await response.json()) as Partial<T>;
  };
  const [varz, jsz] = await Promise.all([
    read<Record<'in_msgs' | 'out_msgs' | 'in_bytes' | 'out_bytes', number>>('/varz'),
    read<Record<'messages' | 'bytes', number>>('/jsz'),
  ]);
  return {
    'nats.in_msgs': varz.in_msgs ?? Number.NaN,
    'nats.out_msgs': varz.out_msgs ?? Number.NaN,
    'nats.in_bytes': varz.in_bytes ?? Number.NaN,
    'nats.out_bytes': varz.out_bytes ?? Number.NaN,
    'nats.stored_msgs': jsz.messages ?? Number.NaN,
    'nats.stored_bytes': jsz.bytes ?? Number.NaN,
  };
}

/**
 * Crossings to another node by what crossed, summed over the nodes' `sms_gateway_cluster_remote_hops_total{what}`
 * (their metrics ports), as `hops.<what>` counters.
 */
export async function readHopCounters(metricsUrls: readonly string[]): Promise<Record<string, number>> {
  const counters: Record<string, number> = {};
  const texts = await Promise.all(
    metricsUrls.map(async (url) => {
      const response = await fetch(url);
      if (!response.ok) throw new Error(`${url} answered ${response.status}`);
      return response.text();
    }),
  );
  for (const text of texts) {
    for (const sample of parseExposition(text).samples) {
      if (sample.name !== 'sms_gateway_cluster_remote_hops_total' || sample.labels.what === undefined) continue;
      const name = `hops.${sample.labels.what}`;
      counters[name] = (counters[name] ?? 0) + sample.value;
    }
  }
  return counters;
}

/** A CPU sample (seconds per group) as `cpu.<group>` counters in ms; NaN for every group without one. */
export function cpuCounters(sample: CpuSample | null): Record<string, number> {
  return Object.fromEntries(CPU_GROUPS.map((group) => [`cpu.${group}`, sample ? sample[group] * 1000 : Number.NaN]));
}

/** after − before for every counter of either (a counter missing on one side counts from 0: a table first written meanwhile). */
export function between(before: CounterSample, after: CounterSample): CounterInterval {
  const delta: Record<string, number> = {};
  for (const name of new Set([...Object.keys(before.counters), ...Object.keys(after.counters)])) {
    delta[name] = (after.counters[name] ?? 0) - (before.counters[name] ?? 0);
  }
  return { ms: after.atMs - before.atMs, delta };
}

/**
 * Each counter's movement per send over `interval`; with `idle` (an interval without load), less what the counter
 * moves at that rate over as long, i.e. less the background work of the pollers, lease renewals and heartbeats.
 */
export function perSend(interval: CounterInterval, sends: number, idle?: CounterInterval): Record<string, number> {
  const result: Record<string, number> = {};
  for (const [name, moved] of Object.entries(interval.delta)) {
    const background = idle && idle.ms > 0 ? ((idle.delta[name] ?? 0) / idle.ms) * interval.ms : 0;
    result[name] = sends > 0 ? (moved - background) / sends : Number.NaN;
  }
  return result;
}

/** Each counter's movement per second over `interval`. */
export function perSecond(interval: CounterInterval): Record<string, number> {
  return Object.fromEntries(
    Object.entries(interval.delta).map(([name, moved]) => [name, interval.ms > 0 ? (moved * 1000) / interval.ms : Number.NaN]),
  );
}

export interface TableRows {
  readonly table: string;
  readonly inserted: number;
  readonly updated: number;
  readonly deleted: number;
}

/** The per-send figures of one scope, named. */
export interface SendCosts {
  readonly rows: { readonly inserted: number; readonly updated: number; readonly deleted: number };
  /** Product tables that moved, most inserted first. */
  readonly byTable: readonly TableRows[];
  /** pg_stat_database xact_commit: every transaction, reads included. */
  readonly transactions: number;
  /** COMMIT records in the WAL: transactions that wrote (null without pg_walinspect). */
  readonly writeCommits: number | null;
  readonly walBytes: number;
  readonly nats: {
    readonly msgsIn: number;
    readonly msgsOut: number;
    readonly bytesIn: number;
    readonly bytesOut: number;
    /** Growth of what JetStream stores (messages kept by streams with limits retention, key-value entries). */
    readonly storedMsgs: number;
    readonly storedBytes: number;
  };
  /** CPU ms. */
  readonly cpuMs: Readonly<Record<CpuGroup, number>>;
  /** Crossings to another node by what crossed (`merchant-request`, `receipts`, `ask:wallet`, …). */
  readonly hops: Readonly<Record<string, number>>;
}

/** The interval with one more counter's movement (`wal.commits`, read from the WAL rather than sampled). */
export function withMovement(interval: CounterInterval, name: string, moved: number | null): CounterInterval {
  return { ms: interval.ms, delta: { ...interval.delta, [name]: moved ?? Number.NaN } };
}

/** Names the per-send counters (`perSend`'s result); `wal.commits` (see `withMovement`) gives the write commits. */
export function sendCosts(figures: Readonly<Record<string, number>>): SendCosts {
  const writeCommits = figures['wal.commits'];
  const tables = new Map<string, { inserted: number; updated: number; deleted: number }>();
  for (const [name, value] of Object.entries(figures)) {
    const match = /^db\.rows\.(.+)\.(ins|upd|del)$/.exec(name);
    if (!match || HARNESS_TABLES.includes(match[1] ?? '')) continue;
    const table = tables.get(match[1] ?? '') ?? { inserted: 0, updated: 0, deleted: 0 };
    if (match[2] === 'ins') table.inserted = value;
    else if (match[2] === 'upd') table.updated = value;
    else table.deleted = value;
    tables.set(match[1] ?? '', table);
  }
  const all = [...tables].map(([table, rows]) => ({ table, ...rows }));
  const sum = (pick: (t: TableRows) => number): number => all.reduce((n, t) => n + pick(t), 0);
  const moved = (t: TableRows): boolean => [t.inserted, t.updated, t.deleted].some((n) => Math.abs(n) >= 0.005);
  return {
    rows: { inserted: sum((t) => t.inserted), updated: sum((t) => t.updated), deleted: sum((t) => t.deleted) },
    byTable: all.filter(moved).sort((a, b) => b.inserted - a.inserted || b.updated - a.updated || a.table.localeCompare(b.table)),
    transactions: figures['db.transactions'] ?? Number.NaN,
    writeCommits: writeCommits === undefined || Number.isNaN(writeCommits) ? null : writeCommits,
    walBytes: figures['wal.position'] ?? Number.NaN,
    nats: {
      msgsIn: figures['nats.in_msgs'] ?? Number.NaN,
      msgsOut: figures['nats.out_msgs'] ?? Number.NaN,
      bytesIn: figures['nats.in_bytes'] ?? Number.NaN,
      bytesOut: figures['nats.out_bytes'] ?? Number.NaN,
      storedMsgs: figures['nats.stored_msgs'] ?? Number.NaN,
      storedBytes: figures['nats.stored_bytes'] ?? Number.NaN,
    },
    cpuMs: Object.fromEntries(CPU_GROUPS.map((group) => [group, figures[`cpu.${group}`] ?? Number.NaN])) as Record<CpuGroup, number>,
    hops: Object.fromEntries(
      Object.entries(figures)
        .filter(([name, value]) => name.startsWith('hops.') && Math.abs(value) >= 0.005)
        .map(([name, value]) => [name.slice('hops.'.length), value]),
    ),
  };
}

/** `merchant-request 0.50 · receipts 0.74` (crossings per send, most first), or `none`. */
export function formatHops(hops: Readonly<Record<string, number>>): string {
  const entries = Object.entries(hops).sort((a, b) => b[1] - a[1]);
  if (entries.length === 0) return 'none';
  return entries.map(([what, n]) => `${what} ${n.toFixed(2)}`).join(' · ');
}

/** `journal 3.00/0.00/0.00 · outbox 1.00/0.00/1.00` (inserted/updated/deleted per send), or `none`. */
export function formatByTable(byTable: readonly TableRows[]): string {
  if (byTable.length === 0) return 'none';
  return byTable.map((t) => `${t.table} ${t.inserted.toFixed(2)}/${t.updated.toFixed(2)}/${t.deleted.toFixed(2)}`).join(' · ');
}
