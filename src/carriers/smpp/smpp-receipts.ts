import type { CarrierReport, PartState } from '../connector/carrier-link.js';
import { decodeText } from './smpp-encoding.js';
import { TLV, tlvNumber, tlvString, type MessageBody } from './smpp-pdu.js';

/**
 * What a deliver_sm / data_sm from the message centre means: a delivery receipt about a part submitted earlier,
 * or a mobile-originated message; and what a submit_sm_resp command_status means.
 *
 * Receipts: the esm_class message type bits (0x3C) equal to 0x04 mark an SMSC delivery receipt. Its message id
 * and state come from the TLVs `receipted_message_id` and `message_state` when present, else from the standard
 * text `id:… sub:… dlvrd:… submit date:… done date:… stat:… err:… text:…`. The `done date` (YYMMDDhhmm, or
 * YYMMDDhhmmss) is read as UTC, because SMPP 3.4's receipt text carries no time zone and most centres write UTC;
 * without it the report is dated by the connector's clock. The carrier's error is the `err:` field (a value of all
 * zeros is no error), else the `network_error_code` TLV as `<network type>:<code>`.
 *
 * `ACCEPTD` (message_state 6) is not final: it says the message centre accepted the message on someone's behalf
 * (e.g. an operator's manual intervention), not that the handset got it, and a final report normally follows. It
 * maps to `enroute`, like ENROUTE: the recipient stays `sent`.
 *
 * Every report carries the centre's own words as `carrierStatus`: `smpp:<stat>` and ` err:<err>` when the error is
 * not all zeros (`smpp:UNDELIV err:001`), the stat being the text's or, from the TLV, message_state's name.
 */

const STAT_TO_STATE: Readonly<Record<string, PartState>> = {
  DELIVRD: 'delivered',
  DELIVERED: 'delivered',
  UNDELIV: 'undelivered',
  UNDELIVERABLE: 'undelivered',
  EXPIRED: 'expired',
  REJECTD: 'rejected',
  REJECTED: 'rejected',
  UNKNOWN: 'unknown',
  DELETED: 'deleted',
  ACCEPTD: 'enroute',
  ACCEPTED: 'enroute',
  ENROUTE: 'enroute',
  SCHEDULED: 'enroute',
};

/** The names of message_state values, as receipt texts write them. */
const MESSAGE_STATE_NAMES: Readonly<Record<number, string>> = {
  0: 'SCHEDULED',
  1: 'ENROUTE',
  2: 'DELIVRD',
  3: 'EXPIRED',
  4: 'DELETED',
  5: 'UNDELIV',
  6: 'ACCEPTD',
  7: 'UNKNOWN',
  8: 'REJECTD',
  9: 'SKIPPED',
};

/** SMPP message_state values (3.4 section 5.2.28; 9 SKIPPED is SMPP 5.0). */
const MESSAGE_STATE_TO_STATE: Readonly<Record<number, PartState>> = {
  0: 'enroute', // SCHEDULED
  1: 'enroute',
  2: 'delivered',
  3: 'expired',
  4: 'deleted',
  5: 'undelivered',
  6: 'enroute', // ACCEPTD
  7: 'unknown',
  8: 'rejected',
  9: 'undelivered', // SKIPPED
};

export function stateFromStat(stat: string): PartState | null {
  return STAT_TO_STATE[stat.trim().toUpperCase()] ?? null;
}

export function stateFromMessageState(value: number): PartState | null {
  return MESSAGE_STATE_TO_STATE[value] ?? null;
}

export interface ReceiptText {
  readonly id: string;
  readonly sub: string | null;
  readonly dlvrd: string | null;
  readonly submitDate: string | null;
  readonly doneDate: string | null;
  readonly stat: string | null;
  readonly err: string | null;
  readonly text: string | null;
}

/** Reads the standard receipt text (fields in any order, case-insensitive keys); null without an `id:`. */
export function parseReceiptText(text: string): ReceiptText | null {
  const field = (pattern: RegExp): string | null => pattern.exec(text)?.[1] ?? null;
  const id = field(/(?:^|\s)id:(\S+)/i);
  if (id === null) return null;
  const textMatch = /(?:^|\s)text:(.*)$/is.exec(text);
  return {
    id,
    sub: field(/(?:^|\s)sub:(\S+)/i),
    dlvrd: field(/(?:^|\s)dlvrd:(\S+)/i),
    submitDate: field(/(?:^|\s)submit date:(\d+)/i),
    doneDate: field(/(?:^|\s)done date:(\d+)/i),
    stat: field(/(?:^|\s)stat:(\S+)/i),
    err: field(/(?:^|\s)err:(\S+)/i),
    text: textMatch?.[1] ?? null,
  };
}

