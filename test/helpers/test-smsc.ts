import type { AddressInfo } from 'node:net';
import smpp, { type PDU, type Session } from 'smpp';
import { captureRawPdus, messageBodyOf, TLV, tlvNumber, type MessageBody } from '../../src/carriers/smpp/smpp-pdu.js';

/**
 * An SMPP 3.4 message centre for tests, on the `smpp` package's server side, listening on a free port of
 * 127.0.0.1. It accepts binds (transceiver, transmitter, receiver) of its accounts, records every submit_sm it
 * accepts with its raw bytes, reassembles concatenated messages (UDH 8-bit and 16-bit references, SAR TLVs,
 * message_payload), sends delivery receipts (deliver_sm with esm_class 0x04, standard text and/or TLVs) and
 * resends a receipt until it is answered, and injects faults on demand.
 *
 * Its GSM 03.38 / UCS-2 decoding is its own, independent of the code under test, so an encoding bug in a link
 * cannot cancel itself out in a round trip.
 */

export type ReceiptStat = 'DELIVRD' | 'UNDELIV' | 'EXPIRED' | 'REJECTD' | 'UNKNOWN' | 'DELETED' | 'ACCEPTD' | 'ENROUTE';

/** What the centre does with one submitted part (by destination and 0-based part index). */
export type PartOutcome =
  /** Accept it, then send a receipt with this stat (and err, default `000`). */
  | { readonly stat: ReceiptStat; readonly err?: string }
  /** Answer the submit_sm with this command_status (no receipt). */
  | { readonly submitStatus: number }
  /** Accept it and never send a receipt. */
  | { readonly noReceipt: true };

export type ReceiptStyle = 'tlv+text' | 'text-only' | 'tlv-only';

export interface TestSmscOptions {
  /** Accounts allowed to bind; default one: `smsc` / `secret`. */
  readonly accounts?: readonly { readonly systemId: string; readonly password: string }[];
  /** submit_sm received and not yet answered a session may have; beyond → ESME_RTHROTTLED. Default unlimited. */
  readonly window?: number;
  /** submit_sm accepted per second per system_id; beyond → ESME_RTHROTTLED. Default unlimited. */
  readonly maxSubmitsPerSecond?: number;
  /** Delay between accepting a part and sending its receipt. Default 10 ms. */
  readonly receiptDelayMs?: number;
  /** A receipt not answered (or answered with an error) is sent again after this long. Default 1 000 ms. */
  readonly receiptRetryMs?: number;
  /** Per destination (destination_addr as received) and part index. Default: DELIVRD, err 000. */
  readonly outcomeFor?: (destination: string, partIndex: number) => PartOutcome;
  /** How receipts carry their state. Default `tlv+text`. */
  readonly receiptStyle?: ReceiptStyle;
  /** Clock of the receipts' `submit date` / `done date` (UTC). Default Date.now. */
  readonly now?: () => number;
  /** TLS server (certificate and key, PEM). Default plain TCP. */
  readonly tls?: { readonly key: string | Buffer; readonly cert: string | Buffer };
  /**
   * First characters of the message ids the centre gives (`<prefix>` + 7 hex digits, counting from 1). Default `M`.
   * Two centres with the same prefix give the same ids, as a real centre may after a restart: tests that run several
   * centres against one connector's correlations give each its own prefix.
   */
  readonly messageIdPrefix?: string;
}

export type ConcatenationInfo =
  | { readonly method: 'udh'; readonly reference: number; readonly total: number; readonly seq: number; readonly referenceBits: 8 | 16 }
  | { readonly method: 'sar'; readonly reference: number; readonly total: number; readonly seq: number };

