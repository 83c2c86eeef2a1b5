import { randomBytes } from 'node:crypto';
import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Pool, errors as undiciErrors } from 'undici';
import { systemClock } from '../../libraries/clock/clock.js';
import type { Logger } from '../../libraries/logger/logger.js';
import type { DispatchJob } from '../carrier-protocol.js';
import type { CarrierLink, CarrierReport, LinkStats, PartState, ReportHandler, SubmitOutcome } from '../connector/carrier-link.js';
import { DLR_TYPE, type KannelSettings } from './kannel-settings.js';
import { createSubmitPacer } from '../connector/submit-pacing.js';

/**
 * A carrier link through Kannel: each dispatch job is one `sendsms` request to smsbox (Kannel splits long text into
 * concatenated parts itself), carrying a `dlr-url` that points at the link's own HTTP listener with a fresh random
 * token. Kannel calls that URL for every delivery report of the message; the token is the carrier reference the
 * runtime correlates, so one job has one reference whatever the number of parts.
 */

export interface KannelLinkClock {
  now(): number;
}

export interface KannelLinkOptions {
  readonly clock?: KannelLinkClock;
  readonly logger: Logger;
  /** The correlation token of one submission (default: 16 random bytes, base64url). */
  readonly newToken?: () => string;
}

export interface KannelLink extends CarrierLink {
  /** Base URL Kannel calls with delivery reports (known once started: the listener's port may be chosen then). */
  dlrBaseUrl(): string;
}

/** Path of the delivery-report listener. */
export const DLR_PATH = '/kannel/dlr';

/**
 * The dlr-url of one submission. Kannel replaces `%d` (report type), `%T` (time of the report, epoch seconds),
 * `%A` (the SMSC's answer: the receipt text such as `id:… stat:DELIVRD err:000 …`, or the reason of a rejection)
 * and `%F` (the SMSC's message id of the part), each URL-encoded.
 */
export function buildDlrUrl(baseUrl: string, token: string): string {
  return `${baseUrl}${DLR_PATH}?ref=${encodeURIComponent(token)}&type=%d&ts=%T&fid=%F&answer=%A`;
}

/** Kannel's report type (`%d`) → the part's state. */
export function stateOfDlrType(type: number): PartState | null {
  switch (type) {
    case DLR_TYPE.delivered:
      return 'delivered';
    case DLR_TYPE.failed:
      return 'undelivered';
    case DLR_TYPE.buffered:
      return 'enroute';
    case DLR_TYPE.smscSubmit:
      return 'accepted';
    case DLR_TYPE.smscReject:
      return 'rejected';
    default:
      return null;
  }
}

export type ParsedDlr =
  | {
      readonly ok: true;
      readonly reference: string;
      readonly state: PartState;
      readonly carrierError: string | null;
      readonly occurredAt: number | null;
      readonly foreignId: string | null;
      /** Kannel's words for it, kept as the recipient's carrier_status: `kannel:<type>` and the SMSC's error. */
      readonly carrierStatus: string;
    }
  | { readonly ok: false; readonly reason: string };

const RECEIPT_ERR = /(?:^|\s)err:([A-Za-z0-9]+)/i;
const RECEIPT_STAT = /(?:^|\s)stat:([A-Za-z]+)/i;

/** Reads the query of a delivery-report call (what `buildDlrUrl` asked Kannel to fill in). */
export function parseDlrQuery(query: URLSearchParams): ParsedDlr {
  const reference = query.get('ref') ?? '';
  if (reference === '') return { ok: false, reason: 'no ref' };
  const typeText = query.get('type') ?? '';
  const type = /^\d{1,3}$/.test(typeText) ? Number(typeText) : NaN;
  const state = stateOfDlrType(type);
  if (state === null) return { ok: false, reason: `unknown report type ${JSON.stringify(typeText)}` };
  const answer = (query.get('answer') ?? '').trim();
  const ts = query.get('ts') ?? '';
  const occurredAt = /^\d{9,11}$/.test(ts) ? Number(ts) * 1000 : null;
  const foreign = (query.get('fid') ?? '').trim();
  const carrierError = carrierErrorOf(state, answer);
  const carrierStatus = `kannel:${type}${carrierError === null ? '' : ` ${carrierError}`}`.slice(0, 100);
  return { ok: true, reference, state, carrierError, occurredAt, foreignId: foreign === '' ? null : foreign, carrierStatus };
}