/** YYMMDDhhmm or YYMMDDhhmmss as UTC (years 00–99 → 2000–2099); null when not a valid date. */
export function parseReceiptDate(value: string): number | null {
  const match = /^(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})(\d{2})?$/.exec(value);
  if (!match) return null;
  const [year, month, day, hour, minute] = [1, 2, 3, 4, 5].map((i) => Number(match[i]));
  const second = match[6] === undefined ? 0 : Number(match[6]);
  if (year === undefined || month === undefined || day === undefined || hour === undefined || minute === undefined) return null;
  if (month < 1 || month > 12 || day < 1 || day > 31 || hour > 23 || minute > 59 || second > 59) return null;
  const epoch = Date.UTC(2000 + year, month - 1, day, hour, minute, second);
  return new Date(epoch).getUTCDate() === day ? epoch : null;
}

const isAllZeros = (value: string): boolean => /^0+$/.test(value);

/**
 * When the report's event happened: its `done date`, else `now`. A done date to the minute (YYMMDDhhmm) only says the
 * event fell within that minute: it is taken at the latest moment of the minute that is not after `now`, so a
 * delivery reported 20 s after its submission is not dated before it.
 */
function occurredAtOf(doneDate: string | null, now: number): number {
  const done = doneDate === null ? null : parseReceiptDate(doneDate);
  if (done === null || doneDate === null) return now;
  return doneDate.length === 10 ? Math.max(done, Math.min(now, done + 59_999)) : done;
}

/** What a deliver_sm / data_sm carried. */
export type InboundMessage =
  | { readonly kind: 'receipt'; readonly report: CarrierReport }
  /** A receipt whose message id or state could not be read: acknowledged, logged, not reported. */
  | { readonly kind: 'unreadable-receipt'; readonly reason: string }
  | { readonly kind: 'mobile-originated'; readonly from: string; readonly to: string; readonly text: string };

export const isReceipt = (esmClass: number): boolean => (esmClass & 0x3c) === 0x04;

/** Reads a deliver_sm / data_sm from its raw body and addresses; `now` dates a report whose text has no done date. */
export function readInbound(body: MessageBody, addresses: { readonly from: string; readonly to: string }, now: number): InboundMessage {
  const payload = body.tlvs.get(TLV.message_payload);
  const userData = payload ?? body.shortMessage;
  if (!isReceipt(body.esmClass)) {
    const udhi = (body.esmClass & 0x40) !== 0 && userData.length > 0;
    const content = udhi ? userData.subarray(1 + (userData[0] ?? 0)) : userData;
    return { kind: 'mobile-originated', from: addresses.from, to: addresses.to, text: decodeText(content, body.dataCoding) };
  }
  // receipt text is ASCII whatever data_coding says
  const parsed = parseReceiptText(Buffer.from(userData).toString('latin1'));
  const reference = tlvString(body, TLV.receipted_message_id) ?? parsed?.id ?? null;
  if (reference === null || reference === '')
    return { kind: 'unreadable-receipt', reason: 'no receipted_message_id and no id: in the text' };
  const tlvState = tlvNumber(body, TLV.message_state);
  const state = (tlvState === null ? null : stateFromMessageState(tlvState)) ?? (parsed?.stat == null ? null : stateFromStat(parsed.stat));
  if (state === null)
    return {
      kind: 'unreadable-receipt',
      reason: `no known state for ${reference} (message_state ${tlvState ?? 'absent'}, stat ${parsed?.stat ?? 'absent'})`,
    };
  let carrierError: string | null = null;
  if (parsed?.err != null && !isAllZeros(parsed.err)) carrierError = parsed.err;
  const network = body.tlvs.get(TLV.network_error_code);
  if (carrierError === null && network !== undefined && network.length === 3) {
    const code = network.readUInt16BE(1);
    if (code !== 0) carrierError = `${network[0] ?? 0}:${code}`;
  }
  const stat =
    tlvState !== null && stateFromMessageState(tlvState) !== null
      ? (MESSAGE_STATE_NAMES[tlvState] ?? String(tlvState))
      : (parsed?.stat ?? '').toUpperCase();
  const carrierStatus = `smpp:${stat}${carrierError === null ? '' : ` err:${carrierError}`}`.slice(0, 100);
  return {
    kind: 'receipt',
    report: { reference, state, carrierError, occurredAt: occurredAtOf(parsed?.doneDate ?? null, now), carrierStatus },
  };
}

