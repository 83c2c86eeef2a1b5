/**
 * The pure parts of bench:kannel (scripts/bench/kannel-bench.ts): Kannel's sendsms request, and the Markdown table
 * and JSON summary of the rounds.
 */
import { fmt, percentile } from './bench-common.js';

export type BenchSystem = 'kannel' | 'gateway';

/** Rows inserted and deleted (per message), in all and by table. */
export interface RowCounts {
  readonly inserted: number;
  readonly deleted: number;
  readonly byTable: Readonly<Record<string, { readonly inserted: number; readonly deleted: number }>>;
}

/**
 * The gateway's round trips per message: database transactions committed (pg_stat_database xact_commit, reads
 * included: with autocommit, one per statement) and the NATS server's messages in and out (/varz: published by
 * clients, delivered to them; JetStream API requests and acknowledgements included). Background pollers count too.
 */
export interface TrafficCounts {
  readonly dbTransactions: number;
  readonly natsIn: number;
  readonly natsOut: number;
}

/** One system's figures in one round. */
export interface SystemRound {
  readonly system: BenchSystem;
  readonly round: number;
  /** (a) The closed loop of --duration-s. */
  readonly submit: {
    readonly requests: number;
    readonly failed: number;
    readonly seconds: number;
    readonly p50Ms: number;
    readonly p99Ms: number;
  };
  /**
   * (b) --messages sent as fast as the loop allows; `seconds` from the first request to the last final report;
   * p50/p99 of each message's request → final report.
   */
  readonly endToEnd: {
    readonly messages: number;
    readonly finals: number;
    readonly delivered: number;
    readonly seconds: number;
    readonly complete: boolean;
    readonly p50Ms: number;
    readonly p99Ms: number;
    /** Calls of the report receiver per message (Kannel: dlr-url calls; gateway: webhooks of every event type). */
    readonly receiverCallsPerMessage: number;
  };
  /** (c) CPU milliseconds per message of each of the system's processes during (b); null without /proc. */
  readonly cpuMsPerMessage: Readonly<Record<string, number>> | null;
  /**
   * (c') CPU milliseconds per message of the gateway node's main thread alone during (b), part of its `node` figure:
   * one event loop's ceiling when the node's other threads have cores of their own; null for Kannel or without /proc.
   */
  readonly mainThreadMsPerMessage: number | null;
  /** (d) Rows inserted and deleted in the system's database per message during (b); null: it has none. */
  readonly dbRowsPerMessage: RowCounts | null;
  /** (e) Database transactions and NATS messages per message during (b); null: the system has neither. */
  readonly trafficPerMessage: TrafficCounts | null;
}

export interface SendsmsRequest {
  readonly username: string;
  readonly password: string;
  readonly from: string;
  readonly to: string;
  readonly text: string;
  /** Kannel's dlr-mask: 31 = delivered, failed, buffered, accepted by the SMSC, rejected by it. */
  readonly dlrMask: number;
  /** The receiver's URL; `id` and `type=%d` (Kannel fills in the report type) are added to it. */
  readonly dlrUrl: string;
  /** The bench's id of this message, given back in the dlr-url. */
  readonly id: string;
}

/** `/cgi-bin/sendsms?…` for one recipient, the dlr-url carrying the message's id and Kannel's `%d`. */
export function sendsmsPath(r: SendsmsRequest): string {
  const dlrUrl = `${r.dlrUrl}${r.dlrUrl.includes('?') ? '&' : '?'}id=${encodeURIComponent(r.id)}&type=%d`;
  const query = new URLSearchParams({
    username: r.username,
    password: r.password,
    from: r.from,
    to: r.to,
    text: r.text,
    'dlr-mask': String(r.dlrMask),
    'dlr-url': dlrUrl,
  });
  return `/cgi-bin/sendsms?${query.toString()}`;
}

/** Kannel's dlr types that end a message: 1 delivered, 2 failed, 16 rejected by the SMSC (4 buffered and 8 accepted do not). */
export const KANNEL_FINAL_TYPES: readonly string[] = ['1', '2', '16'];

/** The middle value (the mean of the two middle ones for an even count); NaN for none. */
export function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  if (sorted.length === 0) return Number.NaN;
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1 ? (sorted[mid] ?? Number.NaN) : ((sorted[mid - 1] ?? Number.NaN) + (sorted[mid] ?? Number.NaN)) / 2;
}

