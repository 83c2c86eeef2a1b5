import path from 'node:path';
import { fileURLToPath } from 'node:url';
import type { NatsConnection } from '@nats-io/transport-node';
import { expect } from 'chai';
import type { ConnectorPresence } from '../../../src/carriers/connector/connector-presence.js';
import { readPresenceOnce } from '../../../src/carriers/connector/presence-reader.js';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { NO_NAMESPACE } from '../../../src/libraries/transport/nats-names.js';
import { call } from '../../helpers/http-fixture.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';
import { startMain, type MainProcess } from '../../helpers/main-process.js';
import { startTestSmsc, type TestSmsc } from '../../helpers/test-smsc.js';
import { eventually } from '../../helpers/eventually.js';
import { GENEROUS_RATE_LIMITS, seedMerchants, type ClusterMerchant } from '../cluster/cluster-checks.js';

/**
 * Failover between two SMPP connector processes of one carrier, end to end: a gateway node in server mode (its own
 * nats-server and PostgreSQL database), two `npm run connector:smpp` child processes for the same carrier —
 * `smpp-primary` with CONNECTOR_PRIORITY 1 and `smpp-standby` with CONNECTOR_PRIORITY 2 — and the test message
 * centre in this process. Each connector binds with its own system_id, so every part the centre accepted names the
 * connector that sent it.
 *
 * As in the SMPP end-to-end suite, the node serves the sandbox, which routes every dispatch to the carrier slug
 * `simulator`; no simulator process runs and both connectors take that slug. Connectors are killed with SIGKILL:
 * nothing deletes their presence entries, which must expire on their own (docs/carriers.md, "Routing and health").
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CONNECTOR_ENTRY = { argv: ['--import', 'tsx', path.join(ROOT, 'src/carriers/smpp/smpp-main.ts')], cwd: ROOT };
const CARRIER = 'simulator';

const PRIMARY = { name: 'smpp-primary', priority: 1, systemId: 'primary' } as const;
const STANDBY = { name: 'smpp-standby', priority: 2, systemId: 'standby' } as const;
type ConnectorRole = typeof PRIMARY | typeof STANDBY;

interface RecipientView {
  readonly phone: string;
  readonly recipient_index: number;
  readonly status: string;
  readonly carrier_status: string | null;
}
interface CarrierState {
  readonly status: 'ok' | 'down';
  readonly connectors: number;
}
interface HealthData {
  readonly status: string;
  readonly checks: { readonly carriers: Record<string, CarrierState> };
}

/** `+24381` and 7 digits: a number the seeded price list covers; the centre sees it without the `+`. */
const phone = (n: number): string => `+24381${String(n).padStart(7, '0')}`;
const atCentre = (e164: string): string => e164.slice(1);