// ---------------------------------------------------------------------------------------------------------------
// submit_sm_resp command_status

/**
 * What a submit_sm_resp status means for the message:
 * - `throttle`: the centre is busy (ESME_RTHROTTLED, ESME_RMSGQFUL); the link waits and submits again itself;
 * - `retry`: a transient failure that is not about the message (system error, bind state, temporary application
 *   error); the job goes back to the stream with a delay;
 * - `permanent`: the centre refused the message; it is rejected with the status name. Unknown statuses are permanent
 *   (a retry loop against a permanent refusal would last until the 24-hour rule).
 */
export type StatusClass = 'ok' | 'throttle' | 'retry' | 'permanent';

export const COMMAND_STATUS_NAMES: Readonly<Record<number, string>> = {
  0x00: 'ESME_ROK',
  0x01: 'ESME_RINVMSGLEN',
  0x02: 'ESME_RINVCMDLEN',
  0x03: 'ESME_RINVCMDID',
  0x04: 'ESME_RINVBNDSTS',
  0x05: 'ESME_RALYBND',
  0x06: 'ESME_RINVPRTFLG',
  0x07: 'ESME_RINVREGDLVFLG',
  0x08: 'ESME_RSYSERR',
  0x0a: 'ESME_RINVSRCADR',
  0x0b: 'ESME_RINVDSTADR',
  0x0c: 'ESME_RINVMSGID',
  0x0d: 'ESME_RBINDFAIL',
  0x0e: 'ESME_RINVPASWD',
  0x0f: 'ESME_RINVSYSID',
  0x11: 'ESME_RCANCELFAIL',
  0x13: 'ESME_RREPLACEFAIL',
  0x14: 'ESME_RMSGQFUL',
  0x15: 'ESME_RINVSERTYP',
  0x33: 'ESME_RINVNUMDESTS',
  0x34: 'ESME_RINVDLNAME',
  0x40: 'ESME_RINVDESTFLAG',
  0x42: 'ESME_RINVSUBREP',
  0x43: 'ESME_RINVESMCLASS',
  0x44: 'ESME_RCNTSUBDL',
  0x45: 'ESME_RSUBMITFAIL',
  0x48: 'ESME_RINVSRCTON',
  0x49: 'ESME_RINVSRCNPI',
  0x50: 'ESME_RINVDSTTON',
  0x51: 'ESME_RINVDSTNPI',
  0x53: 'ESME_RINVSYSTYP',
  0x54: 'ESME_RINVREPFLAG',
  0x55: 'ESME_RINVNUMMSGS',
  0x58: 'ESME_RTHROTTLED',
  0x61: 'ESME_RINVSCHED',
  0x62: 'ESME_RINVEXPIRY',
  0x63: 'ESME_RINVDFTMSGID',
  0x64: 'ESME_RX_T_APPN',
  0x65: 'ESME_RX_P_APPN',
  0x66: 'ESME_RX_R_APPN',
  0x67: 'ESME_RQUERYFAIL',
  0xc0: 'ESME_RINVOPTPARSTREAM',
  0xc1: 'ESME_ROPTPARNOTALLWD',
  0xc2: 'ESME_RINVPARLEN',
  0xc3: 'ESME_RMISSINGOPTPARAM',
  0xc4: 'ESME_RINVOPTPARAMVAL',
  0xfe: 'ESME_RDELIVERYFAILURE',
  0xff: 'ESME_RUNKNOWNERR',
};

const THROTTLE_STATUSES: ReadonlySet<number> = new Set([0x14, 0x58]);
const RETRY_STATUSES: ReadonlySet<number> = new Set([0x04, 0x08, 0x64]);

export const ESME_ROK = 0x00;
export const ESME_RTHROTTLED = 0x58;
/** Answer to a deliver_sm the connector could not take yet: the centre sends it again. */
export const ESME_RX_T_APPN = 0x64;

export function commandStatusName(status: number): string {
  return COMMAND_STATUS_NAMES[status] ?? `0x${status.toString(16).padStart(8, '0')}`;
}

export function classifyStatus(status: number): StatusClass {
  if (status === 0) return 'ok';
  if (THROTTLE_STATUSES.has(status)) return 'throttle';
  if (RETRY_STATUSES.has(status)) return 'retry';
  return 'permanent';
}
