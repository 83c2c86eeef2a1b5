import { createServer, request, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { expect } from 'chai';
import type { DispatchJob } from '../../../../src/carriers/carrier-protocol.js';
import type { CarrierReport } from '../../../../src/carriers/connector/carrier-link.js';
import {
  buildDlrUrl,
  classifySendsmsAnswer,
  createKannelLink,
  parseDlrQuery,
  sendsmsQuery,
  stateOfDlrType,
  type KannelLink,
} from '../../../../src/carriers/kannel/kannel-link.js';
import { parseKannelSettings, type KannelSettings } from '../../../../src/carriers/kannel/kannel-settings.js';
import { silentLogger } from '../../../../src/libraries/logger/logger.js';

function job(overrides: Partial<DispatchJob> = {}): DispatchJob {
  return {
    version: 1,
    dispatch_id: 'msg_1:0:0',
    message_id: 'msg_1',
    occurrence_index: 0,
    recipient_index: 0,
    to: '+4915112345678',
    sender_id: 'ACME',
    text: 'Hello & welcome 100%',
    encoding: 'GSM-7',
    segments: 1,
    submitted_at: '2026-01-01T00:00:00.000Z',
    ...overrides,
  };
}

function settingsFor(port: number, extra: Record<string, unknown> = {}): KannelSettings {
  return parseKannelSettings({
    sendsmsHost: '127.0.0.1',
    sendsmsPort: port,
    username: 'gw',
    password: 'p w',
    dlrHost: '127.0.0.1',
    dlrPort: 0,
    retryDelayMs: 250,
    ...extra,
  });
}

async function until(condition: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
}

/** A stand-in for smsbox's sendsms: records queries, answers as told (or holds the answer until released). */
interface FakeSendsms {
  readonly port: number;
  readonly queries: URLSearchParams[];
  answer: (query: URLSearchParams) => { status: number; body: string } | 'hold';
  held: ServerResponse[];
  maxConcurrent: number;
  release(status: number, body: string): void;
  close(): Promise<void>;
}

async function startFakeSendsms(): Promise<FakeSendsms> {
  let open = 0;
  const fake: FakeSendsms = {
    port: 0,
    queries: [],
    answer: () => ({ status: 202, body: '0: Accepted for delivery' }),
    held: [],
    maxConcurrent: 0,
    release(status, body) {
      for (const res of fake.held.splice(0)) res.writeHead(status).end(body);
    },
    close: () =>
      new Promise((resolve) => {
        server.closeAllConnections();
        server.close(() => {
          resolve();
        });
      }),
  };
  const server: Server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const query = new URL(req.url ?? '/', 'http://x').searchParams;
    open++;
    fake.maxConcurrent = Math.max(fake.maxConcurrent, open);
    res.on('close', () => {
      open--;
    });
    if (!query.has('to')) {
      res.writeHead(403).end('Authorization failed for sendsms');
      return;
    }
    fake.queries.push(query);
    const answer = fake.answer(query);
    if (answer === 'hold') fake.held.push(res);
    else res.writeHead(answer.status).end(answer.body);
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  return Object.assign(fake, { port: (server.address() as AddressInfo).port });
}

function callListener(url: string): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request(url, { agent: false }, (res) => {
      let body = '';
      res.setEncoding('utf8');
      res.on('data', (chunk: string) => (body += chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body });
      });
    });
    req.on('error', reject);
    req.end();
  });
}

/** What Kannel does with the dlr-url: fill in the escapes (URL-encoded). */
function kannelFills(dlrUrl: string, values: { d: string; T: string; F: string; A: string }): string {
  return dlrUrl
    .replace('%d', values.d)
    .replace('%T', values.T)
    .replace('%F', encodeURIComponent(values.F))
    .replace('%A', encodeURIComponent(values.A).replace(/%20/g, '+'));
}