describe('SMPP failover between two connector processes of one carrier', function () {
  this.timeout(600_000);
  let cluster: TestCluster | undefined;
  let merchant: ClusterMerchant;
  let smsc: TestSmsc | undefined;
  let nats: NatsConnection | undefined;
  const connectors = new Map<string, MainProcess>();

  before(async function () {
    this.timeout(240_000);
    cluster = await startCluster({ nodes: 1, simulator: false, env: GENEROUS_RATE_LIMITS });
    merchant = (await seedMerchants(cluster, { count: 1, webhooks: false }))[0]!;
    nats = await connectNats({ servers: cluster.nats.url });
    smsc = await startTestSmsc({
      accounts: [
        { systemId: PRIMARY.systemId, password: 'secret' },
        { systemId: STANDBY.systemId, password: 'secret' },
      ],
    });
  });

  after(async () => {
    await Promise.all([...connectors.values()].map((connector) => connector.kill()));
    await nats?.close();
    await smsc?.stop();
    await cluster?.stop();
  });

  const api = (): string => cluster!.node('node-1').api;

  /** `npm run connector:smpp` as `role`, once it logged that it consumes and the centre has `binds` binds in all. */
  async function startConnector(role: ConnectorRole, binds: number): Promise<MainProcess> {
    const connector = startMain(
      {
        NATS_URL: cluster!.nats.url,
        CONNECTOR_CARRIER: CARRIER,
        CONNECTOR_NAME: role.name,
        CONNECTOR_PRIORITY: String(role.priority),
        LOG_LEVEL: 'info',
        SMPP_HOST: '127.0.0.1',
        SMPP_PORT: String(smsc!.port),
        SMPP_SYSTEM_ID: role.systemId,
        SMPP_PASSWORD: 'secret',
        SMPP_BINDS: '1',
        SMPP_WINDOW: '10',
        SMPP_RECONNECT_INITIAL_MS: '100',
        SMPP_RECONNECT_MAX_MS: '1000',
        SMPP_RETRY_DELAY_MS: '500',
        SMPP_SUBMIT_TIMEOUT_MS: '3000',
        SMPP_MAX_SUBMITS_PER_SECOND: '1000',
      },
      CONNECTOR_ENTRY,
    );
    connectors.set(role.name, connector);
    await connector.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('connector ready'), 60_000);
    await eventually(
      async () => Promise.resolve(smsc!.binds() >= binds),
      30_000,
      `${role.name} bound at the centre (${binds} bind(s) in all)`,
    );
    return connector;
  }

  /** SIGKILL: the process leaves its presence entry and its bind behind, as a crash does. */
  async function killConnector(role: ConnectorRole, bindsLeft: number): Promise<void> {
    const connector = connectors.get(role.name)!;
    connector.signal('SIGKILL');
    await connector.exited;
    connectors.delete(role.name);
    await eventually(async () => Promise.resolve(smsc!.binds() === bindsLeft), 30_000, `${role.name}'s bind gone at the centre`);
  }

  /** The live presence entries of the carrier, by connector name. */
  async function presence(): Promise<Map<string, ConnectorPresence>> {
    const entries = await readPresenceOnce(nats!, NO_NAMESPACE);
    const now = Date.now();
    return new Map(
      entries.filter((e) => e.carrier === CARRIER && e.live && now - Date.parse(e.updated_at) <= 6_000).map((e) => [e.name, e]),
    );
  }

  async function health(): Promise<{ status: number; data: HealthData }> {
    const answer = await call(`${api()}/health`);
    return { status: answer.status, data: (answer.body as { data: HealthData }).data };
  }

  /** GET /health until `done` holds for it; the last answer is in the error otherwise. */
  async function healthUntil(done: (data: HealthData) => boolean, what: string): Promise<HealthData> {
    return eventually(
      async () => {
        const answer = await health();
        if (answer.status !== 200) throw new Error(`GET /health ${answer.status}: ${JSON.stringify(answer.data)}`);
        if (!done(answer.data)) throw new Error(JSON.stringify(answer.data));
        return answer.data;
      },
      60_000,
      what,
      250,
    );
  }

  async function send(to: readonly string[], message: string): Promise<string> {
    const sent = await call(`${api()}/send`, { method: 'POST', key: merchant.apiKey, json: { to, message } });
    expect(sent.status, sent.text).to.equal(201);
    return (sent.body as { data: { message_id: string } }).data.message_id;
  }

  async function recipients(messageId: string): Promise<RecipientView[]> {
    const answer = await call(`${api()}/status/${messageId}`, { key: merchant.apiKey });
    expect(answer.status, answer.text).to.equal(200);
    return [...(answer.body as { data: { recipients: RecipientView[] } }).data.recipients].sort(
      (a, b) => a.recipient_index - b.recipient_index,
    );
  }

  /** GET /status until every recipient is delivered (a failed recipient ends the wait at once). */
  async function expectAllDelivered(messageId: string, count: number, explain: () => string): Promise<void> {
    try {
      await eventually(
        async () => {
          const seen = await recipients(messageId);
          const failed = seen.filter((r) => r.status === 'failed');
          if (failed.length > 0) throw new Error(`failed recipients: ${JSON.stringify(failed)}`);
          if (seen.length !== count || !seen.every((r) => r.status === 'delivered')) throw new Error(JSON.stringify(seen));
          return true;
        },
        180_000,
        `every recipient of ${messageId} delivered`,
        250,
      );
    } catch (error) {
      if (error instanceof Error) error.message = `${error.message}\n${explain()}`;
      throw error;
    }
  }

  /** Which accounts (connectors) the centre accepted the parts for these numbers from. */
  const sentThrough = (numbers: readonly string[]): string[] => {
    const destinations = new Set(numbers.map(atCentre));
    return [...new Set(smsc!.submits.filter((s) => destinations.has(s.destination)).map((s) => s.systemId))].sort();
  };

  const logsOf =
    (...roles: ConnectorRole[]) =>
    (): string =>
      roles
        .map((role) => {
          const connector = connectors.get(role.name);
          return connector
            ? `${role.name} log:\n${connector.lines.slice(-100).join('\n')}\n${connector.stderr()}`
            : `${role.name}: not running`;
        })
        .join('\n');

  it('both up: the priority-1 connector takes every dispatch, the standby none; /health counts 2 connectors', async () => {
    await startConnector(PRIMARY, 1);
    await startConnector(STANDBY, 2);
    await eventually(
      async () => {
        const live = await presence();
        const primary = live.get(PRIMARY.name);
        const standby = live.get(STANDBY.name);
        return primary?.active === true && primary.priority === 1 && standby?.live === true && !standby.active && standby.priority === 2;
      },
      60_000,
      'the primary active and the standby live but standing by',
      250,
    );
    const seen = await healthUntil((data) => data.checks.carriers[CARRIER]?.connectors === 2, 'two live connectors in GET /health');
    expect(seen.status).to.equal('ok');
    expect(seen.checks.carriers[CARRIER]).to.deep.equal({ status: 'ok', connectors: 2 });

    const to = Array.from({ length: 10 }, (_, i) => phone(1000 + i));
    const messageId = await send(to, 'Both connectors up');
    await expectAllDelivered(messageId, to.length, logsOf(PRIMARY, STANDBY));
    expect(sentThrough(to), 'accounts the parts came through').to.deep.equal([PRIMARY.systemId]);
    for (const number of to) expect(smsc!.messagesTo(atCentre(number)), number).to.deep.equal(['Both connectors up']);
  });

  it('primary killed: new dispatches go out through the standby and every recipient is delivered', async () => {
    await killConnector(PRIMARY, 1);
    const to = Array.from({ length: 10 }, (_, i) => phone(2000 + i));
    const messageId = await send(to, 'Primary gone');
    await expectAllDelivered(messageId, to.length, logsOf(STANDBY));
    expect(sentThrough(to), 'accounts the parts came through').to.deep.equal([STANDBY.systemId]);
    for (const number of to) expect(smsc!.messagesTo(atCentre(number)), number).to.deep.equal(['Primary gone']);
    const live = await presence();
    expect([...live.keys()], 'live connectors').to.deep.equal([STANDBY.name]);
    expect(live.get(STANDBY.name)?.active, 'the standby active').to.equal(true);
    const seen = await healthUntil((data) => data.checks.carriers[CARRIER]?.connectors === 1, 'one live connector in GET /health');
    expect(seen.checks.carriers[CARRIER]).to.deep.equal({ status: 'ok', connectors: 1 });
  });

  const waiting = [phone(3000), phone(3001)];
  let waitingId = '';

  it('both killed: /health is degraded naming the carrier down, and a send is accepted and waits without failing', async () => {
    await killConnector(STANDBY, 0);
    const seen = await healthUntil((data) => data.checks.carriers[CARRIER]?.status === 'down', 'the carrier down in GET /health');
    expect(seen.status).to.equal('degraded');
    expect(seen.checks.carriers[CARRIER]).to.deep.equal({ status: 'down', connectors: 0 });

    waitingId = await send(waiting, 'No connector live');
    // the gateway hands the dispatch on and then nothing happens to it: polled across several presence
    // heartbeats, the recipients never leave pending/processing and the centre never sees the numbers
    for (let poll = 0; poll < 20; poll++) {
      const now = await recipients(waitingId);
      expect(
        now.map((r) => r.status).filter((s) => s !== 'pending' && s !== 'processing'),
        `recipients while no connector is live: ${JSON.stringify(now)}`,
      ).to.deep.equal([]);
      await sleep(500);
    }
    expect(sentThrough(waiting), 'parts at the centre while no connector is live').to.deep.equal([]);
    expect((await health()).data.status).to.equal('degraded');
  });

  it('a connector started again takes the waiting dispatch to delivered, and /health is ok again', async () => {
    expect(waitingId, 'the waiting message of the previous case').to.not.equal('');
    await startConnector(PRIMARY, 1);
    await expectAllDelivered(waitingId, waiting.length, logsOf(PRIMARY));
    expect(sentThrough(waiting), 'accounts the parts came through').to.deep.equal([PRIMARY.systemId]);
    for (const number of waiting) expect(smsc!.messagesTo(atCentre(number)), number).to.deep.equal(['No connector live']);
    const seen = await healthUntil((data) => data.status === 'ok', 'GET /health ok');
    expect(seen.checks.carriers[CARRIER]).to.deep.equal({ status: 'ok', connectors: 1 });
  });
});

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });
