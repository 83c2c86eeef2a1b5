import { createHash } from 'node:crypto';
import type { CarrierStatus } from '../carrier-outcomes.js';
import { FINAL_PART_STATES, type PartState } from './carrier-link.js';

/**
 * What a connector keeps in JetStream key-value buckets, and the pure rules that turn carrier delivery reports into
 * receipts (docs/carrier-protocol.md, sections 4 and 5). Connectors speak only NATS, so their durable state lives
 * there, shared by every instance of the carrier's connector (bucket names in nats-names.ts; a namespace prefixes
 * them):
 *
 * - `carrier-dispatches-<carrier>`: key = the dispatch id, encoded; the dispatch record (`DispatchRecord`).
 * - `carrier-references-<carrier>`: key = a carrier reference (message id of one part), encoded; its `Correlation`,
 *   or, until the correlation is written, the reports the carrier sent before answering the submission
 *   (`EarlyReports`). One key for both, written only on the revision read, so a report kept and a correlation
 *   written at the same moment always meet.
 */

const KEY_SAFE = /[A-Za-z0-9_-]/;

/**
 * A string as a key-value key: letters, digits, `_` and `-` stay; every other UTF-8 byte becomes `=XX` (upper-case
 * hex). Reversible and injective, never empty-looking, never holding `.` (a key token separator) or a wildcard.
 */
export function encodeKey(value: string): string {
  if (value === '') return '=';
  let out = '';
  for (const char of value) {
    if (KEY_SAFE.test(char)) {
      out += char;
      continue;
    }
    for (const byte of Buffer.from(char, 'utf8')) out += `=${byte.toString(16).toUpperCase().padStart(2, '0')}`;
  }
  return out;
}

export function decodeKey(key: string): string {
  if (key === '=') return '';
  const bytes: number[] = [];
  for (let i = 0; i < key.length;) {
    if (key[i] === '=') {
      const hex = key.slice(i + 1, i + 3);
      if (!/^[0-9A-F]{2}$/.test(hex)) throw new Error(`not an encoded key: ${JSON.stringify(key)}`);
      bytes.push(Number.parseInt(hex, 16));
      i += 3;
    } else {
      bytes.push(...Buffer.from(key[i] ?? '', 'utf8'));
      i += 1;
    }
  }
  return Buffer.from(bytes).toString('utf8');
}

/** One part's last known state at the carrier (null: no report yet). */
export interface PartRecord {
  readonly state: PartState | null;
  readonly carrier_error: string | null;
  /** The carrier's own words for the part's state (`smpp:UNDELIV err:001`), when it gave them. */
  readonly carrier_status?: string | null;
  /** Epoch ms at the carrier, of the report that set `state`. */
  readonly occurred_at: number | null;
}

/**
 * The dispatch record, written before the link submits so no two instances (nor a restarted one) hand the same job
 * to the carrier while it is known to be in hand.
 * - `submitting`: `instance` holds it since `claimed_at`, and renews `renewed_at` while its submission lasts.
 * - `submitted`: the carrier took every part (`references`, in part order); `parts` collects multi-part reports.
 * - `rejected`: the carrier refused it for good; a redelivered job is acknowledged, not sent again.
 */
export type DispatchRecord =
  | {
      readonly version: 1;
      readonly state: 'submitting';
      readonly instance: string;
      readonly claimed_at: number;
      readonly renewed_at: number;
      readonly parts?: readonly PartRecord[];
    }
  | {
      readonly version: 1;
      readonly state: 'submitted';
      readonly references: readonly string[];
      readonly submitted_at: number;
      readonly parts?: readonly PartRecord[];
    }
  | {
      readonly version: 1;
      readonly state: 'rejected';
      readonly carrier_status: string;
      readonly accepted_references: readonly string[];
      readonly rejected_at: number;
    };

/** A carrier reference → the part of the dispatch it stands for. */
export interface Correlation {
  readonly dispatch_id: string;
  /** 0-based part index. */
  readonly part: number;
  readonly parts: number;
}

export interface OrphanReport {
  readonly reference: string;
  readonly state: PartState;
  readonly carrier_error: string | null;
  readonly carrier_status?: string | null;
  readonly occurred_at: number;
}

/** Reports for a reference whose correlation is not written yet, in their order of arrival. */
export interface EarlyReports {
  readonly reports: readonly OrphanReport[];
}

/** What the references bucket holds under a reference. */
export type ReferenceEntry = Correlation | EarlyReports;

export const isEarlyReports = (entry: ReferenceEntry): entry is EarlyReports => 'reports' in entry;