/** The figures of one system over its rounds: medians (the per-process CPU split too). */
export interface SystemFigures {
  readonly rounds: number;
  readonly submitPerSecond: number;
  readonly p50Ms: number;
  readonly p99Ms: number;
  readonly endToEndPerSecond: number;
  readonly endToEndSeconds: number;
  readonly incomplete: number;
  readonly receiverCallsPerMessage: number;
  readonly cpuMsPerMessage: number;
  readonly cpuSplit: Readonly<Record<string, number>>;
  /** NaN where no round measured it. */
  readonly mainThreadMsPerMessage: number;
  readonly dbRowsPerMessage: RowCounts | null;
  readonly trafficPerMessage: TrafficCounts | null;
}

/** Medians of each count over rounds (a table missing from a round counts 0 there). */
function medianRows(rounds: readonly RowCounts[]): RowCounts {
  const tables = [...new Set(rounds.flatMap((r) => Object.keys(r.byTable)))].sort();
  return {
    inserted: median(rounds.map((r) => r.inserted)),
    deleted: median(rounds.map((r) => r.deleted)),
    byTable: Object.fromEntries(
      tables.map((t) => [
        t,
        {
          inserted: median(rounds.map((r) => r.byTable[t]?.inserted ?? 0)),
          deleted: median(rounds.map((r) => r.byTable[t]?.deleted ?? 0)),
        },
      ]),
    ),
  };
}

export function systemFigures(rounds: readonly SystemRound[]): SystemFigures {
  const names = [...new Set(rounds.flatMap((r) => Object.keys(r.cpuMsPerMessage ?? {})))];
  const withCpu = rounds.filter((r) => r.cpuMsPerMessage !== null);
  const cpuSplit = Object.fromEntries(names.map((name) => [name, median(withCpu.map((r) => r.cpuMsPerMessage?.[name] ?? 0))]));
  const mainThread = rounds.flatMap((r) => (r.mainThreadMsPerMessage === null ? [] : [r.mainThreadMsPerMessage]));
  const withRows = rounds.flatMap((r) => (r.dbRowsPerMessage === null ? [] : [r.dbRowsPerMessage]));
  const withTraffic = rounds.flatMap((r) => (r.trafficPerMessage === null ? [] : [r.trafficPerMessage]));
  return {
    rounds: rounds.length,
    submitPerSecond: median(rounds.map((r) => r.submit.requests / r.submit.seconds)),
    p50Ms: median(rounds.map((r) => r.submit.p50Ms)),
    p99Ms: median(rounds.map((r) => r.submit.p99Ms)),
    endToEndPerSecond: median(rounds.map((r) => r.endToEnd.finals / r.endToEnd.seconds)),
    endToEndSeconds: median(rounds.map((r) => r.endToEnd.seconds)),
    incomplete: rounds.filter((r) => !r.endToEnd.complete).length,
    receiverCallsPerMessage: median(rounds.map((r) => r.endToEnd.receiverCallsPerMessage)),
    cpuMsPerMessage:
      withCpu.length === 0 ? Number.NaN : median(withCpu.map((r) => Object.values(r.cpuMsPerMessage ?? {}).reduce((a, b) => a + b, 0))),
    cpuSplit,
    mainThreadMsPerMessage: median(mainThread),
    dbRowsPerMessage: withRows.length === 0 ? null : medianRows(withRows),
    trafficPerMessage:
      withTraffic.length === 0
        ? null
        : {
            dbTransactions: median(withTraffic.map((t) => t.dbTransactions)),
            natsIn: median(withTraffic.map((t) => t.natsIn)),
            natsOut: median(withTraffic.map((t) => t.natsOut)),
          },
  };
}

const ratio = (gateway: number, kannel: number): string =>
  Number.isFinite(gateway) && Number.isFinite(kannel) && kannel > 0 ? `${fmt(gateway / kannel, 2)}×` : 'n/a';
const ms = (n: number): string => (Number.isFinite(n) ? `${fmt(n, n < 10 ? 1 : 0)} ms` : 'n/a');
const perSecond = (n: number, unit: string): string => (Number.isFinite(n) ? `${fmt(n)} ${unit}/s` : 'n/a');
const split = (parts: Readonly<Record<string, number>>): string =>
  Object.entries(parts)
    .map(([name, value]) => `${name} ${fmt(value, 2)}`)
    .join(' · ');

