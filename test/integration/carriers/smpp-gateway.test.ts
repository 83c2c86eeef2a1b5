import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { analyseMessage } from '../../../src/messaging/segments.js';
import { call } from '../../helpers/http-fixture.js';
import { startCluster, type TestCluster } from '../../helpers/cluster.js';
import { startMain, type MainProcess } from '../../helpers/main-process.js';
import { startTestSmsc, type PartOutcome, type TestSmsc } from '../../helpers/test-smsc.js';
import type { WebhookEnvelope } from '../../helpers/webhook-receiver.js';
import { GENEROUS_RATE_LIMITS, seedMerchants, type ClusterMerchant } from '../cluster/cluster-checks.js';

/**
 * SMPP end to end, every piece a real process or a real socket: a gateway node in server mode (its own nats-server
 * and PostgreSQL database, `src/main.ts` as deployed), `npm run connector:smpp` as a child process
 * (`src/carriers/smpp/smpp-main.ts`, configured only through its environment), the test message centre in this
 * process on a TCP port, and the merchant's webhook endpoint. Each case checks what the merchant sees (GET /status
 * and the terminal webhook events), not only what the centre received.
 *
 * Routing: the node serves the sandbox, which routes every dispatch to the carrier slug `simulator`, and no
 * simulator process runs. The SMPP connector takes that slug (CONNECTOR_CARRIER=simulator), so the only way a
 * message reaches the centre is sms.dispatch.simulator → connector → SMPP, and the only way an outcome reaches the
 * merchant is a receipt on sms.receipts.simulator. The slug is the only thing sandbox-specific here; production
 * routing by pricing row is the gateway's concern, not the connector's, and is tested with the gateway.
 *
 * Outcomes are chosen by destination at the centre (`OUTCOMES`), so one centre and one connector serve most cases;
 * throttling and the connector crash have their own centre (their own window, rate or receipt delay) and their own
 * connector process, started after the previous one stopped. Each centre gives message ids of its own prefix: the
 * connector's correlations outlive a centre, and a second centre giving the same ids would have its early receipts
 * read as reports on the first centre's messages.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const CONNECTOR_ENTRY = { argv: ['--import', 'tsx', path.join(ROOT, 'src/carriers/smpp/smpp-main.ts')], cwd: ROOT };

interface RecipientView {
  readonly phone: string;
  readonly recipient_index: number;
  readonly status: string;
  readonly carrier_status: string | null;
  readonly error_code: string | null;
  readonly error_message: string | null;
}

const FINAL = new Set(['delivered', 'failed']);
const TERMINAL_EVENTS = new Set(['sms.delivered', 'sms.failed']);

/** `+24381` and 7 digits: a number the seeded price list covers; the centre sees it without the `+`. */
const phone = (n: number): string => `+24381${String(n).padStart(7, '0')}`;
const atCentre = (e164: string): string => e164.slice(1);

/** Destinations (as the centre sees them) with an outcome other than DELIVRD, by part index. */
const OUTCOMES = new Map<string, (partIndex: number) => PartOutcome>([
  [atCentre(phone(3001)), () => ({ stat: 'UNDELIV', err: '001' })],
  [atCentre(phone(3002)), () => ({ stat: 'EXPIRED' })],
  [atCentre(phone(3003)), () => ({ stat: 'REJECTD' })],
  [atCentre(phone(3004)), () => ({ stat: 'UNKNOWN' })],
  [atCentre(phone(3005)), () => ({ stat: 'DELETED' })],
  [atCentre(phone(3006)), () => ({ submitStatus: 0x0b })], // ESME_RINVDSTADR
  [atCentre(phone(7001)), (partIndex) => (partIndex === 1 ? { stat: 'UNDELIV' } : { stat: 'DELIVRD' })],
]);
const outcomeFor = (destination: string, partIndex: number): PartOutcome =>
  OUTCOMES.get(destination)?.(partIndex) ?? { stat: 'DELIVRD', err: '000' };