/** The receipt status of one part's state, for a single-part dispatch. */
export const STATUS_OF_PART_STATE: Readonly<Record<PartState, CarrierStatus>> = {
  accepted: 'accepted',
  enroute: 'enroute',
  delivered: 'delivered',
  undelivered: 'undelivered',
  expired: 'expired',
  rejected: 'rejected',
  deleted: 'failed',
  unknown: 'delivery_unknown',
};

const LABEL_OF_PART_STATE: Readonly<Record<PartState, string>> = {
  accepted: 'Accepted',
  enroute: 'Enroute',
  delivered: 'Delivered',
  undelivered: 'Undelivered',
  expired: 'Expired',
  rejected: 'Rejected by the carrier',
  deleted: 'Deleted by the carrier',
  unknown: 'Delivery unknown',
};

export const isFinalPartState = (state: PartState | null): state is PartState => state !== null && FINAL_PART_STATES.has(state);

/** The merchant-facing text of a failed part: "Undelivered (carrier error 001)"; null when delivered or not final. */
export function partErrorMessage(state: PartState, carrierError: string | null): string | null {
  if (state === 'delivered' || !FINAL_PART_STATES.has(state)) return null;
  const label = LABEL_OF_PART_STATE[state];
  return carrierError === null || carrierError === '' ? label : `${label} (carrier error ${carrierError})`;
}

export interface ReceiptVerdict {
  readonly status: CarrierStatus;
  readonly errorMessage: string | null;
  readonly final: boolean;
  /** The carrier's words to keep as the recipient's carrier_status: the deciding part's (the first failure's). */
  readonly carrierStatus?: string | null;
}

/** A single-part dispatch: the report's state is the dispatch's. */
export function singlePartVerdict(state: PartState, carrierError: string | null): ReceiptVerdict {
  return { status: STATUS_OF_PART_STATE[state], errorMessage: partErrorMessage(state, carrierError), final: FINAL_PART_STATES.has(state) };
}

/**
 * A multi-part dispatch, from its parts' states: `enroute` until every part is final; then `delivered` when all
 * were, the first failed part's status when none was, `partially_delivered` when some were.
 */
export function multiPartVerdict(parts: readonly PartRecord[]): ReceiptVerdict {
  if (parts.length === 0 || !parts.every((part) => isFinalPartState(part.state)))
    return { status: 'enroute', errorMessage: null, final: false };
  const delivered = parts.filter((part) => part.state === 'delivered').length;
  if (delivered === parts.length) return { status: 'delivered', errorMessage: null, final: true };
  const firstFailure = parts.find((part) => part.state !== 'delivered');
  if (firstFailure?.state == null) throw new Error('unreachable: a final part without a state');
  const failureText = partErrorMessage(firstFailure.state, firstFailure.carrier_error);
  const words = firstFailure.carrier_status == null ? {} : { carrierStatus: firstFailure.carrier_status };
  if (delivered === 0) return { status: STATUS_OF_PART_STATE[firstFailure.state], errorMessage: failureText, final: true, ...words };
  return {
    status: 'partially_delivered',
    errorMessage: `${delivered} of ${parts.length} parts delivered; ${failureText ?? 'a part failed'}`,
    final: true,
    ...words,
  };
}

/**
 * One part's new state folded into the list: a part's first final state is its last word (a repeated or late
 * report cannot undo it), and a non-final report never replaces a final one.
 */
export function withPartReport(parts: readonly PartRecord[] | undefined, count: number, index: number, report: PartRecord): PartRecord[] {
  const next: PartRecord[] = Array.from({ length: count }, (_, i) => parts?.[i] ?? { state: null, carrier_error: null, occurred_at: null });
  const current = next[index];
  if (current === undefined) throw new Error(`part ${index} out of range (${count} parts)`);
  if (isFinalPartState(current.state)) return next;
  next[index] = report;
  return next;
}

const RECEIPT_ID_MAX = 200;

/** Stable per report: a report published again gets the same id, so the stream and the gateway drop the copy. */
export function reportReceiptId(dispatchId: string, reference: string, state: PartState): string {
  const id = `${dispatchId}:${reference}:${state}`;
  if (id.length <= RECEIPT_ID_MAX) return id;
  return `${dispatchId}:${createHash('sha256').update(reference).digest('hex').slice(0, 40)}:${state}`;
}

/** The final receipt of a multi-part dispatch: one per dispatch, whichever part's report completed it. */
export const finalReceiptId = (dispatchId: string, status: CarrierStatus): string => `${dispatchId}:final:${status}`;