/** `17.8 (10.8 inserted + 7.0 deleted: journal +4.0 · outbox +6.8 −7.0)`: tables under 0.05 a message left out. */
export function rowsCell(rows: RowCounts): string {
  const tables = Object.entries(rows.byTable)
    .filter(([, t]) => t.inserted >= 0.05 || t.deleted >= 0.05)
    .map(
      ([name, t]) => `${name}${t.inserted >= 0.05 ? ` +${fmt(t.inserted, 1)}` : ''}${t.deleted >= 0.05 ? ` −${fmt(t.deleted, 1)}` : ''}`,
    );
  return `${fmt(rows.inserted + rows.deleted, 1)} (${fmt(rows.inserted, 1)} inserted + ${fmt(rows.deleted, 1)} deleted${tables.length === 0 ? '' : `: ${tables.join(' · ')}`})`;
}

export interface TableShape {
  readonly concurrency: number;
  readonly kannelConnections: number;
  readonly gatewayConnections: number;
  readonly durationS: number;
  readonly messages: number;
}

/**
 * The Markdown comparison: one row per measure (medians over the rounds), the ratio gateway / Kannel, then one row
 * per round and system.
 */
export function comparisonTable(rounds: readonly SystemRound[], shape: TableShape): string {
  const kannel = systemFigures(rounds.filter((r) => r.system === 'kannel'));
  const gateway = systemFigures(rounds.filter((r) => r.system === 'gateway'));
  const submit = (f: SystemFigures): string => `${perSecond(f.submitPerSecond, 'req')} (p50 ${ms(f.p50Ms)}, p99 ${ms(f.p99Ms)})`;
  const e2e = (f: SystemFigures): string =>
    `${perSecond(f.endToEndPerSecond, 'msg')} (${Number.isFinite(f.endToEndSeconds) ? fmt(f.endToEndSeconds, 1) : 'n/a'} s)${f.incomplete > 0 ? `, ${fmt(f.incomplete)} round(s) incomplete` : ''}`;
  const cpu = (f: SystemFigures): string =>
    Number.isFinite(f.cpuMsPerMessage) ? `${fmt(f.cpuMsPerMessage, 2)} ms (${split(f.cpuSplit)})` : 'n/a';
  const rows = (f: SystemFigures, none: string): string => (f.dbRowsPerMessage === null ? none : rowsCell(f.dbRowsPerMessage));
  const traffic = (f: SystemFigures, none: string): string =>
    f.trafficPerMessage === null
      ? none
      : `${fmt(f.trafficPerMessage.dbTransactions, 2)} DB transactions · NATS ${fmt(f.trafficPerMessage.natsIn, 1)} in / ${fmt(f.trafficPerMessage.natsOut, 1)} out`;
  const lines = [
    '| per message, 1 recipient | Kannel (sendsms + dlr-url) | this gateway (POST /send + webhooks) | gateway / Kannel |',
    '|---|---|---|---:|',
    `| submit throughput (closed loop, ${fmt(shape.concurrency)} in flight, ${fmt(shape.durationS)} s) | ${submit(kannel)} | ${submit(gateway)} | ${ratio(gateway.submitPerSecond, kannel.submitPerSecond)} |`,
    `| end to end (${fmt(shape.messages)} messages, first request → last final report) | ${e2e(kannel)} | ${e2e(gateway)} | ${ratio(gateway.endToEndPerSecond, kannel.endToEndPerSecond)} |`,
    `| report calls per message (dlr-url / webhooks) | ${fmt(kannel.receiverCallsPerMessage, 2)} | ${fmt(gateway.receiverCallsPerMessage, 2)} | ${ratio(gateway.receiverCallsPerMessage, kannel.receiverCallsPerMessage)} |`,
    `| CPU per message (all the system's processes, during the end-to-end run) | ${cpu(kannel)} | ${cpu(gateway)} | ${ratio(gateway.cpuMsPerMessage, kannel.cpuMsPerMessage)} |`,
    `| the node's main thread, CPU per message (part of the node's; its ceiling when its other threads have cores to spare) | — | ${Number.isFinite(gateway.mainThreadMsPerMessage) ? `${fmt(gateway.mainThreadMsPerMessage, 2)} ms` : 'n/a'} | — |`,
    `| DB rows per message (inserted + deleted) | ${rows(kannel, 'none: no database (internal DLR storage, in memory)')} | ${rows(gateway, 'n/a')} | — (Kannel writes none) |`,
    `| DB transactions and NATS messages per message | ${traffic(kannel, 'none (no database, no broker)')} | ${traffic(gateway, 'n/a')} | — |`,
    '',
    '| round | system | submit req/s | p50 / p99 | end to end msg/s | request → final report p50 / p99 | final reports | CPU ms per message |',
    '|---:|---|---:|---:|---:|---:|---:|---|',
    ...[...rounds]
      .sort((a, b) => a.round - b.round || a.system.localeCompare(b.system))
      .map((r) => {
        const total = r.cpuMsPerMessage === null ? Number.NaN : Object.values(r.cpuMsPerMessage).reduce((a, b) => a + b, 0);
        return (
          `| ${fmt(r.round)} | ${r.system} | ${fmt(r.submit.requests / r.submit.seconds)}${r.submit.failed > 0 ? ` (${fmt(r.submit.failed)} failed)` : ''} | ${ms(r.submit.p50Ms)} / ${ms(r.submit.p99Ms)} | ` +
          `${fmt(r.endToEnd.finals / r.endToEnd.seconds)} | ${ms(r.endToEnd.p50Ms)} / ${ms(r.endToEnd.p99Ms)} | ${fmt(r.endToEnd.finals)} of ${fmt(r.endToEnd.messages)}${r.endToEnd.delivered === r.endToEnd.finals ? '' : ` (${fmt(r.endToEnd.delivered)} delivered)`} | ` +
          `${Number.isFinite(total) ? `${fmt(total, 2)} (${split(r.cpuMsPerMessage ?? {})})` : 'n/a'} |`
        );
      }),
  ];
  return lines.join('\n');
}