/** One submit_sm the centre accepted. */
export interface SubmittedPart {
  readonly sessionId: number;
  readonly systemId: string;
  readonly sourceAddr: string;
  readonly sourceTon: number;
  readonly sourceNpi: number;
  readonly destination: string;
  readonly destinationTon: number;
  readonly destinationNpi: number;
  readonly dataCoding: number;
  readonly esmClass: number;
  readonly registeredDelivery: number;
  /** short_message as sent, UDH included. */
  readonly shortMessage: Buffer;
  /** message_payload TLV as sent, or null. */
  readonly messagePayload: Buffer | null;
  readonly concatenation: ConcatenationInfo | null;
  /** This part's text, decoded (UDH left out). */
  readonly text: string;
  readonly messageId: string;
  readonly receivedAt: number;
}

export interface MobileOriginatedOptions {
  /** Called number (destination_addr); default `12345`. */
  readonly to?: string;
  /** Send on a session of this account; default the first account with a receiving bind. */
  readonly systemId?: string;
}

export interface TestSmsc {
  readonly port: number;
  /** Every submit_sm accepted, in arrival order. */
  readonly submits: readonly SubmittedPart[];
  /** Whole messages sent to this destination (destination_addr as received), decoded and reassembled, in order of completion. */
  messagesTo(destination: string): string[];
  /** Live bound sessions. */
  binds(): number;
  /** submit_sm answered ESME_RTHROTTLED so far (window or rate). */
  throttled(): number;
  /** unbind PDUs received so far. */
  unbinds(): number;
  /** Destroys every TCP connection now (no unbind). */
  dropConnections(): void;
  /** While on, binds are answered ESME_RBINDFAIL. */
  refuseBinds(on: boolean): void;
  /** Delay of every submit_sm_resp from now on (0: answered at once). */
  delayResponses(ms: number): void;
  /** While on, a part's receipt is sent before its submit_sm_resp. */
  receiptBeforeResponse(on: boolean): void;
  /** While on, enquire_link is not answered (a hung centre). */
  ignoreEnquireLinks(on: boolean): void;
  /** Sends a mobile-originated deliver_sm (no receipt bit) from `from`; resolves with the deliver_sm_resp status. */
  mobileOriginated(from: string, text: string, options?: MobileOriginatedOptions): Promise<number>;
  /** Receipts sent at least once and not yet answered with a deliver_sm_resp of status 0. */
  unansweredReceipts(): number;
  /** Receipts answered with status 0. */
  answeredReceipts(): number;
  stop(): Promise<void>;
}

const STATUS = {
  ESME_ROK: 0x00,
  ESME_RINVBNDSTS: 0x04,
  ESME_RALYBND: 0x05,
  ESME_RBINDFAIL: 0x0d,
  ESME_RINVPASWD: 0x0e,
  ESME_RTHROTTLED: 0x58,
} as const;

const MESSAGE_STATE: Record<ReceiptStat, number> = {
  ENROUTE: 1,
  DELIVRD: 2,
  EXPIRED: 3,
  DELETED: 4,
  UNDELIV: 5,
  ACCEPTD: 6,
  UNKNOWN: 7,
  REJECTD: 8,
};

// ---------------------------------------------------------------------------------------------------------------
// GSM 03.38 and UCS-2, written out here on their own

