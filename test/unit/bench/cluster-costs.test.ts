import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  between,
  cpuCounters,
  formatByTable,
  formatHops,
  lsnToBytes,
  perSecond,
  perSend,
  readDatabaseCounters,
  readHopCounters,
  readNatsCounters,
  sendCosts,
  walCommits,
  withMovement,
  type Query,
} from '../../../scripts/bench/cluster-costs.js';

/** A query that answers each statement by the first pattern it matches, and notes what it was asked. */
function fakeQuery(answers: readonly [RegExp, readonly object[] | Error][]): {
  query: Query;
  asked: { text: string; params: readonly unknown[] }[];
} {
  const asked: { text: string; params: readonly unknown[] }[] = [];
  const query = <T extends object>(text: string, params: readonly unknown[] = []): Promise<readonly T[]> => {
    asked.push({ text, params });
    const answer = answers.find(([pattern]) => pattern.test(text))?.[1];
    if (answer instanceof Error) return Promise.reject(answer);
    return Promise.resolve((answer ?? []) as readonly T[]);
  };
  return { query, asked };
}

describe('bench:cluster send costs', () => {
  it('reads a WAL position as its byte offset', () => {
    expect(lsnToBytes('0/0')).to.equal(0);
    expect(lsnToBytes('0/16B3748')).to.equal(0x16b3748);
    expect(lsnToBytes('16/B374D848')).to.equal(0x16 * 2 ** 32 + 0xb374d848);
    expect(() => lsnToBytes('nonsense')).to.throw(/not a WAL position/);
  });

  it('turns pg_stat_database and pg_stat_user_tables into counters', async () => {
    const { query } = fakeQuery([
      [/pg_stat_database/, [{ commits: 120, rollbacks: 2 }]],
      [
        /pg_stat_user_tables/,
        [
          { name: 'journal', ins: 40, upd: 0, del: 0 },
          { name: 'outbox', ins: 10, upd: 1, del: 9 },
        ],
      ],
    ]);
    expect(await readDatabaseCounters(query)).to.deep.equal({
      'db.transactions': 120,
      'db.rollbacks': 2,
      'db.rows.journal.ins': 40,
      'db.rows.journal.upd': 0,
      'db.rows.journal.del': 0,
      'db.rows.outbox.ins': 10,
      'db.rows.outbox.upd': 1,
      'db.rows.outbox.del': 9,
    });
  });

  it('counts only the COMMIT records of the WAL between two positions, and gives null when the WAL cannot be read', async () => {
    const { query, asked } = fakeQuery([
      [
        /pg_get_wal_stats/,
        [
          { kind: 'Transaction/COMMIT', n: 31 },
          { kind: 'Transaction/ABORT', n: 2 },
          { kind: 'Heap/INSERT', n: 400 },
        ],
      ],
    ]);
    expect(await walCommits(query, '0/100', '0/900')).to.equal(31);
    expect(asked[0]?.params).to.deep.equal(['0/100', '0/900']);
    const failing = fakeQuery([[/pg_get_wal_stats/, new Error('function pg_get_wal_stats does not exist')]]);
    expect(await walCommits(failing.query, '0/100', '0/900')).to.equal(null);
  });

  it("reads the nats-server's message and byte totals from /varz and what JetStream stores from /jsz", async () => {
    const pages: Record<string, object> = {
      '/varz': { server_id: 'X', in_msgs: 12, out_msgs: 30, in_bytes: 4_096, out_bytes: 9_000, connections: 3 },
      '/jsz': { streams: 3, consumers: 4, messages: 77, bytes: 65_536, api: { total: 5, errors: 0 } },
    };
    const server: Server = createServer((req, res) => {
      const page = pages[req.url ?? ''];
      if (!page) {
        res.writeHead(404).end();
        return;
      }
      res.setHeader('content-type', 'application/json');
      res.end(JSON.stringify(page));
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
      expect(await readNatsCounters(url)).to.deep.equal({
        'nats.in_msgs': 12,
        'nats.out_msgs': 30,
        'nats.in_bytes': 4_096,
        'nats.out_bytes': 9_000,
        'nats.stored_msgs': 77,
        'nats.stored_bytes': 65_536,
      });
      delete pages['/jsz'];
      let failed: unknown = null;
      await readNatsCounters(url).catch((error: unknown) => {
        failed = error;
      });
      expect(String(failed)).to.match(/\/jsz answered 404/);
    } finally {
      server.close();
    }
  });

  it('gives each counter per send, less the idle rate over as long when an idle interval is given', () => {
    const idle = between(
      { atMs: 0, counters: { 'db.transactions': 100, 'cpu.postgres': 50 } },
      { atMs: 2_000, counters: { 'db.transactions': 140, 'cpu.postgres': 70 } },
    );
    // 10 s of load, 100 sends: 1 100 transactions, of which the background's 20/s × 10 s = 200
    const load = between(
      { atMs: 5_000, counters: { 'db.transactions': 1_000, 'cpu.postgres': 100, 'nats.in_msgs': 7 } },
      { atMs: 15_000, counters: { 'db.transactions': 2_100, 'cpu.postgres': 400, 'nats.in_msgs': 507, 'db.rows.outbox.ins': 100 } },
    );
    expect(load.ms).to.equal(10_000);
    // a table first seen in the second sample counts from 0
    expect(load.delta['db.rows.outbox.ins']).to.equal(100);
    expect(perSend(load, 100)).to.deep.equal({ 'db.transactions': 11, 'cpu.postgres': 3, 'nats.in_msgs': 5, 'db.rows.outbox.ins': 1 });
    expect(perSend(load, 100, idle)).to.deep.equal({ 'db.transactions': 9, 'cpu.postgres': 2, 'nats.in_msgs': 5, 'db.rows.outbox.ins': 1 });
    expect(perSecond(idle)).to.deep.equal({ 'db.transactions': 20, 'cpu.postgres': 10 });
    expect(perSend(load, 0)['db.transactions']).to.be.NaN;
  });

  it('names the per-send figures, leaving the harness tables out of the row totals', () => {
    const interval = withMovement(
      {
        ms: 1_000,
        delta: {
          'db.rows.journal.ins': 300,
          'db.rows.journal.upd': 0,
          'db.rows.journal.del': 0,
          'db.rows.outbox.ins': 100,
          'db.rows.outbox.upd': 0,
          'db.rows.outbox.del': 100,
          'db.rows.snapshots.ins': 0,
          'db.rows.snapshots.upd': 20,
          'db.rows.snapshots.del': 0,
          'db.rows.merchants.ins': 0,
          'db.rows.merchants.upd': 0,
          'db.rows.merchants.del': 0,
          'db.rows.journal_audit.ins': 300,
          'db.transactions': 500,
          'wal.position': 102_400,
          'nats.in_msgs': 600,
          'nats.out_msgs': 800,
          'nats.in_bytes': 51_200,
          'nats.out_bytes': 76_800,
          'nats.stored_msgs': 300,
          'nats.stored_bytes': 30_720,
          ...cpuCounters({ gateway: 0.3, postgres: 0.2, nats: 0.05, connector: 0.04, 'load generator': 0.1 }),
        },
      },
      'wal.commits',
      150,
    );
    const costs = sendCosts(perSend(interval, 100));
    expect(costs.rows).to.deep.equal({ inserted: 4, updated: 0.2, deleted: 1 });
    expect(costs.byTable.map((t) => t.table)).to.deep.equal(['journal', 'outbox', 'snapshots']);
    expect(costs.transactions).to.equal(5);
    expect(costs.writeCommits).to.equal(1.5);
    expect(costs.walBytes).to.equal(1_024);
    expect(costs.nats).to.deep.equal({ msgsIn: 6, msgsOut: 8, bytesIn: 512, bytesOut: 768, storedMsgs: 3, storedBytes: 307.2 });
    expect(costs.cpuMs.gateway).to.be.closeTo(3, 1e-9);
    expect(costs.cpuMs.postgres).to.be.closeTo(2, 1e-9);
    expect(costs.cpuMs.nats).to.be.closeTo(0.5, 1e-9);
    expect(formatByTable(costs.byTable)).to.equal('journal 3.00/0.00/0.00 · outbox 1.00/0.00/1.00 · snapshots 0.00/0.20/0.00');
    // without pg_walinspect there is no write-commit figure, rather than a wrong one
    expect(sendCosts(perSend(withMovement(interval, 'wal.commits', null), 100)).writeCommits).to.equal(null);
  });

  it('sums the crossings to another node by what crossed over the nodes, and names them per send', async () => {
    const pages = [
      '# TYPE sms_gateway_cluster_remote_hops_total counter\nsms_gateway_cluster_remote_hops_total{what="merchant-request"} 50\nsms_gateway_cluster_remote_hops_total{what="receipts"} 30\nsms_gateway_cluster_remote_hop_seconds_count 80\n',
      'sms_gateway_cluster_remote_hops_total{what="receipts"} 44\nsms_gateway_cluster_remote_hops_total{what="ask:wallet"} 0\n',
    ];
    const servers: Server[] = pages.map((page) =>
      createServer((req, res) => {
        res.writeHead(req.url === '/metrics' ? 200 : 404).end(page);
      }),
    );
    await Promise.all(servers.map((server) => new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))));
    try {
      const urls = servers.map((server) => `http://127.0.0.1:${(server.address() as AddressInfo).port}/metrics`);
      const counters = await readHopCounters(urls);
      expect(counters).to.deep.equal({ 'hops.merchant-request': 50, 'hops.receipts': 74, 'hops.ask:wallet': 0 });
      const costs = sendCosts(perSend({ ms: 1_000, delta: counters }, 100));
      // a kind that did not move is left out
      expect(costs.hops).to.deep.equal({ 'merchant-request': 0.5, receipts: 0.74 });
      expect(formatHops(costs.hops)).to.equal('receipts 0.74 · merchant-request 0.50');
      expect(formatHops({})).to.equal('none');
      let failed: unknown = null;
      await readHopCounters([urls[0]!.replace('/metrics', '/missing')]).catch((error: unknown) => {
        failed = error;
      });
      expect(String(failed)).to.match(/answered 404/);
    } finally {
      await Promise.all(servers.map((server) => new Promise((resolve) => server.close(resolve))));
    }
  });

  it('makes every CPU figure unavailable when /proc could not be read', () => {
    const counters = cpuCounters(null);
    expect(Object.keys(counters)).to.have.length(5);
    for (const value of Object.values(counters)) expect(value).to.be.NaN;
  });
});