/** One JSON line: each system's medians and the ratios gateway / Kannel. */
export function summaryLine(rounds: readonly SystemRound[], shape: TableShape): string {
  const kannel = systemFigures(rounds.filter((r) => r.system === 'kannel'));
  const gateway = systemFigures(rounds.filter((r) => r.system === 'gateway'));
  const finite = (n: number): number | null => (Number.isFinite(n) ? Number(n.toFixed(3)) : null);
  const figures = (f: SystemFigures) => ({
    rounds: f.rounds,
    submitPerSecond: finite(f.submitPerSecond),
    p50Ms: finite(f.p50Ms),
    p99Ms: finite(f.p99Ms),
    endToEndPerSecond: finite(f.endToEndPerSecond),
    incompleteRounds: f.incomplete,
    receiverCallsPerMessage: finite(f.receiverCallsPerMessage),
    cpuMsPerMessage: finite(f.cpuMsPerMessage),
    cpuSplit: Object.fromEntries(Object.entries(f.cpuSplit).map(([k, v]) => [k, finite(v)])),
    mainThreadMsPerMessage: finite(f.mainThreadMsPerMessage),
    dbRowsPerMessage:
      f.dbRowsPerMessage === null
        ? null
        : {
            inserted: finite(f.dbRowsPerMessage.inserted),
            deleted: finite(f.dbRowsPerMessage.deleted),
            byTable: Object.fromEntries(
              Object.entries(f.dbRowsPerMessage.byTable)
                .filter(([, t]) => t.inserted >= 0.0005 || t.deleted >= 0.0005)
                .map(([name, t]) => [name, { inserted: finite(t.inserted), deleted: finite(t.deleted) }]),
            ),
          },
    trafficPerMessage:
      f.trafficPerMessage === null
        ? null
        : {
            dbTransactions: finite(f.trafficPerMessage.dbTransactions),
            natsIn: finite(f.trafficPerMessage.natsIn),
            natsOut: finite(f.trafficPerMessage.natsOut),
          },
  });
  const quotient = (a: number, b: number): number | null => finite(b > 0 ? a / b : Number.NaN);
  return JSON.stringify({
    bench: 'kannel',
    ...shape,
    kannel: figures(kannel),
    gateway: figures(gateway),
    gatewayOverKannel: {
      submitPerSecond: quotient(gateway.submitPerSecond, kannel.submitPerSecond),
      endToEndPerSecond: quotient(gateway.endToEndPerSecond, kannel.endToEndPerSecond),
      cpuMsPerMessage: quotient(gateway.cpuMsPerMessage, kannel.cpuMsPerMessage),
    },
  });
}

/** p50 and p99 of latencies in milliseconds (any order). */
export function latencyPercentiles(latencies: readonly number[]): { readonly p50Ms: number; readonly p99Ms: number } {
  const sorted = [...latencies].sort((a, b) => a - b);
  return { p50Ms: percentile(sorted, 50), p99Ms: percentile(sorted, 99) };
}