/**
 * The carrier's error of a report: a receipt's `err:` code when it is not zero (or when the part failed); the SMSC's
 * answer text for a rejection (e.g. `NACK/0x0000000b/Invalid Destination Address`); null otherwise.
 */
function carrierErrorOf(state: PartState, answer: string): string | null {
  const err = RECEIPT_ERR.exec(answer)?.[1] ?? null;
  const failed = state === 'undelivered' || state === 'rejected' || state === 'expired';
  if (err !== null) {
    if (!failed && /^0+$/.test(err)) return null;
    const stat = RECEIPT_STAT.exec(answer)?.[1];
    return stat === undefined ? err : `${stat.toUpperCase()} err:${err}`;
  }
  if (failed && answer !== '') return answer.slice(0, 160);
  return null;
}

export type SendsmsAnswer =
  | { readonly kind: 'accepted' }
  | { readonly kind: 'rejected'; readonly carrierStatus: string; readonly message: string }
  | { readonly kind: 'retry'; readonly reason: string };

/**
 * smsbox's answer to sendsms: 202 `0: Accepted for delivery` or `3: Queued for later delivery` (any 2xx) → taken;
 * 4xx (bad number, authorisation, missing text, sender refused) → refused for good, `kannel:HTTP <status> <smsbox's text>`;
 * 5xx (bearerbox unreachable, queue full, `Sending failed`) → not taken, try again later.
 */
export function classifySendsmsAnswer(status: number, body: string): SendsmsAnswer {
  const text = body.trim().slice(0, 300);
  if (status >= 200 && status < 300) return { kind: 'accepted' };
  if (status >= 400 && status < 500) {
    return {
      kind: 'rejected',
      carrierStatus: `kannel:HTTP ${status}${text === '' ? '' : ` ${text}`}`.slice(0, 100),
      message: text === '' ? `smsbox answered ${status}` : text,
    };
  }
  return { kind: 'retry', reason: `smsbox answered ${status}${text === '' ? '' : `: ${text}`}` };
}

/** The sendsms query of one job (GET parameters; the text in UTF-8, coding 0 for GSM-7 and 2 for UCS-2). */
export function sendsmsQuery(settings: KannelSettings, job: DispatchJob, dlrUrl: string): string {
  const params: [string, string][] = [
    ['username', settings.sendsms.username],
    ['password', settings.sendsms.password],
    ['to', job.to],
  ];
  const sender = job.sender_id ?? settings.defaultSender;
  if (sender !== null) params.push(['from', sender]);
  params.push(['text', job.text], ['charset', 'UTF-8'], ['coding', job.encoding === 'UCS-2' ? '2' : '0']);
  if (settings.smsc !== null) params.push(['smsc', settings.smsc]);
  params.push(['dlr-mask', String(settings.dlrMask)], ['dlr-url', dlrUrl]);
  // percent-encoding throughout (smsbox decodes `+` too, but %20 is unambiguous)
  return params.map(([key, value]) => `${key}=${encodeURIComponent(value)}`).join('&');
}

/** Connection errors raised before the request left: smsbox cannot have taken the message. */
const NOT_SENT_CODES = new Set(['ECONNREFUSED', 'ENOTFOUND', 'EAI_AGAIN', 'EHOSTUNREACH', 'ENETUNREACH', 'UND_ERR_CONNECT_TIMEOUT']);

function errorCode(error: unknown): string {
  const seen = new Set<unknown>();
  let current: unknown = error;
  while (typeof current === 'object' && current !== null && !seen.has(current)) {
    seen.add(current);
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string' && code !== 'UND_ERR_SOCKET') return code;
    current = (current as { cause?: unknown }).cause;
  }
  return '';
}

export function createKannelLink(settings: KannelSettings, options: KannelLinkOptions): KannelLink {
  const clock = options.clock ?? systemClock;
  const log = options.logger.child({ carrier_link: 'kannel' });
  const newToken = options.newToken ?? (() => randomBytes(16).toString('base64url'));
  const origin = `http://${settings.sendsms.host.includes(':') ? `[${settings.sendsms.host}]` : settings.sendsms.host}:${settings.sendsms.port}`;
  const pool = new Pool(origin, {
    connections: settings.maxConcurrentRequests,
    pipelining: 1,
    headersTimeout: settings.requestTimeoutMs,
    bodyTimeout: settings.requestTimeoutMs,
    connectTimeout: Math.min(settings.requestTimeoutMs, 5_000),
  });
  const waitForRate = createSubmitPacer(settings.maxSubmitsPerSecond);

  let onReport: ReportHandler | null = null;
  let server: Server | null = null;
  let baseUrl = settings.dlrListener.publicUrl;
  let started = false;
  let stopping = false;
  /** Whether smsbox answered the last request (any status), i.e. it can take submissions. */
  let reachable = false;
  let inFlight = 0;
  const answeredAt: number[] = [];
  const submissions = new Set<Promise<SubmitOutcome>>();
  const reportsInHand = new Set<Promise<void>>();

  function noteAnswered(): void {
    const now = clock.now();
    answeredAt.push(now);
    while (answeredAt.length > 0 && (answeredAt[0] ?? 0) <= now - 1_000) answeredAt.shift();
  }

  async function send(job: DispatchJob): Promise<SubmitOutcome> {
    const token = newToken();
    const query = sendsmsQuery(settings, job, buildDlrUrl(baseUrl, token));
    await waitForRate();
    if (stopping) return { kind: 'retry', delayMs: settings.retryDelayMs, reason: 'Kannel link stopping' };
    inFlight++;
    let sent = false;
    try {
      const response = await pool.request({
        method: 'GET',
        path: `${settings.sendsms.path}?${query}`,
        headersTimeout: settings.requestTimeoutMs,
        bodyTimeout: settings.requestTimeoutMs,
        signal: AbortSignal.timeout(settings.requestTimeoutMs),
      });
      sent = true;
      const body = await response.body.text();
      reachable = true;
      noteAnswered();
      const answer = classifySendsmsAnswer(response.statusCode, body);
      switch (answer.kind) {
        case 'accepted':
          log.debug({ dispatch_id: job.dispatch_id, reference: token, answer: body.trim() }, 'smsbox took the message');
          return { kind: 'accepted', references: [token] };
        case 'rejected':
          log.info({ dispatch_id: job.dispatch_id, status: answer.carrierStatus, answer: answer.message }, 'smsbox refused the message');
          return { kind: 'rejected', carrierStatus: answer.carrierStatus, message: answer.message, acceptedReferences: [] };
        case 'retry':
          log.warn({ dispatch_id: job.dispatch_id, reason: answer.reason }, 'smsbox did not take the message');
          return { kind: 'retry', delayMs: settings.retryDelayMs, reason: answer.reason };
      }
    } catch (error) {
      const code = errorCode(error);
      const notSent = !sent && NOT_SENT_CODES.has(code);
      if (notSent) reachable = false;
      const timedOut =
        error instanceof undiciErrors.HeadersTimeoutError ||
        error instanceof undiciErrors.BodyTimeoutError ||
        (error as Error).name === 'TimeoutError';
      const reason = timedOut
        ? `no answer from smsbox within ${settings.requestTimeoutMs} ms`
        : `sendsms failed: ${code === '' ? (error as Error).message : code}`;
      log.warn({ dispatch_id: job.dispatch_id, reason }, 'sendsms request failed');
      // once the request may have reached smsbox, the message may be queued there: sending again may deliver it twice
      return notSent
        ? { kind: 'retry', delayMs: settings.retryDelayMs, reason }
        : { kind: 'retry', delayMs: settings.retryDelayMs, reason, uncertain: true };
    } finally {
      inFlight--;
    }
  }

  function answer(res: ServerResponse, status: number, text: string): void {
    res.writeHead(status, { 'content-type': 'text/plain; charset=utf-8', 'content-length': Buffer.byteLength(text) });
    res.end(text);
  }

  async function handleReport(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://listener');
    if (url.pathname !== DLR_PATH || (req.method !== 'GET' && req.method !== 'POST')) {
      answer(res, 404, 'not found');
      return;
    }
    const parsed = parseDlrQuery(url.searchParams);
    if (!parsed.ok) {
      log.warn({ url: req.url, reason: parsed.reason }, 'unreadable delivery report from Kannel ignored');
      // a 2xx: Kannel would only call again with the same unreadable report
      answer(res, 202, `ignored: ${parsed.reason}`);
      return;
    }
    const handler = onReport;
    if (handler === null) {
      answer(res, 503, 'not ready');
      return;
    }
    const report: CarrierReport = {
      reference: parsed.reference,
      state: parsed.state,
      carrierError: parsed.carrierError,
      occurredAt: parsed.occurredAt ?? clock.now(),
      carrierStatus: parsed.carrierStatus,
    };
    const task = handler(report);
    reportsInHand.add(task);
    try {
      await task;
      answer(res, 200, 'ok');
    } catch (error) {
      log.warn(
        { err: error, reference: parsed.reference, state: parsed.state },
        'delivery report not recorded; Kannel is asked to send it again',
      );
      answer(res, 503, 'try again');
    } finally {
      reportsInHand.delete(task);
    }
  }

  async function probe(): Promise<void> {
    try {
      const response = await pool.request({
        method: 'GET',
        path: settings.sendsms.path,
        signal: AbortSignal.timeout(Math.min(settings.requestTimeoutMs, 5_000)),
      });
      await response.body.dump();
      reachable = true;
    } catch (error) {
      reachable = false;
      log.warn({ reason: errorCode(error) || (error as Error).message, origin }, 'smsbox not reachable yet');
    }
  }

  return {
    kind: 'kannel',

    async start(handler: ReportHandler): Promise<void> {
      if (started) return;
      started = true;
      onReport = handler;
      const listener = createServer((req, res) => {
        handleReport(req, res).catch((error: unknown) => {
          log.error({ err: error }, 'delivery report listener failed');
          if (!res.headersSent) answer(res, 500, 'error');
        });
      });
      server = listener;
      await new Promise<void>((resolve, reject) => {
        listener.once('error', reject);
        listener.listen(settings.dlrListener.port, settings.dlrListener.host, () => {
          listener.off('error', reject);
          resolve();
        });
      });
      const port = (listener.address() as AddressInfo).port;
      if (settings.dlrListener.port === 0) baseUrl = baseUrl.replace(/:0$/, `:${port}`);
      log.info({ listener: `${settings.dlrListener.host}:${port}`, dlr_base_url: baseUrl, smsbox: origin }, 'Kannel link started');
      await probe();
    },

    submit(job: DispatchJob): Promise<SubmitOutcome> {
      if (!started || stopping)
        return Promise.resolve({
          kind: 'retry',
          delayMs: settings.retryDelayMs,
          reason: stopping ? 'Kannel link stopping' : 'Kannel link not started',
        });
      const task = send(job);
      submissions.add(task);
      const forget = (): void => {
        submissions.delete(task);
      };
      task.then(forget, forget);
      return task;
    },

    isLive(): boolean {
      return started && !stopping && reachable;
    },

    stats(): LinkStats {
      const now = clock.now();
      const live = started && !stopping && reachable;
      return {
        bindsUp: live ? settings.maxConcurrentRequests : 0,
        bindsTotal: settings.maxConcurrentRequests,
        // requests beyond the pool's connections wait in the pool, not at smsbox
        windowInUse: Math.min(inFlight, settings.maxConcurrentRequests),
        windowSize: settings.maxConcurrentRequests,
        submitsPerSecond: answeredAt.filter((at) => at > now - 1_000).length,
      };
    },

    dlrBaseUrl(): string {
      return baseUrl;
    },

    async stop(): Promise<void> {
      if (stopping) return;
      stopping = true;
      const outstanding = Promise.allSettled([...submissions, ...reportsInHand]);
      let timer: NodeJS.Timeout | undefined;
      await Promise.race([outstanding, new Promise<void>((resolve) => (timer = setTimeout(resolve, settings.stopTimeoutMs)))]);
      clearTimeout(timer);
      onReport = null;
      const listener = server;
      server = null;
      if (listener !== null) {
        await new Promise<void>((resolve) => {
          listener.close(() => {
            resolve();
          });
          listener.closeAllConnections();
        });
      }
      await pool.destroy();
      log.info('Kannel link stopped');
    },
  };
}