/** The default alphabet by septet value; 0x1B (escape) is a placeholder. */
const GSM_DEFAULT = [
  '@',
  '£',
  '$',
  '¥',
  'è',
  'é',
  'ù',
  'ì',
  'ò',
  'Ç',
  '\n',
  'Ø',
  'ø',
  '\r',
  'Å',
  'å',
  'Δ',
  '_',
  'Φ',
  'Γ',
  'Λ',
  'Ω',
  'Π',
  'Ψ',
  'Σ',
  'Θ',
  'Ξ',
  '\u001b',
  'Æ',
  'æ',
  'ß',
  'É',
  ' ',
  '!',
  '"',
  '#',
  '¤',
  '%',
  '&',
  "'",
  '(',
  ')',
  '*',
  '+',
  ',',
  '-',
  '.',
  '/',
  '0',
  '1',
  '2',
  '3',
  '4',
  '5',
  '6',
  '7',
  '8',
  '9',
  ':',
  ';',
  '<',
  '=',
  '>',
  '?',
  '¡',
  'A',
  'B',
  'C',
  'D',
  'E',
  'F',
  'G',
  'H',
  'I',
  'J',
  'K',
  'L',
  'M',
  'N',
  'O',
  'P',
  'Q',
  'R',
  'S',
  'T',
  'U',
  'V',
  'W',
  'X',
  'Y',
  'Z',
  'Ä',
  'Ö',
  'Ñ',
  'Ü',
  '§',
  '¿',
  'a',
  'b',
  'c',
  'd',
  'e',
  'f',
  'g',
  'h',
  'i',
  'j',
  'k',
  'l',
  'm',
  'n',
  'o',
  'p',
  'q',
  'r',
  's',
  't',
  'u',
  'v',
  'w',
  'x',
  'y',
  'z',
  'ä',
  'ö',
  'ñ',
  'ü',
  'à',
];
const GSM_EXTENSION: ReadonlyMap<number, string> = new Map([
  [0x0a, '\f'],
  [0x14, '^'],
  [0x28, '{'],
  [0x29, '}'],
  [0x2f, '\\'],
  [0x3c, '['],
  [0x3d, '~'],
  [0x3e, ']'],
  [0x40, '|'],
  [0x65, '€'],
]);
const GSM_ENCODE = new Map<string, number[]>();
GSM_DEFAULT.forEach((char, code) => {
  if (code !== 0x1b) GSM_ENCODE.set(char, [code]);
});
for (const [code, char] of GSM_EXTENSION) GSM_ENCODE.set(char, [0x1b, code]);

/** Unpacked GSM septets (one per octet) to text; an unknown escape reads as its default-alphabet character. */
export function decodeGsmSeptets(bytes: Buffer): string {
  let out = '';
  for (let i = 0; i < bytes.length; i++) {
    const code = bytes[i] ?? 0;
    if (code === 0x1b && i + 1 < bytes.length) {
      const next = bytes[++i] ?? 0;
      out += GSM_EXTENSION.get(next) ?? GSM_DEFAULT[next] ?? '\ufffd';
    } else {
      out += code < 0x80 && code !== 0x1b ? (GSM_DEFAULT[code] ?? '\ufffd') : '\ufffd';
    }
  }
  return out;
}

function decodeUcs2(bytes: Buffer): string {
  const even = Buffer.from(bytes.subarray(0, bytes.length - (bytes.length % 2)));
  return even.swap16().toString('utf16le') + (bytes.length % 2 === 1 ? '\ufffd' : '');
}

function decodeText(bytes: Buffer, dataCoding: number): string {
  if (dataCoding === 0x08) return decodeUcs2(bytes);
  if (dataCoding === 0x00) return decodeGsmSeptets(bytes);
  return bytes.toString('latin1');
}

/** Text to data_coding 0 septets when every character is GSM, else UCS-2 (data_coding 8). */
function encodeForMobile(text: string): { dataCoding: number; bytes: Buffer } {
  const septets: number[] = [];
  for (const char of text) {
    const codes = GSM_ENCODE.get(char);
    if (codes === undefined) {
      return { dataCoding: 8, bytes: Buffer.from(text, 'utf16le').swap16() };
    }
    septets.push(...codes);
  }
  return { dataCoding: 0, bytes: Buffer.from(septets) };
}

interface SplitMessage {
  readonly concatenation: ConcatenationInfo | null;
  readonly userData: Buffer;
}