describe('SMPP connector process between a gateway node and a message centre', function () {
  this.timeout(600_000);
  let cluster: TestCluster | undefined;
  let merchant: ClusterMerchant;
  /** Every message id this suite sent: no webhook may name another. */
  const sentMessages = new Set<string>();

  before(async function () {
    this.timeout(240_000);
    cluster = await startCluster({ nodes: 1, simulator: false, env: GENEROUS_RATE_LIMITS });
    merchant = (await seedMerchants(cluster, { count: 1, webhooks: true }))[0]!;
  });

  after(async () => {
    await cluster?.stop();
    await merchant.receiver?.close();
  });

  const api = (): string => cluster!.node('node-1').api;

  /** `npm run connector:smpp` for `smsc`, once it logged that it consumes and the centre has `binds` binds. */
  async function startConnector(smsc: TestSmsc, env: Readonly<Record<string, string>> = {}, binds = 1): Promise<MainProcess> {
    const connector = startMain(
      {
        NATS_URL: cluster!.nats.url,
        CONNECTOR_CARRIER: 'simulator',
        CONNECTOR_NAME: 'smpp-e2e',
        LOG_LEVEL: 'info',
        SMPP_HOST: '127.0.0.1',
        SMPP_PORT: String(smsc.port),
        SMPP_SYSTEM_ID: 'smsc',
        SMPP_PASSWORD: 'secret',
        SMPP_RECONNECT_INITIAL_MS: '100',
        SMPP_RECONNECT_MAX_MS: '1000',
        SMPP_RETRY_DELAY_MS: '500',
        SMPP_SUBMIT_TIMEOUT_MS: '3000',
        SMPP_MAX_SUBMITS_PER_SECOND: '1000',
        ...env,
      },
      CONNECTOR_ENTRY,
    );
    await connector.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('connector ready'), 60_000);
    await until(() => smsc.binds() >= binds, `${binds} bind(s) at the centre`, 30_000);
    return connector;
  }

  async function stopConnector(connector: MainProcess | null): Promise<void> {
    if (connector === null) return;
    connector.signal('SIGTERM');
    const timer = setTimeout(() => {
      void connector.kill();
    }, 30_000);
    await connector.exited;
    clearTimeout(timer);
  }

  async function send(body: { to: readonly string[]; message: string; sender_id?: string }): Promise<string> {
    const sent = await call(`${api()}/send`, { method: 'POST', key: merchant.apiKey, json: body });
    expect(sent.status, sent.text).to.equal(201);
    const messageId = (sent.body as { data: { message_id: string } }).data.message_id;
    sentMessages.add(messageId);
    return messageId;
  }

  /** GET /status until every recipient is final. */
  async function finalRecipients(messageId: string, timeoutMs = 120_000): Promise<RecipientView[]> {
    const deadline = Date.now() + timeoutMs;
    let last: string;
    for (;;) {
      const answer = await call(`${api()}/status/${messageId}`, { key: merchant.apiKey });
      last = answer.text;
      if (answer.status === 200) {
        const recipients = (answer.body as { data: { recipients: RecipientView[] } }).data.recipients;
        if (recipients.every((r) => FINAL.has(r.status))) return [...recipients].sort((a, b) => a.recipient_index - b.recipient_index);
      }
      if (Date.now() > deadline) {
        const open =
          answer.status === 200
            ? (answer.body as { data: { recipients: RecipientView[] } }).data.recipients.filter((r) => !FINAL.has(r.status))
            : [];
        throw new Error(
          `GET /status/${messageId}: not every recipient final within ${timeoutMs} ms; not final: ${JSON.stringify(open)}; answer: ${last.slice(0, 1_000)}`,
        );
      }
      await sleep(250);
    }
  }

  /** The terminal webhook events of a message, once there is one per recipient (by recipient_index). */
  async function terminalEvents(messageId: string, recipients: number, timeoutMs = 120_000): Promise<Map<number, WebhookEnvelope[]>> {
    const receiver = merchant.receiver!;
    const collect = (): Map<number, WebhookEnvelope[]> => {
      const byRecipient = new Map<number, Map<string, WebhookEnvelope>>();
      for (const event of receiver.events()) {
        if (event.message_id !== messageId || !TERMINAL_EVENTS.has(event.event_type)) continue;
        const index = Number(event.data.recipient_index);
        const events = byRecipient.get(index) ?? new Map<string, WebhookEnvelope>();
        events.set(event.event_id, event);
        byRecipient.set(index, events);
      }
      return new Map([...byRecipient].map(([index, events]) => [index, [...events.values()]]));
    };
    await receiver.waitFor(() => collect().size >= recipients, timeoutMs, `${recipients} terminal events of ${messageId}`);
    return collect();
  }

  /** Every recipient delivered, in GET /status and by exactly one sms.delivered event each. */
  async function expectAllDelivered(messageId: string, recipients: number, timeoutMs = 120_000): Promise<void> {
    const final = await finalRecipients(messageId, timeoutMs);
    expect(final).to.have.length(recipients);
    const notDelivered = final.filter((r) => r.status !== 'delivered' || r.carrier_status !== 'smpp:DELIVRD');
    expect(notDelivered, 'recipients not delivered').to.deep.equal([]);
    const events = await terminalEvents(messageId, recipients, timeoutMs);
    for (let index = 0; index < recipients; index++) {
      expect(
        events.get(index)?.map((e) => e.event_type),
        `terminal events of recipient ${index}`,
      ).to.deep.equal(['sms.delivered']);
    }
  }

  describe('with a centre that answers at once', () => {
    let smsc: TestSmsc;
    let connector: MainProcess | null = null;

    before(async () => {
      smsc = await startTestSmsc({ outcomeFor, messageIdPrefix: 'A' });
      connector = await startConnector(smsc, { SMPP_BINDS: '2', SMPP_WINDOW: '10', SMPP_DEFAULT_SENDER: 'InfoSMS' }, 2);
    });

    after(async () => {
      await stopConnector(connector);
      await smsc.stop();
    });

    it('sends GSM-7, GSM-7 with extension characters, UCS-2 and a 3-part message: the centre reassembles exactly the text sent', async () => {
      const cases = [
        { to: phone(1001), text: 'Your code is 482913. Valid 10 min @ ACME!', dataCoding: 0, parts: 1 },
        { to: phone(1002), text: 'Price: 12€ [promo] {vip} ^up~ a|b \\ done', dataCoding: 0, parts: 1 },
        { to: phone(1003), text: 'Mbote! Ozali malamu? مرحبا بك 👋🏾 Lingala na Kinshasa', dataCoding: 8, parts: 1 },
        {
          to: phone(1004),
          text: Array.from({ length: 400 }, (_, i) => 'abcdefghijklmnopqrstuvwxyz0123456789 .,'[i % 39]).join(''),
          dataCoding: 0,
          parts: 3,
        },
      ];
      for (const c of cases) expect(analyseMessage(c.text).segments, c.text).to.equal(c.parts);
      const ids = await Promise.all(cases.map((c) => send({ to: [c.to], message: c.text, sender_id: 'ACME' })));
      for (const [i, c] of cases.entries()) {
        await expectAllDelivered(ids[i]!, 1);
        expect(smsc.messagesTo(atCentre(c.to)), `text at the centre for ${c.to}`).to.deep.equal([c.text]);
        const parts = smsc.submits.filter((s) => s.destination === atCentre(c.to));
        expect(parts.map((p) => p.dataCoding)).to.deep.equal(Array.from({ length: c.parts }, () => c.dataCoding));
        expect(parts.map((p) => ({ ton: p.destinationTon, npi: p.destinationNpi }))).to.deep.equal(
          Array.from({ length: c.parts }, () => ({ ton: 1, npi: 1 })),
        );
        if (c.parts > 1) expect(parts.map((p) => p.concatenation?.total)).to.deep.equal([3, 3, 3]);
      }
      const segments = await Promise.all(ids.map(async (id) => (await terminalEvents(id, 1)).get(0)![0]!.data.segments));
      expect(segments).to.deep.equal([1, 1, 1, 3]);
    });

    it('gives the centre the sender with its TON/NPI: alphanumeric, short code, and the configured default', async () => {
      const cases = [
        { to: phone(2001), sender: 'ACME Shop' as string | undefined, addr: 'ACME Shop', ton: 5, npi: 0 },
        { to: phone(2002), sender: '12345' as string | undefined, addr: '12345', ton: 3, npi: 0 },
        { to: phone(2003), sender: undefined, addr: 'InfoSMS', ton: 5, npi: 0 },
      ];
      const ids = await Promise.all(
        cases.map((c) => send({ to: [c.to], message: `Sender check ${c.to}`, ...(c.sender === undefined ? {} : { sender_id: c.sender }) })),
      );
      for (const [i, c] of cases.entries()) {
        await expectAllDelivered(ids[i]!, 1);
        const seen = smsc.submits
          .filter((s) => s.destination === atCentre(c.to))
          .map((s) => ({ addr: s.sourceAddr, ton: s.sourceTon, npi: s.sourceNpi }));
        expect(seen, `source address for sender ${c.sender ?? '(none)'}`).to.deep.equal([{ addr: c.addr, ton: c.ton, npi: c.npi }]);
      }
    });

    it("maps every receipt stat and a permanent submit error to the documented recipient status and error code, with the centre's words as carrier status", async () => {
      const expected = [
        { to: phone(3000), status: 'delivered', carrier: 'smpp:DELIVRD', code: null, retryable: null, message: null },
        {
          to: phone(3001),
          status: 'failed',
          carrier: 'smpp:UNDELIV err:001',
          code: '1502',
          retryable: true,
          message: 'Undelivered (carrier error 001)',
        },
        { to: phone(3002), status: 'failed', carrier: 'smpp:EXPIRED', code: '1505', retryable: true, message: 'Expired' },
        { to: phone(3003), status: 'failed', carrier: 'smpp:REJECTD', code: '1504', retryable: false, message: 'Rejected by the carrier' },
        { to: phone(3004), status: 'failed', carrier: 'smpp:UNKNOWN', code: '1506', retryable: true, message: 'Delivery unknown' },
        { to: phone(3005), status: 'failed', carrier: 'smpp:DELETED', code: '1501', retryable: false, message: 'Deleted by the carrier' },
        {
          to: phone(3006),
          status: 'failed',
          carrier: 'smpp:0x0000000b ESME_RINVDSTADR',
          code: '1504',
          retryable: false,
          message: 'Carrier refused the message (smpp:0x0000000b ESME_RINVDSTADR)',
        },
      ];
      const messageId = await send({ to: expected.map((e) => e.to), message: 'Stat mapping' });
      const final = await finalRecipients(messageId);
      expect(
        final.map((r) => ({
          phone: r.phone,
          status: r.status,
          carrier_status: r.carrier_status,
          error_code: r.error_code,
          error_message: r.error_message,
        })),
      ).to.deep.equal(
        expected.map((e) => ({ phone: e.to, status: e.status, carrier_status: e.carrier, error_code: e.code, error_message: e.message })),
      );
      const events = await terminalEvents(messageId, expected.length);
      for (const [index, e] of expected.entries()) {
        const got = events.get(index) ?? [];
        expect(
          got.map((event) => event.event_type),
          `terminal events of ${e.to}`,
        ).to.deep.equal([e.status === 'delivered' ? 'sms.delivered' : 'sms.failed']);
        if (e.status === 'failed') {
          expect(got[0]!.data, `sms.failed of ${e.to}`).to.include({
            error_code: e.code,
            error_message: e.message,
            retryable: e.retryable,
            recipient_phone: e.to,
          });
        }
      }
      // the refused destination was never accepted by the centre, the others once each
      expect(smsc.submits.filter((s) => s.destination === atCentre(phone(3006)))).to.have.length(0);
      for (const e of expected.slice(0, 6))
        expect(
          smsc.submits.filter((s) => s.destination === atCentre(e.to)),
          e.to,
        ).to.have.length(1);
    });

    it('fails a multi-part message with one undelivered part as partially delivered (1507)', async () => {
      const text = Array.from({ length: 330 }, (_, i) => 'Partial delivery check '[i % 23]).join('');
      expect(analyseMessage(text).segments).to.equal(3);
      const messageId = await send({ to: [phone(7001)], message: text });
      const [recipient] = await finalRecipients(messageId);
      // carrier_status: the centre's words for the part that failed
      expect(recipient).to.include({ status: 'failed', carrier_status: 'smpp:UNDELIV', error_code: '1507' });
      expect(recipient!.error_message).to.equal('2 of 3 parts delivered; Undelivered');
      const events = await terminalEvents(messageId, 1);
      expect(events.get(0)!.map((e) => e.event_type)).to.deep.equal(['sms.failed']);
      expect(events.get(0)![0]!.data).to.include({ error_code: '1507', retryable: false });
      expect(smsc.messagesTo(atCentre(phone(7001)))).to.deep.equal([text]);
    });

    it('delivers every recipient when the centre drops the connections while submissions are in flight', async () => {
      const to = Array.from({ length: 30 }, (_, i) => phone(5000 + i));
      smsc.delayResponses(300);
      const before = smsc.submits.length;
      const messageId = await send({ to, message: 'Dropped connection check' });
      await until(() => smsc.submits.length - before >= 3, 'submissions in flight at the centre', 60_000);
      smsc.dropConnections();
      smsc.delayResponses(0);
      await explained(connector!, () => expectAllDelivered(messageId, to.length));
      // each number received the message (at least once: a part left unanswered by a dropped bind may go out twice)
      for (const number of to) expect(smsc.messagesTo(atCentre(number)).length, number).to.be.at.least(1);
      expect(
        connector!.logs.some((line) => line.msg === 'smpp bind down'),
        'the connector saw a bind go down',
      ).to.equal(true);
      await until(() => smsc.binds() >= 2, 'both binds back', 30_000);
    });

    it('acknowledges a mobile-originated message, stays bound, and tells the merchant nothing', async () => {
      const status = await smsc.mobileOriginated('243819990001', 'STOP please');
      expect(status).to.equal(0);
      await connectorLog(connector!, 'smpp mobile-originated message acknowledged (not forwarded)');
      expect(smsc.binds()).to.equal(2);
      // a send after it still goes through, and its events are the last the merchant gets
      const messageId = await send({ to: [phone(8001)], message: 'After the mobile-originated message' });
      await expectAllDelivered(messageId, 1);
      const strangers = merchant.receiver!.events().filter((event) => !sentMessages.has(event.message_id));
      expect(strangers, 'webhook events about no message the merchant sent').to.deep.equal([]);
      expect(merchant.receiver!.requests.some((r) => r.rawBody.includes('STOP please'))).to.equal(false);
    });
  });

  describe('with a centre that throttles (window 2, 10 submits per second)', () => {
    let smsc: TestSmsc;
    let connector: MainProcess | null = null;

    before(async () => {
      smsc = await startTestSmsc({ window: 2, maxSubmitsPerSecond: 10, messageIdPrefix: 'T' });
      connector = await startConnector(smsc, { SMPP_BINDS: '1', SMPP_WINDOW: '10' });
    });

    after(async () => {
      await stopConnector(connector);
      await smsc.stop();
    });

    it('delivers all 40 recipients: the centre throttled, none failed', async () => {
      const to = Array.from({ length: 40 }, (_, i) => phone(4000 + i));
      const messageId = await send({ to, message: 'Throttled centre check' });
      await explained(connector!, () => expectAllDelivered(messageId, to.length, 240_000));
      expect(smsc.throttled(), 'submissions the centre answered ESME_RTHROTTLED').to.be.greaterThan(0);
      for (const number of to) expect(smsc.messagesTo(atCentre(number)), number).to.deep.equal(['Throttled centre check']);
    });
  });

  describe('with a connector killed while submissions are outstanding', () => {
    let smsc: TestSmsc;
    let connector: MainProcess | null = null;

    before(async () => {
      // receipts come 15 s after a submission: the first message's receipts are still to come when the connector dies
      smsc = await startTestSmsc({ receiptDelayMs: 15_000, receiptRetryMs: 500, messageIdPrefix: 'K' });
      connector = await startConnector(smsc, { SMPP_BINDS: '1', SMPP_WINDOW: '10' });
    });

    after(async () => {
      await stopConnector(connector);
      await smsc.stop();
    });

    it('brings every recipient to a final status after a restart, and correlates the receipts of ids given before it', async () => {
      // answered at once: references given, correlations stored, receipts pending at the centre
      const early = Array.from({ length: 5 }, (_, i) => phone(6000 + i));
      const earlyId = await send({ to: early, message: 'Answered before the crash' });
      await eventuallyStatus(earlyId, (recipients) => recipients.every((r) => r.status === 'sent'));
      const answeredBefore = smsc.submits.filter((s) => early.map(atCentre).includes(s.destination)).map((s) => s.messageId);
      expect(answeredBefore).to.have.length(early.length);

      // left unanswered: the connector dies with these submissions outstanding
      smsc.delayResponses(600_000);
      const late = Array.from({ length: 5 }, (_, i) => phone(6100 + i));
      const lateId = await send({ to: late, message: 'Outstanding at the crash' });
      await until(
        () => smsc.submits.filter((s) => late.map(atCentre).includes(s.destination)).length >= late.length,
        'the outstanding submissions at the centre',
        60_000,
      );
      expect(smsc.answeredReceipts(), 'receipts answered before the crash').to.equal(0);
      connector!.signal('SIGKILL');
      await connector!.exited;
      smsc.delayResponses(0);
      await until(() => smsc.binds() === 0, 'the dead bind gone', 30_000);

      connector = await startConnector(smsc, { SMPP_BINDS: '1', SMPP_WINDOW: '10' });
      // the receipts of the references given before the crash arrive now, to the new process, and still correlate
      await explained(connector, () => expectAllDelivered(earlyId, early.length, 180_000));
      expect(
        smsc.submits.filter((s) => early.map(atCentre).includes(s.destination)).map((s) => s.messageId),
        'no early recipient sent again',
      ).to.deep.equal(answeredBefore);
      // the outstanding ones are sent again (CONNECTOR_UNCERTAIN_SUBMISSION=resend, the default) and end delivered
      await explained(connector, () => expectAllDelivered(lateId, late.length, 240_000));
      for (const number of late) expect(smsc.messagesTo(atCentre(number)).length, number).to.be.at.least(1);
    });
  });

  /** Runs `check`; a failure carries the connector's log lines (throttling lines left out) and the node's. */
  async function explained(connector: MainProcess, check: () => Promise<void>): Promise<void> {
    try {
      await check();
    } catch (error) {
      if (error instanceof Error) {
        const lines = connector.lines.filter((line) => !line.includes('smpp submit throttled')).slice(-200);
        error.message = `${error.message}\nconnector log:\n${lines.join('\n')}\n${connector.stderr()}\nnode log:\n${cluster!.node('node-1').output().slice(-20_000)}`;
      }
      throw error;
    }
  }

  async function eventuallyStatus(
    messageId: string,
    done: (recipients: readonly RecipientView[]) => boolean,
    timeoutMs = 60_000,
  ): Promise<void> {
    const deadline = Date.now() + timeoutMs;
    for (;;) {
      const answer = await call(`${api()}/status/${messageId}`, { key: merchant.apiKey });
      if (answer.status === 200 && done((answer.body as { data: { recipients: RecipientView[] } }).data.recipients)) return;
      if (Date.now() > deadline)
        throw new Error(`GET /status/${messageId} never reached the expected state: ${answer.text.slice(0, 2_000)}`);
      await sleep(200);
    }
  }
});

async function connectorLog(connector: MainProcess, msg: string): Promise<void> {
  await connector.waitForLog((line) => line.msg === msg, 30_000);
}

async function until(condition: () => boolean, what: string, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await sleep(25);
  }
}

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });
