import { execFileSync } from 'node:child_process';
import { readFileSync } from 'node:fs';
import { Socket } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import type { DispatchJob } from '../../../src/carriers/carrier-protocol.js';
import type { CarrierReport, SubmitOutcome } from '../../../src/carriers/connector/carrier-link.js';
import { parseSmppAccount, type SmppAccount } from '../../../src/carriers/smpp/smpp-account.js';
import { encodeGsm7 } from '../../../src/carriers/smpp/smpp-encoding.js';
import { createSmppLink, isUncertainRetry, type SmppLink, type SmppLinkEvent } from '../../../src/carriers/smpp/smpp-link.js';
import { analyseMessage } from '../../../src/messaging/segments.js';
import { startTestSmsc, type ReceiptStat, type TestSmsc, type TestSmscOptions } from '../../helpers/test-smsc.js';
import { dispatchJobFor } from '../../helpers/dispatch-job.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

/** The SMPP link against the test message centre, over real TCP (no NATS). */

async function until(condition: () => boolean, what: string, timeoutMs = 15_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
}

const job = (to: string, text: string, senderId: string | null = 'ACME'): DispatchJob => dispatchJobFor(to, text, senderId, 'test');

/** Submits until the outcome is not `retry` (what the connector runtime does through the stream), bounded. */
async function submitUntilSettled(
  link: SmppLink,
  dispatch: DispatchJob,
  maxRounds = 40,
): Promise<{ outcome: SubmitOutcome; rounds: number }> {
  for (let round = 1; ; round++) {
    const outcome = await link.submit(dispatch);
    if (outcome.kind !== 'retry' || round >= maxRounds) return { outcome, rounds: round };
    await new Promise((resolve) => setTimeout(resolve, 50));
  }
}

