import { expect } from 'chai';
import type { DispatchJob } from '../../../src/carriers/carrier-protocol.js';
import type { CarrierReport, SubmitOutcome } from '../../../src/carriers/connector/carrier-link.js';
import { createKannelLink, type KannelLink } from '../../../src/carriers/kannel/kannel-link.js';
import { parseKannelSettings } from '../../../src/carriers/kannel/kannel-settings.js';
import { silentLogger } from '../../../src/libraries/logger/logger.js';
import { kannelInstalled, startTestKannel, type TestKannel } from '../../helpers/kannel.js';
import { freePort } from '../../helpers/ports.js';
import { startTestSmsc, type TestSmsc, type TestSmscOptions } from '../../helpers/test-smsc.js';
import { dispatchJobFor } from '../../helpers/dispatch-job.js';

/** The Kannel link → real smsbox → real bearerbox → SMPP → the test SMSC, and delivery reports back the same way. */

async function until(condition: () => boolean, what: string, describeState: () => string, timeoutMs = 30_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}\n${describeState()}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

const job = (to: string, text: string, senderId: string | null = 'ACME'): DispatchJob => dispatchJobFor(to, text, senderId, 'kannel');

describe('Kannel link through Kannel to the test SMSC', function () {
  this.timeout(90_000);
  let smsc: TestSmsc | null = null;
  let kannel: TestKannel | null = null;
  let link: KannelLink | null = null;
  let reports: CarrierReport[] = [];
  /** How many of the next reports onReport refuses (the link must answer Kannel 503, and Kannel call again). */
  let refuseReports = 0;
  let refused = 0;

  before(function () {
    if (!kannelInstalled()) {
      console.warn(
        'Kannel (/usr/sbin/bearerbox, /usr/sbin/smsbox) is not installed: Kannel link integration tests skipped (apt-get install kannel)',
      );
      this.skip();
    }
  });

  async function setUp(smscOptions: TestSmscOptions = {}, linkSettings: Record<string, unknown> = {}): Promise<KannelLink> {
    smsc = await startTestSmsc(smscOptions);
    kannel = await startTestKannel({ smsc: { host: '127.0.0.1', port: smsc.port, systemId: 'smsc', password: 'secret' } });
    await kannel.waitForSmscOnline();
    link = createKannelLink(
      parseKannelSettings({
        sendsmsHost: kannel.sendsmsHost,
        sendsmsPort: kannel.sendsmsPort,
        username: kannel.username,
        password: kannel.password,
        smsc: kannel.smscId,
        dlrHost: '127.0.0.1',
        dlrPort: await freePort(),
        requestTimeoutMs: 10_000,
        retryDelayMs: 100,
        ...linkSettings,
      }),
      { logger: silentLogger },
    );
    await link.start((report) => {
      if (refuseReports > 0) {
        refuseReports--;
        refused++;
        return Promise.reject(new Error('receipt stream unavailable'));
      }
      reports.push(report);
      return Promise.resolve();
    });
    return link;
  }

  const state = (): string =>
    `reports: ${JSON.stringify(reports)}\nsubmits: ${JSON.stringify(smsc?.submits.map((s) => ({ to: s.destination, text: s.text, id: s.messageId })))}\n${kannel?.logs(Number(process.env.KANNEL_TEST_LOG_LINES ?? 30)) ?? ''}`;

  afterEach(async () => {
    await link?.stop();
    await kannel?.stop();
    await smsc?.stop();
    link = null;
    kannel = null;
    smsc = null;
    reports = [];
    refuseReports = 0;
    refused = 0;
  });

  function acceptedReference(outcome: SubmitOutcome): string {
    if (outcome.kind !== 'accepted') throw new Error(`expected accepted, got ${JSON.stringify(outcome)}\n${state()}`);
    expect(outcome.references).to.have.length(1);
    return outcome.references[0] ?? '';
  }

  it('a GSM-7 message arrives intact at the SMSC and its receipt comes back as delivered', async () => {
    const kannelLink = await setUp();
    expect(kannelLink.isLive()).to.equal(true);
    // characters of the GSM 03.38 extension table ([ ] ~ { } €) take two septets each
    const gsmText = 'Your code is 4711 [valid 5 min] ~ no: just \u20ac and {braces}';
    const dispatch = job('+4915112345678', gsmText);
    expect(dispatch.encoding).to.equal('GSM-7');
    const reference = acceptedReference(await kannelLink.submit(dispatch));
    await until(() => reports.some((r) => r.reference === reference && r.state === 'delivered'), 'a delivered report', state);
    const part = smsc?.submits[0];
    expect(part?.text).to.equal(gsmText);
    expect(part?.dataCoding).to.not.equal(8);
    expect(part?.destination).to.match(/4915112345678$/);
    expect(part?.sourceAddr).to.equal('ACME');
    const report = reports.find((r) => r.reference === reference);
    expect(report?.carrierError).to.equal(null);
  });

  it('a failed receipt (UNDELIV) comes back as undelivered with the SMSC error code', async () => {
    const kannelLink = await setUp({ outcomeFor: () => ({ stat: 'UNDELIV', err: '034' }) });
    const reference = acceptedReference(await kannelLink.submit(job('+4915100000001', 'will not arrive')));
    await until(() => reports.some((r) => r.reference === reference && r.state === 'undelivered'), 'an undelivered report', state);
    const report = reports.find((r) => r.reference === reference && r.state === 'undelivered');
    expect(report?.carrierError).to.equal('UNDELIV err:034');
    expect(reports.some((r) => r.reference === reference && r.state === 'delivered')).to.equal(false);
  });

  it('a UCS-2 message arrives intact at the SMSC', async () => {
    const kannelLink = await setUp();
    const text = 'Привет, мир! 你好 🙂 ✓';
    const dispatch = job('+4915100000002', text);
    expect(dispatch.encoding).to.equal('UCS-2');
    const reference = acceptedReference(await kannelLink.submit(dispatch));
    await until(() => reports.some((r) => r.reference === reference && r.state === 'delivered'), 'a delivered report', state);
    expect(smsc?.submits[0]?.dataCoding).to.equal(8);
    expect(smsc?.messagesTo(smsc.submits[0]?.destination ?? '')).to.deep.equal([text]);
  });

  it('a 3-part message is split by Kannel and reassembled at the SMSC; Kannel asks a receipt of its first part only, reported under the one reference', async () => {
    const kannelLink = await setUp();
    const text = Array.from({ length: 40 }, (_, i) => `word${i}`).join(' ') + ' ' + 'x'.repeat(150);
    const dispatch = job('+4915100000003', text);
    expect(dispatch.segments).to.equal(3);
    const reference = acceptedReference(await kannelLink.submit(dispatch));
    await until(() => reports.some((r) => r.reference === reference && r.state === 'delivered'), 'the delivered report', state);
    await until(() => (smsc?.submits.length ?? 0) === 3, 'three parts at the SMSC', state);
    const parts = smsc?.submits ?? [];
    expect(parts.every((s) => s.concatenation !== null)).to.equal(true);
    expect(smsc?.messagesTo(parts[0]?.destination ?? '')).to.deep.equal([text]);
    // Kannel 1.4.5 keeps the dlr-mask on the first part and sends the others with registered_delivery 0
    expect(parts.map((p) => p.registeredDelivery !== 0)).to.deep.equal([true, false, false]);
  });

  it('a part the SMSC refuses (ESME_RINVDSTADR) comes back as a rejected report with the SMSC answer', async () => {
    const kannelLink = await setUp({ outcomeFor: () => ({ submitStatus: 0x0b }) });
    const reference = acceptedReference(await kannelLink.submit(job('+4915100000007', 'bad number')));
    await until(() => reports.some((r) => r.reference === reference && r.state === 'rejected'), 'a rejected report', state);
    const report = reports.find((r) => r.reference === reference);
    expect(report?.carrierError).to.match(/0x0000000b/i);
  });

  it('a report onReport could not record is answered 503 and Kannel calls again', async () => {
    refuseReports = 1;
    const kannelLink = await setUp();
    const reference = acceptedReference(await kannelLink.submit(job('+4915100000004', 'report twice')));
    await until(
      () => reports.some((r) => r.reference === reference && r.state === 'delivered'),
      'the delivered report, called again',
      state,
    );
    expect(refused).to.equal(1);
  });

  it('smsbox refusing the sendsms user gives rejected kannel:HTTP 403', async () => {
    const kannelLink = await setUp({}, { password: 'wrong' });
    const outcome = await kannelLink.submit(job('+4915100000005', 'not allowed'));
    expect(outcome.kind).to.equal('rejected');
    if (outcome.kind !== 'rejected') return;
    expect(outcome.carrierStatus).to.equal('kannel:HTTP 403 Authorization failed for sendsms');
    expect(outcome.message).to.match(/authorization/i);
    expect(smsc?.submits).to.have.length(0);
  });

  it('smsbox gone gives retry (not uncertain) and the link is no longer live', async () => {
    const kannelLink = await setUp();
    await kannel?.stop();
    const outcome = await kannelLink.submit(job('+4915100000006', 'nobody listens'));
    expect(outcome.kind).to.equal('retry');
    if (outcome.kind !== 'retry') return;
    expect(outcome.uncertain ?? false).to.equal(false);
    expect(kannelLink.isLive()).to.equal(false);
  });
});