/** Takes the UDH off user data (esm_class bit 0x40) and reads its concatenation element. */
function splitUdh(userData: Buffer, udhi: boolean): SplitMessage {
  if (!udhi || userData.length === 0) return { concatenation: null, userData };
  const headerLength = userData[0] ?? 0;
  const header = userData.subarray(1, 1 + headerLength);
  let concatenation: ConcatenationInfo | null = null;
  for (let i = 0; i + 1 < header.length;) {
    const id = header[i] ?? 0;
    const length = header[i + 1] ?? 0;
    const value = header.subarray(i + 2, i + 2 + length);
    if (id === 0x00 && length === 3) {
      concatenation = { method: 'udh', reference: value[0] ?? 0, total: value[1] ?? 0, seq: value[2] ?? 0, referenceBits: 8 };
    } else if (id === 0x08 && length === 4) {
      concatenation = { method: 'udh', reference: value.readUInt16BE(0), total: value[2] ?? 0, seq: value[3] ?? 0, referenceBits: 16 };
    }
    i += 2 + length;
  }
  return { concatenation, userData: userData.subarray(1 + headerLength) };
}

function readSubmittedMessage(body: MessageBody): { concatenation: ConcatenationInfo | null; text: string; payload: Buffer | null } {
  const payload = body.tlvs.get(TLV.message_payload) ?? null;
  const udhi = (body.esmClass & 0x40) !== 0;
  const split = splitUdh(payload ?? body.shortMessage, udhi);
  let concatenation = split.concatenation;
  const sarReference = tlvNumber(body, TLV.sar_msg_ref_num);
  const sarTotal = tlvNumber(body, TLV.sar_total_segments);
  const sarSeq = tlvNumber(body, TLV.sar_segment_seqnum);
  if (concatenation === null && sarReference !== null && sarTotal !== null && sarSeq !== null) {
    concatenation = { method: 'sar', reference: sarReference, total: sarTotal, seq: sarSeq };
  }
  return { concatenation, text: decodeText(split.userData, body.dataCoding), payload };
}

// ---------------------------------------------------------------------------------------------------------------

const pad2 = (n: number): string => String(n).padStart(2, '0');

/** YYMMDDhhmm in UTC, the receipt text's date format. */
function receiptDate(epochMs: number): string {
  const date = new Date(epochMs);
  return (
    pad2(date.getUTCFullYear() % 100) +
    pad2(date.getUTCMonth() + 1) +
    pad2(date.getUTCDate()) +
    pad2(date.getUTCHours()) +
    pad2(date.getUTCMinutes())
  );
}

type BindMode = 'transceiver' | 'transmitter' | 'receiver';

interface SessionState {
  readonly id: number;
  readonly session: Session;
  systemId: string | null;
  mode: BindMode | null;
  /** submit_sm received and not yet answered. */
  pending: number;
  closed: boolean;
}

interface PlannedReceipt {
  readonly systemId: string;
  readonly messageId: string;
  readonly fields: Record<string, unknown>;
  /** Session it went out on last; null before the first send. */
  sentOn: SessionState | null;
  lastSentAt: number;
  sends: number;
  answered: boolean;
}

interface Assembly {
  readonly key: string;
  readonly total: number;
  readonly parts: Map<number, string>;
}

