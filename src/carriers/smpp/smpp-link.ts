import pRetry from 'p-retry';
import smpp, { type PDU, type PduFields, type Session } from 'smpp';
import { systemClock } from '../../libraries/clock/clock.js';
import type { DispatchJob } from '../carrier-protocol.js';
import type { CarrierLink, LinkStats, ReportHandler, SubmitOutcome } from '../connector/carrier-link.js';
import { destinationAddressFor, sourceAddressFor, type SmppAccount } from './smpp-account.js';
import { createReferenceCounter, encodeMessage, EncodingError, type EncodedPart } from './smpp-encoding.js';
import { captureRawPdus, keepGsmCoders, messageBodyOf } from './smpp-pdu.js';
import { classifyStatus, commandStatusName, ESME_ROK, ESME_RX_T_APPN, readInbound } from './smpp-receipts.js';
import { createSubmitPacer, monotonic, sleep } from '../connector/submit-pacing.js';

/**
 * The SMPP 3.4 implementation of `CarrierLink`, on the `smpp` package.
 *
 * Binds: SMPP_BINDS binds, each a transceiver session, or a transmitter and a receiver session
 * (SMPP_BIND_MODE=transmitter_receiver). Each session connects and binds on its own, sends enquire_link every
 * interval and is closed when one goes unanswered within the timeout; a lost session reconnects with capped
 * exponential back-off (p-retry). A bind is live while its transmitting session is bound.
 *
 * Submitting: a job's parts go out in order, on one live bind with room in its window when it can (a part whose
 * bind drops goes out on another). A token bucket shared by all binds keeps the account within its submits per
 * second. For each part:
 * - status 0: accepted, its message_id is the part's reference;
 * - ESME_RTHROTTLED / ESME_RMSGQFUL: the link waits (doubling from 100 ms, at most 2 s) and submits it again, up to
 *   SMPP_THROTTLE_ATTEMPTS submissions, then gives the job back (`retry`); never `rejected`;
 * - ESME_RSYSERR, ESME_RINVBNDSTS, ESME_RX_T_APPN: `retry`;
 * - any other status: `rejected` with the status name, the parts accepted before it in `acceptedReferences`;
 * - no submit_sm_resp within SMPP_SUBMIT_TIMEOUT_MS, or the bind lost before answering: the part is submitted again
 *   on a live bind, up to SMPP_SUBMIT_ATTEMPTS submissions, then `retry`. The centre may have taken the first copy:
 *   the handset can receive a part twice. SMPP gives no way to tell.
 * No live bind when a job arrives: `retry` at once. A job handed back with `retry` after some of its parts were
 * accepted would be submitted whole again (the outcome carries no partial references). Both cases are marked
 * `uncertain` (`isUncertainRetry`).
 *
 * Receiving: a deliver_sm / data_sm with the receipt bit goes to `onReport`; its deliver_sm_resp is sent only once
 * that promise resolves, and with ESME_RX_T_APPN (temporary application error: the centre sends it again) when it
 * rejects. A mobile-originated message is acknowledged, counted and reported as an event; it never drops the bind.
 */

captureRawPdus();
keepGsmCoders();

/**
 * A `retry` marked uncertain may follow a hand-over the centre took: a submit_sm unanswered (timeout, bind lost) or
 * earlier parts of the message accepted. Sending the job again can deliver (part of) it twice.
 */
export function isUncertainRetry(outcome: SubmitOutcome): boolean {
  return outcome.kind === 'retry' && outcome.uncertain === true;
}

export interface SmppLinkClock {
  now(): number;
}

export type SmppLinkEvent =
  | { readonly type: 'bind-up'; readonly bind: number; readonly session: SessionRole }
  | { readonly type: 'bind-down'; readonly bind: number; readonly session: SessionRole; readonly reason: string }
  | {
      readonly type: 'bind-failed';
      readonly bind: number;
      readonly session: SessionRole;
      readonly reason: string;
      readonly attempt: number;
    }
  | { readonly type: 'enquire-link-timeout'; readonly bind: number; readonly session: SessionRole }
  | { readonly type: 'resubmit'; readonly dispatchId: string; readonly part: number; readonly reason: string }
  | { readonly type: 'throttled'; readonly dispatchId: string; readonly part: number; readonly status: string }
  | { readonly type: 'mobile-originated'; readonly from: string; readonly to: string; readonly text: string }
  | { readonly type: 'unreadable-receipt'; readonly reason: string }
  | { readonly type: 'report-failed'; readonly reference: string; readonly reason: string };

