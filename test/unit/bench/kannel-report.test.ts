import { expect } from 'chai';
import {
  comparisonTable,
  latencyPercentiles,
  median,
  sendsmsPath,
  summaryLine,
  systemFigures,
  type RowCounts,
  type SystemRound,
  type TrafficCounts,
  type TableShape,
} from '../../../scripts/bench/kannel-report.js';

const shape: TableShape = { concurrency: 32, kannelConnections: 10, gatewayConnections: 32, durationS: 20, messages: 1_000 };

function round(
  system: SystemRound['system'],
  n: number,
  o: {
    rps: number;
    e2e: number;
    cpu: Record<string, number> | null;
    rows?: RowCounts;
    traffic?: TrafficCounts;
    calls?: number;
    mainThread?: number;
  },
): SystemRound {
  return {
    system,
    round: n,
    submit: { requests: o.rps * 10, failed: 0, seconds: 10, p50Ms: 4, p99Ms: 20 },
    endToEnd: {
      messages: 1_000,
      finals: 1_000,
      delivered: 1_000,
      seconds: 1_000 / o.e2e,
      complete: true,
      p50Ms: 900,
      p99Ms: 2_500,
      receiverCallsPerMessage: o.calls ?? 2,
    },
    cpuMsPerMessage: o.cpu,
    mainThreadMsPerMessage: o.mainThread ?? null,
    dbRowsPerMessage: o.rows ?? null,
    trafficPerMessage: o.traffic ?? null,
  };
}

const rounds: SystemRound[] = [
  round('kannel', 1, { rps: 500, e2e: 250, cpu: { bearerbox: 0.2, smsbox: 1.8 } }),
  round('gateway', 1, {
    rps: 100,
    e2e: 100,
    calls: 4,
    mainThread: 2,
    cpu: { node: 3, postgres: 1, 'nats-server': 0.5, connector: 0.5 },
    traffic: { dbTransactions: 3, natsIn: 10, natsOut: 9 },
    rows: {
      inserted: 10,
      deleted: 7,
      byTable: {
        journal: { inserted: 4, deleted: 0 },
        outbox: { inserted: 6, deleted: 7 },
        merchants: { inserted: 0.01, deleted: 0 },
        api_keys: { inserted: 0, deleted: 0 },
      },
    },
  }),
  round('kannel', 2, { rps: 700, e2e: 350, cpu: { bearerbox: 0.4, smsbox: 2.2 } }),
  round('gateway', 2, {
    rps: 200,
    e2e: 150,
    calls: 4,
    mainThread: 3,
    cpu: { node: 5, postgres: 1, 'nats-server': 0.5, connector: 0.5 },
    traffic: { dbTransactions: 4, natsIn: 12, natsOut: 10 },
    rows: { inserted: 12, deleted: 7, byTable: { journal: { inserted: 5, deleted: 0 }, outbox: { inserted: 7, deleted: 7 } } },
  }),
];