export async function startTestSmsc(options: TestSmscOptions = {}): Promise<TestSmsc> {
  captureRawPdus();
  const accounts = options.accounts ?? [{ systemId: 'smsc', password: 'secret' }];
  const window = options.window ?? Number.POSITIVE_INFINITY;
  const maxPerSecond = options.maxSubmitsPerSecond ?? Number.POSITIVE_INFINITY;
  const receiptDelayMs = options.receiptDelayMs ?? 10;
  const receiptRetryMs = options.receiptRetryMs ?? 1_000;
  const outcomeFor = options.outcomeFor ?? ((): PartOutcome => ({ stat: 'DELIVRD', err: '000' }));
  const receiptStyle = options.receiptStyle ?? 'tlv+text';
  const now = options.now ?? Date.now;
  const messageIdPrefix = options.messageIdPrefix ?? 'M';

  const submits: SubmittedPart[] = [];
  const sessions = new Set<SessionState>();
  const receipts: PlannedReceipt[] = [];
  const timers = new Set<NodeJS.Timeout>();
  const acceptedAt = new Map<string, number[]>();
  const completed = new Map<string, string[]>();
  const assemblies = new Map<string, Assembly>();
  let nextSessionId = 1;
  let nextMessageId = 1;
  let throttledCount = 0;
  let unbindCount = 0;
  let refusing = false;
  let responseDelayMs = 0;
  let receiptFirst = false;
  let silentOnEnquire = false;
  let stopped = false;

  const later = (ms: number, action: () => void): void => {
    const timer = setTimeout(() => {
      timers.delete(timer);
      if (!stopped) action();
    }, ms);
    timers.add(timer);
  };

  const canReceive = (state: SessionState): boolean => !state.closed && (state.mode === 'transceiver' || state.mode === 'receiver');

  function recordWhole(destination: string, text: string): void {
    const list = completed.get(destination) ?? [];
    list.push(text);
    completed.set(destination, list);
  }

  function assemble(part: SubmittedPart): void {
    const c = part.concatenation;
    if (c === null || c.total <= 1) {
      recordWhole(part.destination, part.text);
      return;
    }
    const key = [part.systemId, part.sourceAddr, part.destination, c.method, c.reference, c.total].join('|');
    let assembly = assemblies.get(key);
    if (assembly === undefined) {
      assembly = { key, total: c.total, parts: new Map() };
      assemblies.set(key, assembly);
    }
    if (!assembly.parts.has(c.seq)) assembly.parts.set(c.seq, part.text);
    if (assembly.parts.size === assembly.total) {
      assemblies.delete(key);
      let text = '';
      for (let seq = 1; seq <= assembly.total; seq++) text += assembly.parts.get(seq) ?? '';
      recordWhole(part.destination, text);
    }
  }

  function withinRate(systemId: string): boolean {
    if (!Number.isFinite(maxPerSecond)) return true;
    const cutoff = Date.now() - 1_000;
    const recent = (acceptedAt.get(systemId) ?? []).filter((t) => t > cutoff);
    acceptedAt.set(systemId, recent);
    return recent.length < maxPerSecond;
  }

  function sendReceipt(receipt: PlannedReceipt): void {
    const preferred = receipt.sentOn !== null && canReceive(receipt.sentOn) ? receipt.sentOn : null;
    const target = preferred ?? [...sessions].find((s) => s.systemId === receipt.systemId && canReceive(s)) ?? null;
    receipt.lastSentAt = Date.now();
    if (target === null) return; // tried again by the resend sweep
    receipt.sentOn = target;
    receipt.sends++;
    target.session.send(new smpp.PDU('deliver_sm', receipt.fields), (resp) => {
      if (resp.command_status === STATUS.ESME_ROK) receipt.answered = true;
    });
  }

  function planReceipt(state: SessionState, part: SubmittedPart, outcome: { stat: ReceiptStat; err?: string }, submittedAt: number): void {
    const stat = outcome.stat;
    const err = outcome.err ?? '000';
    const text = `id:${part.messageId} sub:001 dlvrd:${stat === 'DELIVRD' ? '001' : '000'} submit date:${receiptDate(submittedAt)} done date:${receiptDate(now())} stat:${stat} err:${err} text:${part.text.slice(0, 20).replace(/[^\x20-\x7e]/g, '?')}`;
    const fields: Record<string, unknown> = {
      source_addr_ton: part.destinationTon,
      source_addr_npi: part.destinationNpi,
      source_addr: part.destination,
      dest_addr_ton: part.sourceTon,
      dest_addr_npi: part.sourceNpi,
      destination_addr: part.sourceAddr,
      esm_class: 0x04,
      data_coding: 0,
      short_message: receiptStyle === 'tlv-only' ? Buffer.alloc(0) : Buffer.from(text, 'latin1'),
    };
    if (receiptStyle !== 'text-only') {
      fields.receipted_message_id = part.messageId;
      fields.message_state = MESSAGE_STATE[stat];
    }
    const receipt: PlannedReceipt = {
      systemId: part.systemId,
      messageId: part.messageId,
      fields,
      sentOn: state,
      lastSentAt: 0,
      sends: 0,
      answered: false,
    };
    receipts.push(receipt);
    later(receiptDelayMs, () => {
      sendReceipt(receipt);
    });
  }

  function onSubmit(state: SessionState, pdu: PDU): void {
    const respond = (fields: { command_status?: number; message_id?: string }, delay: number): void => {
      state.pending++;
      const send = (): void => {
        state.pending--;
        if (!state.closed) state.session.send(pdu.response(fields));
      };
      if (delay <= 0) send();
      else later(delay, send);
    };
    if (state.systemId === null || state.mode === 'receiver') {
      respond({ command_status: STATUS.ESME_RINVBNDSTS }, 0);
      return;
    }
    if (state.pending >= window || !withinRate(state.systemId)) {
      throttledCount++;
      respond({ command_status: STATUS.ESME_RTHROTTLED }, 0);
      return;
    }
    const body = messageBodyOf(pdu);
    if (body === null) {
      respond({ command_status: 0x01 }, 0); // ESME_RINVMSGLEN: unreadable body
      return;
    }
    const message = readSubmittedMessage(body);
    const destination = pdu.destination_addr ?? '';
    const partIndex = message.concatenation === null ? 0 : message.concatenation.seq - 1;
    const outcome = outcomeFor(destination, partIndex);
    if ('submitStatus' in outcome) {
      respond({ command_status: outcome.submitStatus }, responseDelayMs);
      return;
    }
    const accepted = acceptedAt.get(state.systemId) ?? [];
    accepted.push(Date.now());
    acceptedAt.set(state.systemId, accepted);
    const messageId = `${messageIdPrefix}${(nextMessageId++).toString(16).toUpperCase().padStart(7, '0')}`;
    const part: SubmittedPart = {
      sessionId: state.id,
      systemId: state.systemId,
      sourceAddr: pdu.source_addr ?? '',
      sourceTon: pdu.source_addr_ton ?? 0,
      sourceNpi: pdu.source_addr_npi ?? 0,
      destination,
      destinationTon: pdu.dest_addr_ton ?? 0,
      destinationNpi: pdu.dest_addr_npi ?? 0,
      dataCoding: body.dataCoding,
      esmClass: body.esmClass,
      registeredDelivery: pdu.registered_delivery ?? 0,
      shortMessage: body.shortMessage,
      messagePayload: message.payload,
      concatenation: message.concatenation,
      text: message.text,
      messageId,
      receivedAt: Date.now(),
    };
    submits.push(part);
    assemble(part);
    const submittedAt = now();
    const wantsReceipt = (part.registeredDelivery & 0x03) !== 0 && !('noReceipt' in outcome);
    if (wantsReceipt && receiptFirst) {
      planReceipt(state, part, outcome, submittedAt);
      respond({ message_id: messageId }, Math.max(responseDelayMs, receiptDelayMs + 50));
      return;
    }
    respond({ message_id: messageId }, responseDelayMs);
    if (wantsReceipt) planReceipt(state, part, outcome, submittedAt);
  }

  function onBind(state: SessionState, pdu: PDU, mode: BindMode): void {
    if (state.systemId !== null) {
      state.session.send(pdu.response({ command_status: STATUS.ESME_RALYBND }));
      return;
    }
    if (refusing) {
      state.session.send(pdu.response({ command_status: STATUS.ESME_RBINDFAIL }));
      return;
    }
    const account = accounts.find((a) => a.systemId === pdu.system_id);
    if (account === undefined || account.password !== pdu.password) {
      state.session.send(pdu.response({ command_status: STATUS.ESME_RINVPASWD }));
      return;
    }
    state.systemId = account.systemId;
    state.mode = mode;
    state.session.send(pdu.response({ system_id: 'TESTSMSC' }));
  }

  const server = smpp.createServer(options.tls ? { key: options.tls.key, cert: options.tls.cert } : {}, (session) => {
    const state: SessionState = { id: nextSessionId++, session, systemId: null, mode: null, pending: 0, closed: false };
    sessions.add(state);
    session.on('error', () => {
      // a reset connection: 'close' follows
    });
    session.on('close', () => {
      state.closed = true;
      sessions.delete(state);
    });
    session.on('bind_transceiver', (pdu) => {
      onBind(state, pdu, 'transceiver');
    });
    session.on('bind_transmitter', (pdu) => {
      onBind(state, pdu, 'transmitter');
    });
    session.on('bind_receiver', (pdu) => {
      onBind(state, pdu, 'receiver');
    });
    session.on('submit_sm', (pdu) => {
      onSubmit(state, pdu);
    });
    session.on('enquire_link', (pdu) => {
      if (!silentOnEnquire) session.send(pdu.response());
    });
    session.on('unbind', (pdu) => {
      unbindCount++;
      state.systemId = null;
      state.mode = null;
      session.send(pdu.response(), undefined, () => {
        session.close();
      });
    });
  });
  server.on('error', () => {
    // listening errors surface through listen below; nothing else to do
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      server.off('error', reject);
      resolve();
    });
  });
  const port = (server.address() as AddressInfo).port;

  // receipts not answered in time (or whose session closed) go out again
  const resend = setInterval(
    () => {
      const cutoff = Date.now() - receiptRetryMs;
      for (const receipt of receipts) {
        if (receipt.answered || receipt.lastSentAt === 0) continue;
        const sessionGone = receipt.sentOn === null || receipt.sentOn.closed;
        if (receipt.lastSentAt <= cutoff || (sessionGone && receipt.lastSentAt <= Date.now() - 100)) sendReceipt(receipt);
      }
    },
    Math.min(receiptRetryMs, 200),
  );

  return {
    port,
    submits,
    messagesTo: (destination) => [...(completed.get(destination) ?? [])],
    binds: () => [...sessions].filter((s) => s.systemId !== null && !s.closed).length,
    throttled: () => throttledCount,
    unbinds: () => unbindCount,
    dropConnections: () => {
      for (const state of sessions) state.session.destroy();
    },
    refuseBinds: (on) => {
      refusing = on;
    },
    delayResponses: (ms) => {
      responseDelayMs = ms;
    },
    receiptBeforeResponse: (on) => {
      receiptFirst = on;
    },
    ignoreEnquireLinks: (on) => {
      silentOnEnquire = on;
    },
    mobileOriginated: (from, text, moOptions = {}) =>
      new Promise<number>((resolve, reject) => {
        const target = [...sessions].find((s) => canReceive(s) && (moOptions.systemId === undefined || s.systemId === moOptions.systemId));
        if (target === undefined) {
          reject(new Error('no receiving bind to send the mobile-originated message on'));
          return;
        }
        const encoded = encodeForMobile(text);
        const sent = target.session.send(
          new smpp.PDU('deliver_sm', {
            source_addr_ton: 1,
            source_addr_npi: 1,
            source_addr: from,
            dest_addr_ton: 0,
            dest_addr_npi: 0,
            destination_addr: moOptions.to ?? '12345',
            esm_class: 0x00,
            data_coding: encoded.dataCoding,
            short_message: encoded.bytes,
          }),
          (resp) => {
            resolve(resp.command_status);
          },
        );
        if (!sent) reject(new Error('the receiving bind is not writable'));
      }),
    unansweredReceipts: () => receipts.filter((r) => !r.answered && r.sends > 0).length,
    answeredReceipts: () => receipts.filter((r) => r.answered).length,
    stop: async () => {
      stopped = true;
      clearInterval(resend);
      for (const timer of timers) clearTimeout(timer);
      timers.clear();
      for (const state of sessions) state.session.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}
