import { expect } from 'chai';
import { call, type CallResult } from '../../helpers/http-fixture.js';
import { runSendLoad, startCluster, type ClusterNode, type LoadSend, type TestCluster } from '../../helpers/cluster.js';
import { startTestPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/eventually.js';
import {
  GENEROUS_RATE_LIMITS,
  accepted,
  closeReceivers,
  expectDispatchedOnce,
  expectLedgerExact,
  expectTerminalWebhooks,
  recipientsOf,
  seedMerchants,
  type ClusterMerchant,
} from '../cluster/cluster-checks.js';

/**
 * A node in server mode (its own PostgreSQL and nats-server, both private to this suite) while either restarts or
 * stays away: the process stays up, what needs the missing dependency answers 503/1402 (never 500), GET /health says
 * `degraded` and names it, the node recovers by itself once the dependency is back, and every send acknowledged
 * with 201 before, during or after the fault is dispatched once and its webhooks arrive.
 *
 * The outages last 30 s, as long as the faults they reproduce; the whole suite takes about two minutes.
 */
const OUTAGE_MS = 30_000;

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

interface HealthData {
  readonly status: string;
  readonly checks: Record<string, string>;
}

const healthOf = async (node: ClusterNode): Promise<{ status: number; data: HealthData }> => {
  const answer = await call(`${node.api}/health`);
  return { status: answer.status, data: (answer.body as { data: HealthData }).data };
};

/** A 503 answer in the contract's service-error envelope with 1402 and a Retry-After. */
function expectUnavailable(answer: CallResult): void {
  expect(answer.status, answer.text).to.equal(503);
  const body = answer.body as { error_code: string; status_code: number; retry_after: number };
  expect(body.error_code).to.equal('1402');
  expect(body.status_code).to.equal(503);
  expect(answer.headers.get('retry-after')).to.equal(String(body.retry_after));
}

describe('dependency outages: a node survives its database and its broker going away', function () {
  this.timeout(300_000);
  let postgres: TestPostgres;
  let cluster: TestCluster;
  let node: ClusterNode;
  let merchants: ClusterMerchant[] = [];
  const sends: LoadSend[] = [];
  let round = 0;
  let unseenKey = '';
  /** Set once nats-server has been stopped: jobs may then reach the connector again (the check counts hand-offs). */
  let brokerStopped = false;

  before(async function () {
    this.timeout(180_000);
    // an immediate shutdown is a crash: only commits already in the WAL survive it, as on a production server
    postgres = await startTestPostgres({ durableCommits: true });
    cluster = await startCluster({ nodes: 1, postgres, env: GENEROUS_RATE_LIMITS, outputTailChars: 4_000_000 });
    node = cluster.node('node-1');
    merchants = await seedMerchants(cluster, { count: 2, webhooks: true });
    // a key the node has never seen: checking it needs the database (a seen one is cached)
    unseenKey = (await cluster.operator.useCases.apiKeys.issueKey(merchants[0]!.merchantId)).apiKey;
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
    await closeReceivers(merchants);
    await (postgres as TestPostgres | undefined)?.stop();
  });

  /** A few sends through the node's port: all must be accepted (the node is healthy). */
  async function sendSome(count = 6): Promise<LoadSend[]> {
    round++;
    const done = await runSendLoad({
      sends: count,
      concurrency: 3,
      merchants,
      targets: () => [node.api],
      recipients: recipientsOf(round * 1_000),
      runId: `outage-${round}-${Date.now().toString(36)}`,
    });
    sends.push(...done);
    expect(
      done.map((s) => s.attempts.map((a) => a.outcome)),
      'sends to a healthy node',
    ).to.deep.equal(done.map(() => [201]));
    return done;
  }

  /**
   * Recovered: GET /health is 200 again and every merchant's wallet answers (its shard is owned again: the leases
   * may have run out during the fault).
   */
  async function waitRecovered(): Promise<void> {
    await eventually(async () => (await healthOf(node)).status === 200, 60_000, `${node.id} healthy again`, 200);
    for (const merchant of merchants) {
      await eventually(
        async () => (await call(`${node.api}/balance`, { key: merchant.apiKey })).status === 200,
        60_000,
        `balance of ${merchant.merchantId}`,
        200,
      );
    }
  }

  async function waitDegraded(dependency: 'database' | 'transport'): Promise<HealthData> {
    return eventually(
      async () => {
        const health = await healthOf(node);
        return health.status === 503 && health.data.checks[dependency] === 'down' ? health.data : null;
      },
      30_000,
      `${node.id} degraded with ${dependency} down`,
      200,
    );
  }

  /** Everything accepted so far went out once, its terminal webhooks arrived, and each wallet paid exactly for it. */
  async function expectNothingLost(): Promise<void> {
    expect(node.state(), node.output()).to.equal('running');
    await expectDispatchedOnce(cluster, sends, { timeoutMs: 90_000, brokerStopped });
    await expectTerminalWebhooks(merchants, sends, 90_000);
    await expectLedgerExact(cluster, merchants, sends);
  }

  /**
   * The node logged this outage once when it started and once when it ended, not once per failure. The end is noticed
   * by the node's own probe, which runs on its own timer: the line is waited for (a loaded machine may run the probe
   * after the test saw the node answer), and on failure the whole log since the fault is shown.
   */
  async function expectOutageLoggedOnce(dependency: string, logBefore: number, startedBy?: string): Promise<void> {
    const since = (): string => node.output().slice(logBefore);
    const linesOf = (): string[] =>
      since()
        .split('\n')
        .filter((line) => line.includes(`"dependency":"${dependency}"`));
    await eventually(
      () => Promise.resolve(linesOf().some((line) => line.includes('dependency available again'))),
      30_000,
      `the end of the ${dependency} outage logged`,
      200,
    ).catch((error: unknown) => {
      throw new Error(`${String(error)}\n--- log since the fault:\n${since().slice(-20_000)}`);
    });
    const lines = linesOf();
    const started = lines.filter((line) => line.includes('dependency unavailable'));
    const ended = lines.filter((line) => line.includes('dependency available again'));
    expect(started, lines.join('\n')).to.have.length(1);
    expect(ended, lines.join('\n')).to.have.length(1);
    if (startedBy) expect(started[0], 'what started the outage').to.include(`"what":"${startedBy}"`);
    const errors = since()
      .split('\n')
      .filter((line) => /"level":(50|60)/.test(line));
    expect(errors, 'error lines during the outage').to.deep.equal([]);
  }

  for (const mode of ['fast', 'immediate'] as const) {
    it(`survives PostgreSQL restarted (${mode} shutdown) and loses nothing`, async () => {
      await sendSome();
      await postgres.restart(mode);
      await sleep(2_000);
      expect(node.state(), node.output()).to.equal('running');
      await waitRecovered();
      await sendSome();
      await expectNothingLost();
    });
  }

  it(`survives PostgreSQL down for ${OUTAGE_MS / 1000} s: 503/1402 and degraded meanwhile, then recovers and loses nothing`, async () => {
    await sendSome();
    const logBefore = node.output().length;
    await postgres.stopServer('fast');
    const health = await waitDegraded('database');
    expect(health.status).to.equal('degraded');
    const [merchant] = merchants;
    // the balance of a merchant the last sends touched is still answered from memory while the node keeps its record
    // (MERCHANT_CATALOG_TTL_MS, 5 s) and its shard's lease: the first refusal comes within seconds
    await eventually(
      async () => (await call(`${node.api}/balance`, { key: merchant!.apiKey })).status === 503,
      30_000,
      'a balance refused once the merchant record is no longer cached',
      200,
    );
    // what needs the database: a send (the wallet's journal), a balance, a status
    const until = Date.now() + OUTAGE_MS;
    let probes = 0;
    while (Date.now() < until) {
      expectUnavailable(
        await call(`${node.api}/send`, {
          method: 'POST',
          key: merchant!.apiKey,
          json: { to: ['+243810000100'], message: 'during the outage' },
        }),
      );
      expectUnavailable(await call(`${node.api}/balance`, { key: merchant!.apiKey }));
      probes++;
      await sleep(1_000);
    }
    expect(probes).to.be.greaterThan(1);
    expectUnavailable(await call(`${node.api}/balance`, { key: unseenKey }));
    expect(node.state(), node.output()).to.equal('running');
    await postgres.startServer();
    await waitRecovered();
    await sendSome();
    await expectNothingLost();
    await expectOutageLoggedOnce('database', logBefore);
  });

  it(`survives NATS down for ${OUTAGE_MS / 1000} s: degraded meanwhile, sends accepted then are delivered after`, async () => {
    await sendSome();
    const logBefore = node.output().length;
    brokerStopped = true;
    await cluster.nats.stopServer();
    const health = await waitDegraded('transport');
    expect(health.status).to.equal('degraded');
    // a single node owns every shard: a send needs only the database now and is carried out once NATS is back
    const during = await sendSome();
    expect(accepted(during)).to.have.length(during.length);
    await sleep(OUTAGE_MS);
    expect(node.state(), node.output()).to.equal('running');
    await cluster.nats.startServer();
    await waitRecovered();
    await sendSome();
    await expectNothingLost();
    // the connection's loss itself starts the outage, before any operation fails on it
    await expectOutageLoggedOnce('transport', logBefore, 'connection');
  });
});
