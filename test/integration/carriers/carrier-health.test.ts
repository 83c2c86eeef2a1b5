import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { jetstreamManager } from '@nats-io/jetstream';
import type { NatsConnection } from '@nats-io/transport-node';
import { expect } from 'chai';
import type { ConnectorPresence } from '../../../src/carriers/connector/connector-presence.js';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { runCommand } from '../../helpers/command-process.js';
import { createGateway } from '../../../src/gateway.js';
import { openPostgresPersistence } from '../../../src/libraries/persistence/persistence.js';
import { seedMerchant, testConfig } from '../../helpers/gateway-fixture.js';
import { createMetrics } from '../../../src/libraries/observability/metrics.js';
import { API_ROOT, call, startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { startMain, TEST_SECRETS_KEY, type MainProcess } from '../../helpers/main-process.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres, type TestPostgres } from '../../helpers/postgres.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';
import { presenceEntry, writePresence } from '../../helpers/presence.js';
import { eventually } from '../../helpers/eventually.js';

/**
 * A production node in server mode (src/main.ts, private PostgreSQL and nats-server) routes to the carriers its
 * pricing rows name (vodacom-cd, airtel-cd, orange-fr) and to its default carrier (vodacom-cd). Connectors are
 * played by presence entries written with the KV API, kept fresh by a heartbeat as a connector does.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

interface CarrierState {
  readonly status: 'ok' | 'down';
  readonly connectors: number;
}
interface HealthData {
  readonly status: string;
  readonly checks: { readonly database: string; readonly transport: string; readonly carriers: Record<string, CarrierState> };
}

/** A fake connector's heartbeat: writes its entry now and every 1 s (the TTL is 6 s) until stopped. */
function heartbeat(nats: NatsConnection, entry: () => ConnectorPresence): { stop(): void } {
  const write = (): void => {
    writePresence(nats, { ...entry(), updated_at: new Date().toISOString() }).catch((error: unknown) => {
      process.stderr.write(`presence heartbeat failed: ${String(error)}\n`);
    });
  };
  write();
  const timer = setInterval(write, 1_000);
  return {
    stop: () => {
      clearInterval(timer);
    },
  };
}

const gaugeValue = (exposition: string, metric: string, carrier: string): number | null => {
  const line = exposition.split('\n').find((l) => l.startsWith(`${metric}{carrier="${carrier}"}`));
  return line === undefined ? null : Number(line.split(' ').at(-1));
};

describe('carrier health: GET /health, metrics, the start-up warning and carriers status on a production node', function () {
  this.timeout(240_000);
  let nats: TestNats;
  let client: NatsConnection;
  let databaseUrl: string;
  let main: MainProcess;
  let api = '';
  let metricsUrl = '';
  let apiKey = '';
  const beats: { stop(): void }[] = [];
  const vodacom = presenceEntry('vodacom-cd', 'smpp-primary');
  const airtel = presenceEntry('airtel-cd', 'kannel-main', { kind: 'kannel' });
  let orangeBeat: { stop(): void } | null = null;

  const health = async (): Promise<{ status: number; data: HealthData }> => {
    const answer = await call(`${api}${API_ROOT}/health`);
    return { status: answer.status, data: (answer.body as { data: HealthData }).data };
  };
  const cli = (args: readonly string[]) =>
    runCommand(process.execPath, ['--import', 'tsx', 'src/entry-points/cli/cli-main.ts', ...args], {
      cwd: ROOT,
      env: {
        DATABASE_URL: databaseUrl,
        NATS_URL: nats.url,
        GATEWAY_MODE: 'server',
        GATEWAY_ENVIRONMENT: 'production',
        SECRETS_KEY: TEST_SECRETS_KEY,
        DEFAULT_CARRIER: 'vodacom-cd',
      },
    });

  before(async function () {
    this.timeout(180_000);
    nats = await startTestNats();
    client = await connectNats({ servers: nats.url });
    databaseUrl = await (await testPostgres()).createDatabase('carrier_health');
    // the merchant, its wallet, its pricing rows (vodacom-cd, airtel-cd, orange-fr) and a live key
    const persistence = await openPostgresPersistence({ url: databaseUrl, poolSize: 2 });
    try {
      const config = testConfig({ environment: 'production', database: { url: databaseUrl }, secrets: { key: TEST_SECRETS_KEY } });
      const seeding = await createGateway({ config, persistence });
      try {
        apiKey = (await seedMerchant(seeding, { prepaid: '10' })).apiKey;
      } finally {
        await seeding.stop();
      }
    } finally {
      await persistence.close();
    }
    // vodacom-cd's connector is up before the node starts
    beats.push(heartbeat(client, () => vodacom));
    main = startMain({
      GATEWAY_MODE: 'server',
      GATEWAY_ENVIRONMENT: 'production',
      DATABASE_URL: databaseUrl,
      NATS_URL: nats.url,
      HOST: '127.0.0.1',
      PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
      NODE_ID: 'carrier-health',
      SECRETS_KEY: TEST_SECRETS_KEY,
      DEFAULT_CARRIER: 'vodacom-cd',
    });
    const listening = await main.waitForLog((line) => line.msg === 'listening', 90_000);
    api = `http://127.0.0.1:${String(listening.port)}`;
    metricsUrl = `http://127.0.0.1:${String(listening.metrics_port)}/metrics`;
  });

  after(async () => {
    for (const beat of beats) beat.stop();
    orangeBeat?.stop();
    await (main as MainProcess | undefined)?.kill();
    await (client as NatsConnection | undefined)?.close();
    await (nats as TestNats | undefined)?.stop();
  });

  it('warns at start, after the grace, of the routed carriers with no live connector', async () => {
    const warning = await main.waitForLog((line) => typeof line.msg === 'string' && line.msg.includes('no live connector'), 60_000);
    expect(warning.level).to.equal(40);
    expect(warning.carriers).to.deep.equal(['airtel-cd', 'orange-fr']);
  });

  it('GET /health is 200 degraded naming the carriers with no connector, and the metrics count the live ones', async () => {
    const { status, data } = await eventually(
      async () => {
        const answer = await health();
        return answer.data.checks.carriers['vodacom-cd']?.status === 'ok' ? answer : null;
      },
      30_000,
      'vodacom-cd seen live',
    );
    expect(status, 'a carrier without connector does not take the node out of service').to.equal(200);
    expect(data.status).to.equal('degraded');
    expect(data.checks).to.deep.equal({
      database: 'ok',
      transport: 'ok',
      carriers: {
        'airtel-cd': { status: 'down', connectors: 0 },
        'orange-fr': { status: 'down', connectors: 0 },
        'vodacom-cd': { status: 'ok', connectors: 1 },
      },
    });
    const exposition = await (await fetch(metricsUrl)).text();
    expect(gaugeValue(exposition, 'sms_gateway_carrier_connectors_live', 'vodacom-cd')).to.equal(1);
    expect(gaugeValue(exposition, 'sms_gateway_carrier_connectors_live', 'airtel-cd')).to.equal(0);
    expect(gaugeValue(exposition, 'sms_gateway_carrier_dispatch_backlog', 'orange-fr')).to.equal(0);
  });

  it('is ok once every routed carrier has a live connector, and counts two connectors of one carrier', async () => {
    beats.push(heartbeat(client, () => airtel));
    beats.push(heartbeat(client, () => presenceEntry('airtel-cd', 'kannel-backup', { kind: 'kannel', priority: 1, active: false })));
    orangeBeat = heartbeat(client, () => presenceEntry('orange-fr', 'smpp-fr'));
    const { status, data } = await eventually(
      async () => {
        const answer = await health();
        return answer.data.status === 'ok' ? answer : null;
      },
      30_000,
      'health ok',
    );
    expect(status).to.equal(200);
    expect(data.checks.carriers).to.deep.equal({
      'airtel-cd': { status: 'ok', connectors: 2 },
      'orange-fr': { status: 'ok', connectors: 1 },
      'vodacom-cd': { status: 'ok', connectors: 1 },
    });
    const exposition = await (await fetch(metricsUrl)).text();
    expect(gaugeValue(exposition, 'sms_gateway_carrier_connectors_live', 'airtel-cd')).to.equal(2);
  });

  it('is degraded again once a connector’s entry expires (it stopped writing, deleting nothing)', async () => {
    orangeBeat?.stop();
    const { status, data } = await eventually(
      async () => {
        const answer = await health();
        return answer.data.status === 'degraded' ? answer : null;
      },
      30_000,
      'health degraded after the entry expired',
    );
    expect(status).to.equal(200);
    expect(data.checks.carriers['orange-fr']).to.deep.equal({ status: 'down', connectors: 0 });
    expect(data.checks.carriers['airtel-cd']).to.deep.equal({ status: 'ok', connectors: 2 });
  });

  it('a send to a carrier with no live connector is not failed: its job waits in SMS_DISPATCH and the backlog counts it', async () => {
    const sent = await call(`${api}${API_ROOT}/send`, {
      method: 'POST',
      key: apiKey,
      json: { to: ['+33612345678'], message: 'waits for orange-fr' },
    });
    expect(sent.status, sent.text).to.equal(201);
    const messageId = (sent.body as { data: { message_id: string } }).data.message_id;
    const jsm = await jetstreamManager(client);
    await eventually(
      async () => {
        const info = await jsm.streams.info('SMS_DISPATCH', { subjects_filter: 'sms.dispatch.orange-fr' });
        return (info.state.subjects?.['sms.dispatch.orange-fr'] ?? 0) === 1;
      },
      30_000,
      'the job in SMS_DISPATCH',
    );
    await eventually(
      async () => gaugeValue(await (await fetch(metricsUrl)).text(), 'sms_gateway_carrier_dispatch_backlog', 'orange-fr') === 1,
      30_000,
      'backlog 1 for orange-fr',
    );
    const status = await call(`${api}${API_ROOT}/status/${messageId}`, { key: apiKey });
    expect(status.status, status.text).to.equal(200);
    const view = (status.body as { data: { status: string; recipients: { status: string }[] } }).data;
    expect(view.status).to.not.equal('failed');
    expect(view.recipients.map((r) => r.status)).to.not.include('failed');
  });

  it('carriers status shows every carrier, its connectors and backlog, and exits 3 while one has no live connector', async () => {
    const text = await cli(['carriers', 'status']);
    expect(text.code, text.stderr).to.equal(3);
    expect(text.stdout).to.include('orange-fr: no live connector, backlog 1');
    expect(text.stdout, text.stdout).to.include('airtel-cd: 2 live, backlog 0');
    expect(text.stdout).to.match(/kannel-main\s+kannel\s+0\s+1\s+active\s+2\/2\s+3\/10\s+12\.5\s+\d+\.\ds/);
    expect(text.stdout).to.match(/kannel-backup\s+kannel\s+1\s+1\s+standby/);
    expect(text.stdout).to.match(/No live connector:\s+orange-fr/);

    const json = await cli(['carriers', 'status', '--json']);
    expect(json.code, json.stderr).to.equal(3);
    const parsed = JSON.parse(json.stdout) as {
      no_live_connector: string[];
      carriers: { carrier: string; live_connectors: number; dispatch_backlog: number }[];
    };
    expect(parsed.no_live_connector).to.deep.equal(['orange-fr']);
    expect(parsed.carriers.map((c) => [c.carrier, c.live_connectors, c.dispatch_backlog])).to.deep.equal([
      ['airtel-cd', 2, 0],
      ['orange-fr', 0, 1],
      ['vodacom-cd', 1, 0],
    ]);

    orangeBeat = heartbeat(client, () => presenceEntry('orange-fr', 'smpp-fr'));
    const ok = await cli(['carriers', 'status']);
    expect(ok.code, ok.stderr + ok.stdout).to.equal(0);
    expect(ok.stdout).to.match(/No live connector:\s+none/);
  });
});

describe('carrier health: a node running the sandbox simulator in its own process', function () {
  this.timeout(60_000);
  let fixture: ApiFixture | null = null;

  after(async () => {
    await fixture?.stop();
  });

  it('reports the simulator live in GET /health and in the connectors gauge, with no backlog series (no NATS)', async () => {
    const metrics = createMetrics({ defaultMetrics: false });
    fixture = await startApi(await (await testPostgres()).createDatabase('carrier_health_embedded'), { inProcessSimulator: true, metrics });
    const answer = await call(`${fixture.api}/health`);
    expect(answer.status).to.equal(200);
    expect((answer.body as { data: HealthData }).data).to.deep.include({
      status: 'ok',
      checks: { database: 'ok', transport: 'ok', carriers: { simulator: { status: 'ok', connectors: 1 } } },
    });
    const { body } = await metrics.scrape();
    expect(gaugeValue(body, 'sms_gateway_carrier_connectors_live', 'simulator')).to.equal(1);
    expect(body).to.not.include('sms_gateway_carrier_dispatch_backlog{');
  });
});

describe('carrier health: a sandbox cluster node and the simulator connector as its own process', function () {
  this.timeout(240_000);
  let postgres: TestPostgres;
  let cluster: TestCluster | null = null;

  before(async function () {
    this.timeout(180_000);
    postgres = await testPostgres();
    cluster = await startCluster({ nodes: 1, postgres });
  });
  after(async () => {
    await cluster?.stop();
  });

  const healthOf = async (): Promise<{ status: number; data: HealthData }> => {
    const answer = await call(`${cluster!.node('node-1').api}/health`);
    return { status: answer.status, data: (answer.body as { data: HealthData }).data };
  };

  it('is ok while the simulator process announces itself, degraded (still 200) once it stopped, ok again when it is back', async () => {
    const up = await eventually(
      async () => {
        const answer = await healthOf();
        return answer.data.status === 'ok' ? answer : null;
      },
      30_000,
      'health ok with the simulator announced',
    );
    expect(up.data.checks.carriers).to.deep.equal({ simulator: { status: 'ok', connectors: 1 } });

    await cluster!.stopSimulator('SIGTERM');
    const down = await eventually(
      async () => {
        const answer = await healthOf();
        return answer.data.status === 'degraded' ? answer : null;
      },
      30_000,
      'health degraded without the simulator',
    );
    expect(down.status).to.equal(200);
    expect(down.data.checks).to.deep.equal({ database: 'ok', transport: 'ok', carriers: { simulator: { status: 'down', connectors: 0 } } });

    await cluster!.startSimulator();
    await eventually(async () => (await healthOf()).data.status === 'ok', 30_000, 'health ok with the simulator back');
  });
});
