import { expect } from 'chai';
import {
  cpuCounters,
  enableWalInspection,
  readDatabaseCounters,
  readNatsCounters,
  readWalPosition,
  walCommits,
  type Query,
} from '../../../scripts/bench/cluster-costs.js';
import { sampleCpu } from '../../../scripts/bench/process-cpu.js';
import { call } from '../../helpers/http-fixture.js';
import { loadNumber, startCluster, type TestCluster } from '../../helpers/cluster.js';
import { eventually } from '../../helpers/eventually.js';
import { GENEROUS_RATE_LIMITS, seedMerchants, type ClusterMerchant } from './cluster-checks.js';

const SENDS = 20;

/** What bench:cluster reads around a run, read around a few sends on one node. */
describe('cluster: what bench:cluster measures of a send (database counters, NATS totals, CPU by process)', function () {
  this.timeout(180_000);
  let cluster: TestCluster;
  let merchant: ClusterMerchant;
  let query: Query;

  before(async function () {
    this.timeout(180_000);
    cluster = await startCluster({ nodes: 1, simulator: true, env: GENEROUS_RATE_LIMITS, audit: false, natsMonitoring: true });
    merchant = (await seedMerchants(cluster, { count: 1 }))[0]!;
    query = <T extends object>(text: string, params?: readonly unknown[]) => cluster.sql<T>(text, params);
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
  });

  it('when the cluster runs without audit, then no trigger writes beside the journal, and the audit checks refuse to answer', async () => {
    const [row] = await cluster.sql<{ audit: string | null }>(`SELECT to_regclass('journal_audit')::text AS audit`);
    expect(row?.audit).to.equal(null);
    let refused: unknown = null;
    await cluster.staleWrites().catch((error: unknown) => {
      refused = error;
    });
    expect(String(refused)).to.match(/needs the journal audit/);
  });

  it('when sends go through, then the journal rows, the WAL, its commits and the NATS totals move, and each process group has CPU', async () => {
    const walInspection = await enableWalInspection(query);
    const monitorUrl = cluster.nats.monitorUrl;
    if (monitorUrl === null) throw new Error('the cluster started nats-server without monitoring');
    const dbBefore = await readDatabaseCounters(query);
    const walBefore = await readWalPosition(query);
    const natsBefore = await readNatsCounters(monitorUrl);

    for (let i = 0; i < SENDS; i++) {
      const sent = await call(`${cluster.running()[0]!.api}/send`, {
        method: 'POST',
        key: merchant.apiKey,
        json: { to: [loadNumber('00', i)], message: `costs ${i}` },
      });
      expect(sent.status, sent.text).to.equal(201);
    }
    await eventually(
      async () => Object.keys((await cluster.simulatorReport()).sent).length >= SENDS,
      60_000,
      'every send at the connector',
    );

    // each backend flushes its own statistics within a second or so of going idle: the journal's inserts may be
    // counted (one backend's) before every send's commit is (others'), so both are waited for; not within the time,
    // the counters did not move as they must
    await eventually(
      async () => {
        const counters = await readDatabaseCounters(query);
        const moved = (name: string): number => (counters[name] ?? 0) - (dbBefore[name] ?? 0);
        return moved('db.rows.journal.ins') >= SENDS && moved('db.transactions') >= SENDS ? counters : null;
      },
      10_000,
      'at least one journal insert and one transaction per send counted',
    );

    const walAfter = await eventually(
      async () => {
        const position = await readWalPosition(query);
        return (position.counters['wal.position'] ?? 0) > (walBefore.counters['wal.position'] ?? 0) ? position : null;
      },
      5_000,
      'the WAL flushed past the sends',
    );
    if (walInspection) expect(await walCommits(query, walBefore.lsn, walAfter.lsn)).to.be.at.least(1);

    const natsAfter = await readNatsCounters(monitorUrl);
    expect((natsAfter['nats.in_msgs'] ?? 0) - (natsBefore['nats.in_msgs'] ?? 0), 'dispatches and receipts published').to.be.at.least(SENDS);
    expect((natsAfter['nats.out_msgs'] ?? 0) - (natsBefore['nats.out_msgs'] ?? 0), 'and delivered').to.be.at.least(SENDS);
    expect(
      (natsAfter['nats.stored_bytes'] ?? 0) - (natsBefore['nats.stored_bytes'] ?? 0),
      'receipts kept by their stream',
    ).to.be.greaterThan(0);

    // since they started: every group has run, the node counted as the gateway rather than this process
    const simulator = cluster.simulatorPid();
    expect(simulator).to.be.a('number');
    const cpu = cpuCounters(
      sampleCpu(
        [simulator ?? -1],
        cluster.running().map((n) => n.process.pid ?? -1),
      ),
    );
    for (const group of ['gateway', 'postgres', 'nats', 'connector']) expect(cpu[`cpu.${group}`], group).to.be.greaterThan(0);
  });
});