describe('Kannel link', () => {
  describe('dlr-url and delivery reports', () => {
    it('puts the token and Kannel escapes in the dlr-url', () => {
      expect(buildDlrUrl('http://c1:13080', 'tok-1_A')).to.equal('http://c1:13080/kannel/dlr?ref=tok-1_A&type=%d&ts=%T&fid=%F&answer=%A');
    });

    it('maps Kannel report types to part states', () => {
      expect([1, 2, 4, 8, 16].map(stateOfDlrType)).to.deep.equal(['delivered', 'undelivered', 'enroute', 'accepted', 'rejected']);
      expect(stateOfDlrType(3)).to.equal(null);
      expect(stateOfDlrType(32)).to.equal(null);
    });

    it('reads a delivered receipt (no error, time from %T)', () => {
      const url = new URL(
        kannelFills(buildDlrUrl('http://c', 'tok'), {
          d: '1',
          T: '1767225600',
          F: 'M01',
          A: 'id:M01 sub:001 dlvrd:001 submit date:2601010000 done date:2601010000 stat:DELIVRD err:000 text:hi',
        }),
      );
      expect(parseDlrQuery(url.searchParams)).to.deep.equal({
        ok: true,
        reference: 'tok',
        state: 'delivered',
        carrierError: null,
        occurredAt: 1_767_225_600_000,
        foreignId: 'M01',
        carrierStatus: 'kannel:1',
      });
    });

    it('reads a failed receipt with its error code, and an SMSC rejection with its answer', () => {
      const failed = parseDlrQuery(
        new URL(
          kannelFills(buildDlrUrl('http://c', 'tok'), {
            d: '2',
            T: '1767225600',
            F: 'M02',
            A: 'id:M02 sub:001 dlvrd:000 stat:UNDELIV err:034 text:',
          }),
        ).searchParams,
      );
      expect(failed).to.deep.include({
        ok: true,
        state: 'undelivered',
        carrierError: 'UNDELIV err:034',
        carrierStatus: 'kannel:2 UNDELIV err:034',
      });
      const rejected = parseDlrQuery(
        new URL(
          kannelFills(buildDlrUrl('http://c', 'tok'), {
            d: '16',
            T: '1767225600',
            F: '',
            A: 'NACK/0x0000000b/Invalid Destination Address',
          }),
        ).searchParams,
      );
      expect(rejected).to.deep.include({
        ok: true,
        state: 'rejected',
        carrierError: 'NACK/0x0000000b/Invalid Destination Address',
        foreignId: null,
      });
    });

    it('refuses a report without token or with an unknown type; an unfilled %T leaves the time to the clock', () => {
      expect(parseDlrQuery(new URLSearchParams('type=1'))).to.deep.equal({ ok: false, reason: 'no ref' });
      expect(parseDlrQuery(new URLSearchParams('ref=t&type=%d')).ok).to.equal(false);
      expect(parseDlrQuery(new URLSearchParams('ref=t&type=64')).ok).to.equal(false);
      expect(parseDlrQuery(new URLSearchParams('ref=t&type=1&ts=%T'))).to.deep.include({ ok: true, occurredAt: null });
    });
  });

  describe('sendsms', () => {
    it('maps smsbox answers', () => {
      expect(classifySendsmsAnswer(202, '0: Accepted for delivery')).to.deep.equal({ kind: 'accepted' });
      expect(classifySendsmsAnswer(202, '3: Queued for later delivery')).to.deep.equal({ kind: 'accepted' });
      expect(classifySendsmsAnswer(403, 'Authorization failed for sendsms')).to.deep.equal({
        kind: 'rejected',
        carrierStatus: 'kannel:HTTP 403 Authorization failed for sendsms',
        message: 'Authorization failed for sendsms',
      });
      expect(classifySendsmsAnswer(400, '')).to.deep.equal({
        kind: 'rejected',
        carrierStatus: 'kannel:HTTP 400',
        message: 'smsbox answered 400',
      });
      expect(classifySendsmsAnswer(503, 'Temporal failure, try again later.')).to.deep.equal({
        kind: 'retry',
        reason: 'smsbox answered 503: Temporal failure, try again later.',
      });
    });

    it('builds the query: UTF-8 text, coding by encoding, forced smsc, default sender, dlr-mask and dlr-url', () => {
      const settings = parseKannelSettings({ sendsmsHost: 'k', username: 'gw', password: 'p&w', smsc: 'op-a', defaultSender: 'DEFAULT' });
      const gsm = new URLSearchParams(sendsmsQuery(settings, job(), 'http://c/kannel/dlr?ref=t&type=%d'));
      expect(Object.fromEntries(gsm)).to.deep.equal({
        username: 'gw',
        password: 'p&w',
        to: '+4915112345678',
        from: 'ACME',
        text: 'Hello & welcome 100%',
        charset: 'UTF-8',
        coding: '0',
        smsc: 'op-a',
        'dlr-mask': '31',
        'dlr-url': 'http://c/kannel/dlr?ref=t&type=%d',
      });
      const ucs2 = new URLSearchParams(sendsmsQuery(settings, job({ encoding: 'UCS-2', text: 'Привет 🙂', sender_id: null }), 'u'));
      expect(ucs2.get('coding')).to.equal('2');
      expect(ucs2.get('text')).to.equal('Привет 🙂');
      expect(ucs2.get('from')).to.equal('DEFAULT');
      const noSender = new URLSearchParams(
        sendsmsQuery(parseKannelSettings({ sendsmsHost: 'k', username: 'gw', password: '' }), job({ sender_id: null }), 'u'),
      );
      expect(noSender.has('from')).to.equal(false);
      expect(noSender.has('smsc')).to.equal(false);
    });
  });

  describe('against a fake sendsms', () => {
    let fake: FakeSendsms;
    let link: KannelLink | null = null;
    let reports: CarrierReport[];
    let tokens: number;

    beforeEach(async () => {
      fake = await startFakeSendsms();
      reports = [];
      tokens = 0;
    });

    afterEach(async () => {
      fake.release(202, '0: Accepted for delivery');
      await link?.stop();
      link = null;
      await fake.close();
    });

    async function started(extra: Record<string, unknown> = {}, onReport?: (report: CarrierReport) => Promise<void>): Promise<KannelLink> {
      link = createKannelLink(settingsFor(fake.port, extra), {
        logger: silentLogger,
        clock: { now: () => 1_000_000 },
        newToken: () => `tok${++tokens}`,
      });
      await link.start(
        onReport ??
          ((report) => {
            reports.push(report);
            return Promise.resolve();
          }),
      );
      return link;
    }

    it('an accepted submission has its token as the one reference and a dlr-url to the listener', async () => {
      const kannel = await started();
      expect(kannel.isLive()).to.equal(true);
      expect(await kannel.submit(job())).to.deep.equal({ kind: 'accepted', references: ['tok1'] });
      const query = fake.queries[0];
      expect(query?.get('password')).to.equal('p w');
      expect(query?.get('text')).to.equal('Hello & welcome 100%');
      expect(query?.get('dlr-url')).to.equal(buildDlrUrl(kannel.dlrBaseUrl(), 'tok1'));
      expect(kannel.dlrBaseUrl()).to.match(/^http:\/\/127\.0\.0\.1:[1-9]\d*$/);
      expect(kannel.stats()).to.deep.include({ bindsUp: 2, bindsTotal: 2, windowInUse: 0, windowSize: 2, submitsPerSecond: 1 });
    });

    it('4xx is rejected with kannel:HTTP <status> and the text of smsbox, 5xx is retried', async () => {
      const kannel = await started();
      fake.answer = () => ({ status: 400, body: 'Receiver number not accepted' });
      expect(await kannel.submit(job())).to.deep.equal({
        kind: 'rejected',
        carrierStatus: 'kannel:HTTP 400 Receiver number not accepted',
        message: 'Receiver number not accepted',
        acceptedReferences: [],
      });
      fake.answer = () => ({ status: 503, body: 'Temporal failure, try again later.' });
      expect(await kannel.submit(job())).to.deep.equal({
        kind: 'retry',
        delayMs: 250,
        reason: 'smsbox answered 503: Temporal failure, try again later.',
      });
    });

    it('no answer in time is an uncertain retry; smsbox down is a plain retry and not live', async () => {
      const kannel = await started({ requestTimeoutMs: 300 });
      fake.answer = () => 'hold';
      const timedOut = await kannel.submit(job());
      expect(timedOut).to.deep.include({ kind: 'retry', uncertain: true });
      await fake.close();
      const refused = await kannel.submit(job());
      expect(refused.kind).to.equal('retry');
      expect(refused).to.not.have.property('uncertain');
      expect(kannel.isLive()).to.equal(false);
      expect(kannel.stats().bindsUp).to.equal(0);
    });

    it('keeps at most KANNEL_MAX_CONCURRENT_REQUESTS requests at smsbox', async () => {
      const kannel = await started({ maxConcurrentRequests: 2, maxSubmitsPerSecond: 1000 });
      fake.answer = () => 'hold';
      const outcomes = Promise.all([1, 2, 3, 4, 5].map((n) => kannel.submit(job({ dispatch_id: `msg_${n}:0:0` }))));
      await until(() => fake.held.length === 2, 'two requests held');
      expect(kannel.stats().windowInUse).to.equal(2);
      while (fake.queries.length < 5) {
        fake.release(202, '0: Accepted for delivery');
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
      fake.release(202, '0: Accepted for delivery');
      expect((await outcomes).map((o) => o.kind)).to.deep.equal(['accepted', 'accepted', 'accepted', 'accepted', 'accepted']);
      expect(fake.maxConcurrent).to.be.at.most(2);
    });

    it('answers a report 200 only once onReport resolved, 503 when it failed, and ignores unreadable reports', async () => {
      let settle: ((ok: boolean) => void) | null = null;
      const kannel = await started(
        {},
        (report) =>
          new Promise<void>((resolve, reject) => {
            reports.push(report);
            settle = (ok) => {
              if (ok) resolve();
              else reject(new Error('not recorded'));
            };
          }),
      );
      const dlr = kannelFills(buildDlrUrl(kannel.dlrBaseUrl(), 'tok7'), { d: '1', T: '1767225600', F: 'M1', A: 'stat:DELIVRD err:000' });
      let answered: { status: number; body: string } | null = null;
      const first = callListener(dlr).then((a) => (answered = a));
      await until(() => settle !== null, 'onReport called');
      await new Promise((resolve) => setTimeout(resolve, 50));
      expect(answered).to.equal(null);
      (settle as unknown as (ok: boolean) => void)(true);
      await first;
      expect(answered).to.deep.include({ status: 200 });
      expect(reports[0]).to.deep.equal({
        reference: 'tok7',
        state: 'delivered',
        carrierError: null,
        occurredAt: 1_767_225_600_000,
        carrierStatus: 'kannel:1',
      });

      settle = null;
      const second = callListener(dlr);
      await until(() => settle !== null, 'onReport called again');
      (settle as unknown as (ok: boolean) => void)(false);
      expect((await second).status).to.equal(503);

      const unreadable = await callListener(`${kannel.dlrBaseUrl()}/kannel/dlr?ref=tok7&type=%d`);
      expect(unreadable.status).to.equal(202);
      expect(reports).to.have.length(2);
      expect((await callListener(`${kannel.dlrBaseUrl()}/other`)).status).to.equal(404);
    });

    it('after stop, submissions are given back and the listener is closed', async () => {
      const kannel = await started();
      const base = kannel.dlrBaseUrl();
      await kannel.stop();
      expect(await kannel.submit(job())).to.deep.include({ kind: 'retry' });
      expect(kannel.isLive()).to.equal(false);
      let refused = false;
      await callListener(`${base}/kannel/dlr?ref=t&type=1`).catch(() => (refused = true));
      expect(refused).to.equal(true);
      link = null;
    });
  });
});