describe('bench:kannel report', () => {
  it("asks Kannel for one recipient with dlr-mask 31 and a dlr-url carrying the id and Kannel's %d", () => {
    const path = sendsmsPath({
      username: 'bench',
      password: 'p&ss',
      from: 'Bench',
      to: '+243810000001',
      text: 'Hello world',
      dlrMask: 31,
      dlrUrl: 'http://127.0.0.1:9/hooks/sms',
      id: 'r1a7',
    });
    expect(path.startsWith('/cgi-bin/sendsms?')).to.equal(true);
    const query = new URL(path, 'http://kannel').searchParams;
    expect(query.get('username')).to.equal('bench');
    expect(query.get('password')).to.equal('p&ss');
    expect(query.get('to')).to.equal('+243810000001');
    expect(query.get('text')).to.equal('Hello world');
    expect(query.get('dlr-mask')).to.equal('31');
    expect(query.get('dlr-url')).to.equal('http://127.0.0.1:9/hooks/sms?id=r1a7&type=%d');
  });

  it('appends to a dlr-url that already has a query', () => {
    const path = sendsmsPath({
      username: 'u',
      password: 'p',
      from: 'B',
      to: '1',
      text: 't',
      dlrMask: 31,
      dlrUrl: 'http://r/dlr?k=1',
      id: 'x',
    });
    expect(new URL(path, 'http://kannel').searchParams.get('dlr-url')).to.equal('http://r/dlr?k=1&id=x&type=%d');
  });

  it('takes medians', () => {
    expect(median([3, 1, 2])).to.equal(2);
    expect(median([4, 1, 3, 2])).to.equal(2.5);
    expect(median([])).to.be.NaN;
    expect(latencyPercentiles([5, 1, 3, 2, 4])).to.deep.equal({ p50Ms: 3, p99Ms: 5 });
  });

  it("sums a round's processes and takes the median of rounds for each system", () => {
    const kannel = systemFigures(rounds.filter((r) => r.system === 'kannel'));
    expect(kannel.submitPerSecond).to.equal(600);
    expect(kannel.endToEndPerSecond).to.be.closeTo(300, 1e-9);
    expect(kannel.cpuMsPerMessage).to.be.closeTo(2.3, 1e-9);
    expect(kannel.cpuSplit.smsbox).to.be.closeTo(2, 1e-9);
    expect(kannel.dbRowsPerMessage).to.equal(null);
    expect(kannel.trafficPerMessage).to.equal(null);
    const gateway = systemFigures(rounds.filter((r) => r.system === 'gateway'));
    expect(gateway.cpuMsPerMessage).to.equal(6);
    expect(gateway.mainThreadMsPerMessage, "the node's main thread, apart from the sum").to.equal(2.5);
    expect(kannel.mainThreadMsPerMessage).to.be.NaN;
    expect(gateway.trafficPerMessage).to.deep.equal({ dbTransactions: 3.5, natsIn: 11, natsOut: 9.5 });
    expect(gateway.dbRowsPerMessage).to.deep.equal({
      inserted: 11,
      deleted: 7,
      byTable: {
        api_keys: { inserted: 0, deleted: 0 },
        journal: { inserted: 4.5, deleted: 0 },
        merchants: { inserted: 0.005, deleted: 0 },
        outbox: { inserted: 6.5, deleted: 7 },
      },
    });
  });

  it('prints one row per measure with the ratio gateway / Kannel, then one row per round', () => {
    const table = comparisonTable(rounds, shape);
    const lines = table.split('\n');
    expect(lines[0]).to.equal(
      '| per message, 1 recipient | Kannel (sendsms + dlr-url) | this gateway (POST /send + webhooks) | gateway / Kannel |',
    );
    const row = (start: string): string => lines.find((l) => l.startsWith(start)) ?? '';
    expect(row('| submit throughput')).to.include('600 req/s').and.include('150 req/s').and.include('0.25×');
    expect(row('| end to end')).to.include('300 msg/s').and.include('125 msg/s').and.include('0.42×');
    expect(row('| report calls per message')).to.equal('| report calls per message (dlr-url / webhooks) | 2.00 | 4.00 | 2.00× |');
    expect(row('| CPU per message'))
      .to.include('2.30 ms (bearerbox 0.30 · smsbox 2.00)')
      .and.include('6.00 ms (node 4.00 · postgres 1.00 · nats-server 0.50 · connector 0.50)')
      .and.include('2.61×');
    expect(row("| the node's main thread")).to.match(/ \| — \| 2\.50 ms \| — \|$/);
    expect(row('| DB rows per message'))
      .to.include('none: no database')
      .and.include('18.0 (11.0 inserted + 7.0 deleted: journal +4.5 · outbox +6.5 −7.0)');
    expect(row('| DB transactions and NATS messages per message')).to.equal(
      '| DB transactions and NATS messages per message | none (no database, no broker) | 3.50 DB transactions · NATS 11.0 in / 9.5 out | — |',
    );
    const perRound = lines.filter((l) => /^\| \d \| (kannel|gateway) \|/.test(l));
    expect(perRound).to.have.length(4);
    expect(perRound[0]).to.include('| 900 ms / 2,500 ms |');
  });

  it('says how many rounds did not complete', () => {
    const incomplete: SystemRound = { ...rounds[0]!, endToEnd: { ...rounds[0]!.endToEnd, complete: false, finals: 900 } };
    expect(comparisonTable([incomplete], shape))
      .to.include('1 round(s) incomplete')
      .and.include('900 of 1,000');
  });

  it('summarises in one JSON line with the ratios', () => {
    const line = summaryLine(rounds, shape);
    expect(line).to.not.include('\n');
    const summary = JSON.parse(line) as {
      kannel: { submitPerSecond: number };
      gateway: { dbRowsPerMessage: unknown; trafficPerMessage: unknown; mainThreadMsPerMessage: number };
      gatewayOverKannel: { submitPerSecond: number; cpuMsPerMessage: number };
    };
    expect(summary.kannel.submitPerSecond).to.equal(600);
    expect(summary.gateway.mainThreadMsPerMessage).to.equal(2.5);
    // tables with no row left out
    expect(summary.gateway.dbRowsPerMessage).to.deep.equal({
      inserted: 11,
      deleted: 7,
      byTable: {
        journal: { inserted: 4.5, deleted: 0 },
        merchants: { inserted: 0.005, deleted: 0 },
        outbox: { inserted: 6.5, deleted: 7 },
      },
    });
    expect(summary.gateway.trafficPerMessage).to.deep.equal({ dbTransactions: 3.5, natsIn: 11, natsOut: 9.5 });
    expect(summary.gatewayOverKannel.submitPerSecond).to.equal(0.25);
    expect(summary.gatewayOverKannel.cpuMsPerMessage).to.equal(2.609);
  });
});