export interface SmppLinkOptions {
  readonly clock?: SmppLinkClock;
  readonly onEvent?: (event: SmppLinkEvent) => void;
}

export interface SmppLink extends CarrierLink {
  /** Mobile-originated messages received (acknowledged, not reported). */
  mobileOriginatedCount(): number;
}

export type SessionRole = 'transceiver' | 'transmitter' | 'receiver';

type SubmitResult =
  | { readonly kind: 'response'; readonly status: number; readonly messageId: string }
  | { readonly kind: 'timeout' }
  | { readonly kind: 'lost'; readonly reason: string };

interface PendingSubmit {
  readonly timer: NodeJS.Timeout;
  readonly resolve: (result: SubmitResult) => void;
}

/** Sessions whose socket is corked until the end of the current turn of the event loop. */
const corkedForTurn = new WeakSet<Session>();

/**
 * Gathers the PDUs a turn of the event loop writes to a session into one system call: the socket is corked at the
 * first and uncorked once the turn's callbacks are done (the submissions whose timers fired together, the answers to
 * reports whose receipts were stored together), in the same order; a PDU waits at most until the end of the turn.
 */
function writeInTurn(session: Session): void {
  const { socket } = session;
  if (corkedForTurn.has(session) || socket.destroyed) return;
  corkedForTurn.add(session);
  socket.cork();
  setImmediate(() => {
    corkedForTurn.delete(session);
    socket.uncork();
  });
}

const THROTTLE_BACKOFF_INITIAL_MS = 100;
const THROTTLE_BACKOFF_MAX_MS = 2_000;
const UNBIND_TIMEOUT_MS = 1_000;

class SmppSession {
  session: Session | null = null;
  bound = false;
  readonly pending = new Map<number, PendingSubmit>();
  private enquireTimer: NodeJS.Timeout | null = null;
  private awaitingEnquire: NodeJS.Timeout | null = null;
  private readonly abort = new AbortController();
  private loop: Promise<void> | null = null;

  constructor(
    private readonly link: LinkContext,
    readonly bind: number,
    readonly role: SessionRole,
  ) {}

  private stopped(): boolean {
    return this.abort.signal.aborted;
  }

  get outstanding(): number {
    return this.pending.size;
  }

  /** Starts the connect–bind–reconnect loop; resolves after the first attempt, bound or not. */
  start(): Promise<void> {
    let firstDone: () => void = () => undefined;
    const first = new Promise<void>((resolve) => {
      firstDone = resolve;
    });
    this.loop = this.run(firstDone);
    return first;
  }

  private async run(firstDone: () => void): Promise<void> {
    const account = this.link.account;
    let attempt = 0;
    while (!this.abort.signal.aborted) {
      try {
        const { ended } = await pRetry(
          async () => {
            attempt++;
            try {
              return await this.connectAndBind();
            } finally {
              firstDone();
            }
          },
          {
            retries: Number.POSITIVE_INFINITY,
            factor: 2,
            minTimeout: account.reconnectInitialMs,
            maxTimeout: account.reconnectMaxMs,
            randomize: true,
            signal: this.abort.signal,
            onFailedAttempt: ({ error }) => {
              this.link.emit({ type: 'bind-failed', bind: this.bind, session: this.role, reason: error.message, attempt });
            },
          },
        );
        attempt = 0;
        const reason = await ended;
        this.link.emit({ type: 'bind-down', bind: this.bind, session: this.role, reason });
        if (!this.stopped()) await sleep(account.reconnectInitialMs);
      } catch {
        // aborted: the link is stopping
        return;
      }
    }
  }

  /** Connects and binds; resolves with a promise of the session's end (its reason). */
  private connectAndBind(): Promise<{ readonly ended: Promise<string> }> {
    const account = this.link.account;
    return new Promise<{ readonly ended: Promise<string> }>((resolve, reject) => {
      if (this.abort.signal.aborted) {
        reject(new Error('stopping'));
        return;
      }
      let settled = false;
      const fail = (error: Error, session: Session): void => {
        if (settled) return;
        settled = true;
        session.destroy();
        reject(error);
      };
      const options = {
        host: account.host,
        port: account.port,
        ...(account.tls ? { tls: true, ...(account.tlsCa === null ? {} : { ca: account.tlsCa }) } : {}),
      };
      const session = smpp.connect(options, () => {
        const command =
          this.role === 'transceiver' ? 'bind_transceiver' : this.role === 'transmitter' ? 'bind_transmitter' : 'bind_receiver';
        const bindPdu = new smpp.PDU(command, {
          system_id: account.systemId,
          password: account.password,
          system_type: account.systemType,
          interface_version: 0x34,
        });
        session.send(bindPdu, (resp) => {
          clearTimeout(bindTimer);
          if (settled) return;
          if (resp.command_status !== ESME_ROK) {
            fail(new Error(`bind refused: ${commandStatusName(resp.command_status)}`), session);
            return;
          }
          settled = true;
          this.session = session;
          this.bound = true;
          this.startEnquireLinks(session);
          this.link.emit({ type: 'bind-up', bind: this.bind, session: this.role });
          this.link.bindsChanged();
          resolve({ ended });
        });
      });
      // connecting (TCP, TLS) and binding together get the enquire_link timeout
      const bindTimer = setTimeout(() => {
        fail(new Error('no bind response in time'), session);
      }, account.enquireLinkTimeoutMs);
      const ended = new Promise<string>((resolveEnd) => {
        let reason = 'connection closed';
        session.on('error', (error) => {
          reason = error.message;
          fail(error, session);
          // a PDU the package cannot parse leaves its reader stopped: the session is unusable
          session.destroy();
        });
        session.on('close', () => {
          clearTimeout(bindTimer);
          fail(new Error(`connection closed: ${reason}`), session);
          if (this.session === session) this.onSessionEnd();
          resolveEnd(reason);
        });
      });
      session.on('pdu', (pdu) => {
        this.onPdu(session, pdu);
      });
      const onAbort = (): void => {
        fail(new Error('stopping'), session);
      };
      this.abort.signal.addEventListener('abort', onAbort, { once: true });
      void ended.then(() => {
        this.abort.signal.removeEventListener('abort', onAbort);
      });
    });
  }

  private startEnquireLinks(session: Session): void {
    const account = this.link.account;
    this.enquireTimer = setInterval(() => {
      if (this.awaitingEnquire !== null) return;
      const timer = setTimeout(() => {
        this.link.emit({ type: 'enquire-link-timeout', bind: this.bind, session: this.role });
        session.destroy();
      }, account.enquireLinkTimeoutMs);
      this.awaitingEnquire = timer;
      const sent = session.send(new smpp.PDU('enquire_link', {}), () => {
        clearTimeout(timer);
        if (this.awaitingEnquire === timer) this.awaitingEnquire = null;
      });
      if (!sent) session.destroy();
    }, account.enquireLinkIntervalMs);
  }

  private onSessionEnd(): void {
    this.bound = false;
    this.session = null;
    if (this.enquireTimer !== null) clearInterval(this.enquireTimer);
    if (this.awaitingEnquire !== null) clearTimeout(this.awaitingEnquire);
    this.enquireTimer = null;
    this.awaitingEnquire = null;
    for (const [sequence, pending] of this.pending) {
      clearTimeout(pending.timer);
      this.pending.delete(sequence);
      pending.resolve({ kind: 'lost', reason: 'bind lost before the answer' });
    }
    this.link.bindsChanged();
  }

  private onPdu(session: Session, pdu: PDU): void {
    switch (pdu.command) {
      case 'enquire_link':
        session.send(pdu.response());
        return;
      case 'unbind':
        this.bound = false;
        this.link.bindsChanged();
        session.send(pdu.response(), undefined, () => {
          session.close();
        });
        return;
      case 'deliver_sm':
      case 'data_sm':
        this.link.onInbound(session, pdu);
        return;
      case 'generic_nack':
        // answers a request of ours by sequence number: the package calls its response callback
        return;
      default:
        if (!pdu.isResponse()) session.send(pdu.response({ command_status: 0x03 })); // ESME_RINVCMDID
    }
  }

  /** Sends one submit_sm; resolves with its answer, a timeout, or the bind's loss. */
  submit(fields: PduFields): Promise<SubmitResult> {
    const session = this.session;
    if (session === null || !this.bound) return Promise.resolve({ kind: 'lost', reason: 'bind not live' });
    return new Promise<SubmitResult>((resolve) => {
      const pdu = new smpp.PDU('submit_sm', fields);
      let sequence = -1;
      writeInTurn(session);
      const sent = session.send(pdu, (resp) => {
        const pending = this.pending.get(sequence);
        if (pending === undefined) return; // answered after its timeout: already submitted again or given back
        clearTimeout(pending.timer);
        this.pending.delete(sequence);
        this.link.answered();
        resolve({ kind: 'response', status: resp.command_status, messageId: resp.message_id ?? '' });
      });
      if (!sent) {
        resolve({ kind: 'lost', reason: 'bind not writable' });
        return;
      }
      sequence = pdu.sequence_number;
      const timer = setTimeout(() => {
        if (this.pending.delete(sequence)) {
          this.link.bindsChanged();
          resolve({ kind: 'timeout' });
        }
      }, this.link.account.submitTimeoutMs);
      this.pending.set(sequence, { timer, resolve });
    });
  }

  /** Unbinds (bounded wait for unbind_resp) and closes; stops reconnecting. */
  async stop(): Promise<void> {
    this.abort.abort();
    const session = this.session;
    if (session !== null && this.bound) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(resolve, UNBIND_TIMEOUT_MS);
        const sent = session.send(new smpp.PDU('unbind', {}), () => {
          clearTimeout(timer);
          resolve();
        });
        if (!sent) {
          clearTimeout(timer);
          resolve();
        }
      });
    }
    if (session !== null) {
      await new Promise<void>((resolve) => {
        const timer = setTimeout(() => {
          session.destroy();
          resolve();
        }, UNBIND_TIMEOUT_MS);
        session.close(() => {
          clearTimeout(timer);
          resolve();
        });
      });
    }
    await this.loop;
  }
}

interface LinkContext {
  readonly account: SmppAccount;
  emit(event: SmppLinkEvent): void;
  bindsChanged(): void;
  answered(): void;
  onInbound(session: Session, pdu: PDU): void;
}

interface Bind {
  readonly index: number;
  readonly transmitter: SmppSession;
  readonly receiver: SmppSession | null;
}

export function createSmppLink(account: SmppAccount, options: SmppLinkOptions = {}): SmppLink {
  const clock = options.clock ?? systemClock;
  const emit = options.onEvent ?? ((): void => undefined);
  const nextReference = createReferenceCounter(Math.floor(Math.random() * 256));
  const takeToken = createSubmitPacer(account.maxSubmitsPerSecond);
  const answeredAt: number[] = [];
  let waiters: (() => void)[] = [];
  let onReport: ReportHandler | null = null;
  let stopping = false;
  let moCount = 0;
  let rotation = 0;

  const wakeWaiters = (): void => {
    const ready = waiters;
    waiters = [];
    for (const wake of ready) wake();
  };

  const context: LinkContext = {
    account,
    emit,
    bindsChanged: wakeWaiters,
    answered: () => {
      answeredAt.push(clock.now());
      if (answeredAt.length > 10_000) answeredAt.splice(0, answeredAt.length - 10_000);
      wakeWaiters();
    },
    onInbound: (session, pdu) => {
      handleInbound(session, pdu);
    },
  };

  const binds: Bind[] = Array.from({ length: account.binds }, (_, index) =>
    account.bindMode === 'transceiver'
      ? { index, transmitter: new SmppSession(context, index, 'transceiver'), receiver: null }
      : { index, transmitter: new SmppSession(context, index, 'transmitter'), receiver: new SmppSession(context, index, 'receiver') },
  );
  const sessions = binds.flatMap((bind) => (bind.receiver === null ? [bind.transmitter] : [bind.transmitter, bind.receiver]));

  const isBindLive = (bind: Bind): boolean => bind.transmitter.bound;
  const liveBinds = (): Bind[] => binds.filter(isBindLive);
  const hasRoom = (bind: Bind): boolean => bind.transmitter.outstanding < account.window;

  function respond(session: Session, pdu: PDU, status: number): void {
    writeInTurn(session);
    session.send(pdu.response(status === ESME_ROK ? { message_id: '' } : { command_status: status }));
  }

  function handleInbound(session: Session, pdu: PDU): void {
    const body = messageBodyOf(pdu);
    if (body === null) {
      emit({ type: 'unreadable-receipt', reason: `${pdu.command} without a readable body` });
      respond(session, pdu, ESME_ROK);
      return;
    }
    const inbound = readInbound(body, { from: pdu.source_addr ?? '', to: pdu.destination_addr ?? '' }, clock.now());
    if (inbound.kind === 'mobile-originated') {
      moCount++;
      emit({ type: 'mobile-originated', from: inbound.from, to: inbound.to, text: inbound.text });
      respond(session, pdu, ESME_ROK);
      return;
    }
    if (inbound.kind === 'unreadable-receipt') {
      emit({ type: 'unreadable-receipt', reason: inbound.reason });
      respond(session, pdu, ESME_ROK);
      return;
    }
    const handler = onReport;
    if (handler === null) {
      respond(session, pdu, ESME_RX_T_APPN);
      return;
    }
    const report = inbound.report;
    handler(report).then(
      () => {
        respond(session, pdu, ESME_ROK);
      },
      (error: unknown) => {
        emit({ type: 'report-failed', reference: report.reference, reason: error instanceof Error ? error.message : String(error) });
        respond(session, pdu, ESME_RX_T_APPN);
      },
    );
  }

  /** A live bind with room, the preferred one first; waits for room up to `deadline`; null when none. */
  async function bindWithRoom(preferred: Bind | null, deadline: number): Promise<Bind | null> {
    for (;;) {
      if (stopping) return null;
      if (preferred !== null && isBindLive(preferred) && hasRoom(preferred)) return preferred;
      const candidates = liveBinds().filter(hasRoom);
      if (candidates.length > 0) {
        // the least busy; ties taken in turn, so idle binds share the traffic
        const start = rotation++ % candidates.length;
        const ordered = [...candidates.slice(start), ...candidates.slice(0, start)];
        return ordered.reduce((best, bind) => (bind.transmitter.outstanding < best.transmitter.outstanding ? bind : best));
      }
      const remaining = deadline - monotonic();
      if (remaining <= 0) return null;
      await new Promise<void>((resolve) => {
        const timer = setTimeout(done, Math.min(remaining, 200));
        function done(): void {
          clearTimeout(timer);
          resolve();
        }
        waiters.push(done);
      });
    }
  }

  function retry(reason: string, uncertain = false): Extract<SubmitOutcome, { kind: 'retry' }> {
    return { kind: 'retry', delayMs: account.retryDelayMs, reason, ...(uncertain ? { uncertain: true } : {}) };
  }

  async function submit(job: DispatchJob): Promise<SubmitOutcome> {
    if (stopping) return retry('the link is stopping');
    if (liveBinds().length === 0) return retry('no live bind');
    let encoded;
    try {
      const reference = nextReference();
      encoded = encodeMessage(job.text, job.encoding, account.longMessageMethod, reference);
    } catch (error) {
      if (error instanceof EncodingError)
        return { kind: 'rejected', carrierStatus: 'ENCODING', message: error.message, acceptedReferences: [] };
      throw error;
    }
    const source = sourceAddressFor(job.sender_id, account.sourceAddress);
    const destination = destinationAddressFor(job.to);
    const references: string[] = [];
    let bind: Bind | null = null;
    for (const [index, part] of encoded.parts.entries()) {
      const fields = submitFields(part, encoded.dataCoding, source, destination);
      const outcome = await submitPart(job.dispatch_id, index, fields, bind, references);
      if (outcome.kind !== 'accepted') return outcome;
      bind = outcome.bind;
      references.push(outcome.reference);
    }
    return { kind: 'accepted', references };
  }

  function submitFields(
    part: EncodedPart,
    dataCoding: number,
    source: { addr: string; ton: number; npi: number },
    destination: { addr: string; ton: number; npi: number },
  ): PduFields {
    const fields: PduFields = {
      source_addr_ton: source.ton,
      source_addr_npi: source.npi,
      source_addr: source.addr,
      dest_addr_ton: destination.ton,
      dest_addr_npi: destination.npi,
      destination_addr: destination.addr,
      esm_class: part.esmClass,
      registered_delivery: account.registeredDelivery,
      data_coding: dataCoding,
      short_message: part.shortMessage,
    };
    if (part.sar !== null) {
      fields.sar_msg_ref_num = part.sar.reference;
      fields.sar_total_segments = part.sar.total;
      fields.sar_segment_seqnum = part.sar.seq;
    }
    if (part.messagePayload !== null) fields.message_payload = part.messagePayload;
    return fields;
  }

  type PartOutcome =
    { readonly kind: 'accepted'; readonly reference: string; readonly bind: Bind } | Exclude<SubmitOutcome, { kind: 'accepted' }>;

  async function submitPart(
    dispatchId: string,
    index: number,
    fields: PduFields,
    preferred: Bind | null,
    accepted: readonly string[],
  ): Promise<PartOutcome> {
    let attempts = 0;
    let throttles = 0;
    // the centre may hold some of the message: earlier parts accepted, or a copy of this one unanswered
    let uncertain = accepted.length > 0;
    let bindPreference = preferred;
    for (;;) {
      // the first part goes back at once without a bind; a later one waits a while, its earlier parts are out
      const deadline = monotonic() + (accepted.length === 0 ? account.submitTimeoutMs : account.submitTimeoutMs * account.submitAttempts);
      await takeToken();
      // nothing awaited between choosing the bind and sending: the window is never overrun
      const bind = await bindWithRoom(bindPreference, deadline);
      if (bind === null) return retry(stopping ? 'the link is stopping' : 'no live bind with room in its window', uncertain);
      attempts++;
      const result = await bind.transmitter.submit({ ...fields });
      if (result.kind === 'response') {
        const status = classifyStatus(result.status);
        if (status === 'ok') return { kind: 'accepted', reference: result.messageId, bind };
        const name = commandStatusName(result.status);
        if (status === 'permanent') {
          return {
            kind: 'rejected',
            carrierStatus: `smpp:0x${result.status.toString(16).padStart(8, '0')} ${name}`,
            message: `submit_sm of part ${index + 1} refused: ${name}`,
            acceptedReferences: [...accepted],
          };
        }
        if (status === 'retry') return retry(`submit_sm of part ${index + 1} answered ${name}`, uncertain);
        // throttled: wait, then again (the attempt does not count as a lost submission)
        attempts--;
        throttles++;
        emit({ type: 'throttled', dispatchId, part: index, status: name });
        if (throttles >= account.throttleAttempts) return retry(`throttled by the message centre (${name})`, uncertain);
        await sleep(Math.min(THROTTLE_BACKOFF_INITIAL_MS * 2 ** (throttles - 1), THROTTLE_BACKOFF_MAX_MS));
        bindPreference = bind;
        continue;
      }
      const reason = result.kind === 'timeout' ? 'no submit_sm_resp in time' : result.reason;
      uncertain = true;
      if (attempts >= account.submitAttempts) return retry(`${reason} after ${attempts} submissions`, true);
      emit({ type: 'resubmit', dispatchId, part: index, reason });
      // another bind if there is one
      bindPreference = liveBinds().find((other) => other !== bind && hasRoom(other)) ?? null;
    }
  }

  function stats(): LinkStats {
    const now = clock.now();
    let recent = 0;
    for (let i = answeredAt.length - 1; i >= 0 && (answeredAt[i] ?? 0) > now - 1_000; i--) recent++;
    return {
      bindsUp: liveBinds().length,
      bindsTotal: binds.length,
      windowInUse: binds.reduce((total, bind) => total + bind.transmitter.outstanding, 0),
      windowSize: binds.length * account.window,
      submitsPerSecond: recent,
    };
  }

  return {
    kind: 'smpp',
    start: async (handler) => {
      onReport = handler;
      await Promise.all(sessions.map((session) => session.start()));
    },
    submit: async (job) => {
      try {
        return await submit(job);
      } catch (error) {
        return retry(`unexpected: ${error instanceof Error ? error.message : String(error)}`);
      }
    },
    isLive: () => !stopping && liveBinds().length > 0,
    stats,
    mobileOriginatedCount: () => moCount,
    stop: async () => {
      stopping = true;
      wakeWaiters();
      const deadline = monotonic() + account.stopTimeoutMs;
      while (stats().windowInUse > 0 && monotonic() < deadline) await sleep(20);
      await Promise.all(sessions.map((session) => session.stop()));
    },
  };
}