describe('SMPP link with the test SMSC', function () {
  this.timeout(60_000);
  let smsc: TestSmsc | null = null;
  let link: SmppLink | null = null;
  let reports: CarrierReport[] = [];
  let events: SmppLinkEvent[] = [];

  afterEach(async () => {
    await link?.stop();
    await smsc?.stop();
    link = null;
    smsc = null;
  });

  function account(server: TestSmsc, overrides: Record<string, unknown> = {}): SmppAccount {
    return parseSmppAccount({
      host: '127.0.0.1',
      port: server.port,
      systemId: 'smsc',
      password: 'secret',
      reconnectInitialMs: 50,
      reconnectMaxMs: 400,
      enquireLinkIntervalMs: 1_000,
      enquireLinkTimeoutMs: 2_000,
      submitTimeoutMs: 3_000,
      retryDelayMs: 100,
      maxSubmitsPerSecond: 500,
      ...overrides,
    });
  }

  async function open(
    smscOptions: TestSmscOptions = {},
    overrides: Record<string, unknown> = {},
    onReport: (report: CarrierReport) => Promise<void> = (report) => {
      reports.push(report);
      return Promise.resolve();
    },
  ): Promise<{ smsc: TestSmsc; link: SmppLink }> {
    reports = [];
    events = [];
    const server = await startTestSmsc(smscOptions);
    smsc = server;
    const created = createSmppLink(account(server, overrides), { onEvent: (event) => events.push(event) });
    link = created;
    await created.start(onReport);
    return { smsc: server, link: created };
  }

  it('sends GSM-7 with extension characters as data_coding 0 septets', async () => {
    const { smsc, link } = await open();
    const text = 'Promo [A|B] {x} ~ 10€ ^_^ \\o/ @home';
    const outcome = await link.submit(job('+243810000001', text));
    expect(outcome.kind).to.equal('accepted');
    expect(smsc.messagesTo('243810000001')).to.deep.equal([text]);
    const part = smsc.submits[0]!;
    expect(part.dataCoding).to.equal(0);
    expect(part.shortMessage).to.deep.equal(encodeGsm7(text));
    expect(part.destinationTon).to.equal(1);
    expect(part.destinationNpi).to.equal(1);
    expect(part.registeredDelivery).to.equal(1);
    expect(outcome.kind === 'accepted' && outcome.references).to.deep.equal([part.messageId]);
  });

  it('sends UCS-2 (surrogate pairs included) as data_coding 8', async () => {
    const { smsc, link } = await open();
    const text = 'Привет 😀 中文 🚀';
    const outcome = await link.submit(job('+243810000002', text));
    expect(outcome.kind).to.equal('accepted');
    expect(smsc.submits[0]!.dataCoding).to.equal(8);
    expect(smsc.messagesTo('243810000002')).to.deep.equal([text]);
  });

  for (const method of ['udh', 'sar', 'payload'] as const) {
    it(`sends a 3-part message the centre reassembles exactly (${method})`, async () => {
      const { smsc, link } = await open({}, { longMessageMethod: method });
      const text = Array.from({ length: 40 }, (_, i) => `word${i}€`).join(' ') + ' end';
      const analysis = analyseMessage(text);
      expect(analysis.segments).to.equal(3);
      const outcome = await link.submit(job('+243810000003', text));
      expect(outcome.kind).to.equal('accepted');
      expect(smsc.messagesTo('243810000003')).to.deep.equal([text]);
      if (method === 'payload') {
        expect(smsc.submits).to.have.length(1);
        expect(smsc.submits[0]!.messagePayload).to.not.equal(null);
        expect(outcome.kind === 'accepted' && outcome.references).to.have.length(1);
        return;
      }
      expect(smsc.submits).to.have.length(3);
      expect(smsc.submits.map((p) => p.concatenation?.method)).to.deep.equal([method, method, method]);
      expect(smsc.submits.map((p) => p.concatenation?.seq)).to.deep.equal([1, 2, 3]);
      expect(new Set(smsc.submits.map((p) => p.sessionId)).size).to.equal(1);
      expect(smsc.submits.map((p) => p.esmClass)).to.deep.equal(method === 'udh' ? [0x40, 0x40, 0x40] : [0, 0, 0]);
      expect(outcome.kind === 'accepted' && outcome.references).to.deep.equal(smsc.submits.map((p) => p.messageId));
    });
  }

  it('gives each sender kind its TON/NPI', async () => {
    const { smsc, link } = await open({}, { defaultSender: '55555' });
    for (const sender of ['ACME', '4242', '+33612345678', null]) {
      expect((await link.submit(job('+243810000004', 'hi', sender))).kind).to.equal('accepted');
    }
    expect(smsc.submits.map((p) => [p.sourceAddr, p.sourceTon, p.sourceNpi])).to.deep.equal([
      ['ACME', 5, 0],
      ['4242', 3, 0],
      ['33612345678', 1, 1],
      ['55555', 3, 0],
    ]);
  });

  const STATS: [ReceiptStat, string][] = [
    ['DELIVRD', 'delivered'],
    ['UNDELIV', 'undelivered'],
    ['EXPIRED', 'expired'],
    ['REJECTD', 'rejected'],
    ['UNKNOWN', 'unknown'],
    ['DELETED', 'deleted'],
    ['ACCEPTD', 'enroute'],
    ['ENROUTE', 'enroute'],
  ];
  for (const style of ['tlv+text', 'text-only', 'tlv-only'] as const) {
    it(`reports every stat to onReport (${style})`, async () => {
      const statFor = (destination: string): ReceiptStat => STATS[Number(destination.slice(-1))]![0];
      const { smsc, link } = await open({
        receiptStyle: style,
        outcomeFor: (destination) => ({ stat: statFor(destination), err: destination.endsWith('1') ? '012' : '000' }),
      });
      const references = new Map<string, string>();
      for (const [index, [stat]] of STATS.entries()) {
        const outcome = await link.submit(job(`+24381000010${index}`, `about ${stat}`));
        expect(outcome.kind).to.equal('accepted');
        if (outcome.kind === 'accepted') references.set(outcome.references[0]!, stat);
      }
      await until(() => reports.length >= STATS.length, 'every receipt');
      for (const report of reports) {
        const stat = references.get(report.reference);
        expect(stat, report.reference).to.not.equal(undefined);
        expect(report.state).to.equal(STATS.find(([s]) => s === stat)![1]);
        expect(report.carrierError).to.equal(style !== 'tlv-only' && stat === 'UNDELIV' ? '012' : null);
        expect(report.carrierStatus).to.equal(`smpp:${stat ?? ''}${report.carrierError === null ? '' : ` err:${report.carrierError}`}`);
      }
      await until(() => smsc.answeredReceipts() === STATS.length, 'receipts answered');
    });
  }

  it('rides out throttling: many submits, none rejected, all accepted in the end', async () => {
    const { smsc, link } = await open({ window: 2, maxSubmitsPerSecond: 40 }, { window: 5, binds: 2, throttleAttempts: 3 });
    smsc.delayResponses(20);
    const results = await Promise.all(
      Array.from({ length: 60 }, (_, i) => submitUntilSettled(link, job(`+2438100002${String(i).padStart(2, '0')}`, `n${i}`))),
    );
    expect(results.map((r) => r.outcome.kind)).to.deep.equal(Array(60).fill('accepted'));
    expect(smsc.throttled()).to.be.greaterThan(0);
    expect(events.some((e) => e.type === 'throttled')).to.be.true;
    expect(new Set(smsc.submits.map((p) => p.destination)).size).to.equal(60);
  });

  it('keeps the account within its submits per second, across binds', async () => {
    const { smsc, link } = await open({ maxSubmitsPerSecond: 12 }, { maxSubmitsPerSecond: 10, binds: 2, window: 10 });
    await until(() => smsc.binds() === 2, 'two binds');
    const outcomes = await Promise.all(
      Array.from({ length: 25 }, (_, i) => link.submit(job(`+2438100012${String(i).padStart(2, '0')}`, `paced ${i}`))),
    );
    expect(outcomes.map((o) => o.kind)).to.deep.equal(Array(25).fill('accepted'));
    expect(smsc.throttled()).to.equal(0);
    expect(new Set(smsc.submits.map((p) => p.sessionId)).size).to.equal(2);
    expect(link.stats().submitsPerSecond).to.be.greaterThan(0);
  });

  it('counts the window in use while answers are outstanding', async () => {
    const { smsc, link } = await open({}, { window: 4 });
    smsc.delayResponses(500);
    const pending = Array.from({ length: 6 }, (_, i) => link.submit(job(`+2438100013${i}`, `w${i}`)));
    await until(() => smsc.submits.length === 4, 'a full window');
    expect(link.stats()).to.deep.include({ windowInUse: 4, windowSize: 4 });
    expect((await Promise.all(pending)).map((o) => o.kind)).to.deep.equal(Array(6).fill('accepted'));
    expect(link.stats().windowInUse).to.equal(0);
  });

  it('submits again what was outstanding when the connection drops mid-window', async () => {
    const { smsc, link } = await open({}, { window: 20, binds: 2 });
    smsc.delayResponses(1_000);
    const pending = Array.from({ length: 12 }, (_, i) =>
      submitUntilSettled(link, job(`+2438100003${String(i).padStart(2, '0')}`, `drop ${i}`)),
    );
    await until(() => smsc.submits.length >= 12, 'all submitted once');
    smsc.dropConnections();
    smsc.delayResponses(0);
    const results = await Promise.all(pending);
    expect(results.map((r) => r.outcome.kind)).to.deep.equal(Array(12).fill('accepted'));
    expect(events.filter((e) => e.type === 'resubmit').length).to.be.at.least(12);
    expect(smsc.submits.length).to.be.at.least(24); // each one twice: the centre had taken the first copies
    await until(() => link.isLive() && smsc.binds() === 2, 'binds back');
    for (let i = 0; i < 12; i++) expect(smsc.messagesTo(`2438100003${String(i).padStart(2, '0')}`).length).to.be.at.least(1);
  });

  it('passes on receipts that come before the submit_sm_resp', async () => {
    const { smsc, link } = await open({ receiptDelayMs: 0 });
    smsc.receiptBeforeResponse(true);
    let settled = false;
    const submitted = link.submit(job('+243810000400', 'early receipt')).finally(() => {
      settled = true;
    });
    await until(() => reports.length === 1, 'the early receipt');
    expect(settled, 'the submit_sm_resp came first').to.be.false;
    const outcome = await submitted;
    expect(outcome.kind === 'accepted' && outcome.references).to.deep.equal([reports[0]!.reference]);
  });

  it('is not live while binds are refused, answers retry, and binds once allowed', async () => {
    reports = [];
    const server = await startTestSmsc();
    smsc = server;
    server.refuseBinds(true);
    link = createSmppLink(account(server), { onEvent: (event) => events.push(event) });
    await link.start(() => Promise.resolve());
    expect(link.isLive()).to.be.false;
    expect(link.stats()).to.deep.include({ bindsUp: 0, bindsTotal: 1 });
    const outcome = await link.submit(job('+243810000500', 'nobody home'));
    expect(outcome.kind).to.equal('retry');
    expect(isUncertainRetry(outcome)).to.be.false;
    expect(server.submits).to.have.length(0);
    server.refuseBinds(false);
    const live = link;
    await until(() => live.isLive(), 'the bind');
    expect((await live.submit(job('+243810000500', 'now'))).kind).to.equal('accepted');
  });

  it('acknowledges a mobile-originated message and keeps the bind', async () => {
    const { smsc, link } = await open();
    const status = await smsc.mobileOriginated('243810000600', 'STOP €');
    expect(status).to.equal(0);
    expect(link.mobileOriginatedCount()).to.equal(1);
    expect(events).to.deep.include({ type: 'mobile-originated', from: '243810000600', to: '12345', text: 'STOP €' });
    expect(link.isLive()).to.be.true;
    expect(smsc.binds()).to.equal(1);
    expect((await link.submit(job('+243810000600', 'still here'))).kind).to.equal('accepted');
    expect(reports).to.have.length(0);
  });

  it('withholds deliver_sm_resp while onReport is pending, and gets the receipt again after a failure', async () => {
    let release: () => void = () => undefined;
    let calls = 0;
    const { smsc, link } = await open({ receiptRetryMs: 300 }, {}, (report) => {
      calls++;
      reports.push(report);
      if (calls === 1) return Promise.reject(new Error('receipt store down'));
      return new Promise<void>((resolve) => {
        release = resolve;
      });
    });
    expect((await link.submit(job('+243810000700', 'hold it'))).kind).to.equal('accepted');
    await until(() => calls === 2, 'the receipt sent again after the failure');
    expect(events.some((e) => e.type === 'report-failed')).to.be.true;
    await new Promise((resolve) => setTimeout(resolve, 100));
    expect(smsc.unansweredReceipts()).to.equal(1);
    expect(smsc.answeredReceipts()).to.equal(0);
    release();
    await until(() => smsc.answeredReceipts() === 1, 'the answer');
    expect(smsc.unansweredReceipts()).to.equal(0);
  });

  it('answers the reports it is done with in one turn in one write to the centre', async () => {
    let release: () => void = () => undefined;
    const stored = new Promise<void>((resolve) => {
      release = resolve;
    });
    // no enquire_link during the test: only the answers go to the centre
    const { smsc, link } = await open({}, { enquireLinkIntervalMs: 60_000 }, (report) => {
      reports.push(report);
      // the receipts are stored together (one receipt batch): every report's promise resolves in the same turn
      return stored;
    });
    const count = 10;
    await Promise.all(Array.from({ length: count }, (_, i) => link.submit(job(`+2438100012${String(i).padStart(2, '0')}`, `report ${i}`))));
    await until(() => reports.length === count, 'every report');
    // writes of the link's socket (to the centre's port), from now on; the centre's own writes are not counted
    const sockets: Socket[] = [];
    const single = sinon.spy(Socket.prototype, '_write');
    const gathered = sinon.spy(Socket.prototype, '_writev');
    try {
      release();
      await until(() => smsc.answeredReceipts() === count, 'every deliver_sm_resp');
      for (const call of [...single.getCalls(), ...gathered.getCalls()]) sockets.push(call.thisValue as Socket);
      expect(sockets.filter((socket) => socket.remotePort === smsc.port)).to.have.length(1);
    } finally {
      single.restore();
      gathered.restore();
    }
  });

  it('closes a session whose enquire_link goes unanswered, and binds again', async () => {
    const { smsc, link } = await open({}, { enquireLinkIntervalMs: 100, enquireLinkTimeoutMs: 300 });
    smsc.ignoreEnquireLinks(true);
    await until(() => events.some((e) => e.type === 'enquire-link-timeout'), 'the enquire_link timeout');
    smsc.ignoreEnquireLinks(false);
    await until(() => events.filter((e) => e.type === 'bind-up').length >= 2 && link.isLive(), 'the bind again');
    expect((await link.submit(job('+243810000800', 'after the hang'))).kind).to.equal('accepted');
  });

  it('binds a transmitter and a receiver per bind when asked', async () => {
    const { smsc, link } = await open({}, { bindMode: 'transmitter_receiver', binds: 2 });
    await until(() => smsc.binds() === 4, 'four sessions');
    expect(link.stats()).to.deep.include({ bindsUp: 2, bindsTotal: 2, windowSize: 20 });
    const outcome = await link.submit(job('+243810000900', 'split binds'));
    expect(outcome.kind).to.equal('accepted');
    await until(() => reports.length === 1, 'the receipt on the receiver');
  });

  it('binds over TLS, trusting the CA it is given', async function () {
    const dir = temporaryDir('smpp-tls-');
    try {
      try {
        execFileSync(
          'openssl',
          [
            'req',
            '-x509',
            '-newkey',
            'rsa:2048',
            '-nodes',
            '-days',
            '1',
            '-subj',
            '/CN=localhost',
            '-addext',
            'subjectAltName=IP:127.0.0.1',
            '-keyout',
            path.join(dir, 'key.pem'),
            '-out',
            path.join(dir, 'cert.pem'),
          ],
          { stdio: 'ignore' },
        );
      } catch {
        this.skip(); // no openssl on this machine
      }
      const cert = readFileSync(path.join(dir, 'cert.pem'), 'utf8');
      const server = await startTestSmsc({ tls: { key: readFileSync(path.join(dir, 'key.pem')), cert } });
      smsc = server;
      const caFile = path.join(dir, 'cert.pem');
      link = createSmppLink(account(server, { tls: true, tlsCaFile: caFile }));
      reports = [];
      await link.start((report) => {
        reports.push(report);
        return Promise.resolve();
      });
      expect(link.isLive()).to.be.true;
      expect((await link.submit(job('+243810001200', 'over TLS'))).kind).to.equal('accepted');
      expect(server.messagesTo('243810001200')).to.deep.equal(['over TLS']);
      await until(() => reports.length === 1, 'the receipt over TLS');
    } finally {
      removeTemporaryDir(dir);
    }
  });

  it('does not bind over TLS to a centre whose certificate it does not trust', async function () {
    const dir = temporaryDir('smpp-tls-');
    try {
      try {
        execFileSync(
          'openssl',
          [
            'req',
            '-x509',
            '-newkey',
            'rsa:2048',
            '-nodes',
            '-days',
            '1',
            '-subj',
            '/CN=localhost',
            '-addext',
            'subjectAltName=IP:127.0.0.1',
            '-keyout',
            path.join(dir, 'key.pem'),
            '-out',
            path.join(dir, 'cert.pem'),
          ],
          { stdio: 'ignore' },
        );
      } catch {
        this.skip();
      }
      const server = await startTestSmsc({
        tls: { key: readFileSync(path.join(dir, 'key.pem')), cert: readFileSync(path.join(dir, 'cert.pem')) },
      });
      smsc = server;
      events = [];
      link = createSmppLink(account(server, { tls: true }), { onEvent: (event) => events.push(event) });
      await link.start(() => Promise.resolve());
      expect(link.isLive()).to.be.false;
      expect(events.some((e) => e.type === 'bind-failed')).to.be.true;
    } finally {
      removeTemporaryDir(dir);
    }
  });

  it('gives the job back, never rejected, when the centre stays throttled', async () => {
    const { smsc, link } = await open({ outcomeFor: () => ({ submitStatus: 0x58 }) }, { throttleAttempts: 3 });
    const outcome = await link.submit(job('+243810001300', 'busy'));
    expect(outcome.kind).to.equal('retry');
    expect(isUncertainRetry(outcome)).to.be.false;
    expect(events.filter((e) => e.type === 'throttled')).to.have.length(3);
    expect(smsc.submits).to.have.length(0);
  });

  it('rejects on a permanent status and names it', async () => {
    const { link } = await open({
      outcomeFor: (destination) => (destination.endsWith('99') ? { submitStatus: 0x0b } : { stat: 'DELIVRD' }),
    });
    const outcome = await link.submit(job('+243810000999', 'bad number'));
    expect(outcome).to.deep.include({ kind: 'rejected', carrierStatus: 'smpp:0x0000000b ESME_RINVDSTADR', acceptedReferences: [] });
  });

  it('submits again on a live bind when no answer comes in time, then gives the job back', async () => {
    const { smsc, link } = await open({}, { submitTimeoutMs: 200, submitAttempts: 2 });
    smsc.delayResponses(2_000);
    const outcome = await link.submit(job('+243810001000', 'slow'));
    expect(outcome.kind).to.equal('retry');
    expect(isUncertainRetry(outcome)).to.be.true;
    expect(smsc.submits).to.have.length(2);
    expect(events.filter((e) => e.type === 'resubmit')).to.have.length(1);
  });

  it('stop() waits for outstanding answers and unbinds', async () => {
    const { smsc, link } = await open({}, { binds: 2 });
    await until(() => smsc.binds() === 2, 'two binds');
    smsc.delayResponses(300);
    const submitted = link.submit(job('+243810001100', 'last one'));
    await until(() => smsc.submits.length === 1, 'the submit');
    await link.stop();
    expect((await submitted).kind).to.equal('accepted');
    expect(smsc.unbinds()).to.equal(2);
    await until(() => smsc.binds() === 0, 'no binds');
    expect(link.isLive()).to.be.false;
    expect((await link.submit(job('+243810001100', 'too late'))).kind).to.equal('retry');
  });
});
