import {
  CARRIER_OUTCOMES,
  EVENT_OF_STATUS,
  failureCode,
  failureMessage,
  type CarrierStatus,
  type RecipientStatus,
} from '../carriers/carrier-outcomes.js';
import { ERROR_CATALOGUE } from '../libraries/errors/error-catalogue.js';

export interface RecipientState {
  readonly status: RecipientStatus;
  /** The last applied report's carrier status, or the carrier's own words for it when the connector gave them. */
  readonly carrierStatus: string | null;
  /** Rank of the furthest carrier report applied; reports at or below it are duplicates or stale. */
  readonly carrierRank: number;
  readonly errorCode: string | null;
  readonly errorMessage: string | null;
  readonly updatedAt: number | null;
  readonly sentAt: number | null;
  readonly deliveredAt: number | null;
  readonly failedAt: number | null;
}

/** What changes a recipient: a connector's report, the 24-hour timeout, or a failure inside the gateway. */
export type RecipientSignal =
  | {
      readonly type: 'carrier_report';
      readonly status: CarrierStatus;
      readonly at: number;
      readonly errorCode?: string | null;
      readonly errorMessage?: string | null;
      /** The carrier's own words (`smpp:UNDELIV err:001`), kept as the recipient's carrier status. */
      readonly carrierStatus?: string;
    }
  | { readonly type: 'receipt_timeout'; readonly at: number }
  | { readonly type: 'gateway_failure'; readonly at: number; readonly errorCode: string; readonly errorMessage: string };

export type RecipientEventType = (typeof EVENT_OF_STATUS)[keyof typeof EVENT_OF_STATUS];

export interface RecipientTransition {
  readonly state: RecipientState;
  /** Events to emit, in order; empty for a duplicate, a stale report or anything after a terminal state. */
  readonly events: readonly RecipientEventType[];
  readonly changed: boolean;
}

const STATUS_RANK: Readonly<Record<RecipientStatus, number>> = { pending: 0, processing: 1, sent: 2, delivered: 3, failed: 3 };

export const INITIAL_RECIPIENT_STATE: RecipientState = Object.freeze({
  status: 'pending',
  carrierStatus: null,
  carrierRank: 0,
  errorCode: null,
  errorMessage: null,
  updatedAt: null,
  sentAt: null,
  deliveredAt: null,
  failedAt: null,
});

export function isTerminal(status: RecipientStatus): status is 'delivered' | 'failed' {
  return status === 'delivered' || status === 'failed';
}

/**
 * The forward-only merge. Receipts overtake each other and repeat on the carrier side, so a recipient only moves
 * forward: terminal is final, and a report no further along than the last applied one changes nothing. A report
 * that skips states (delivered before accepted) emits the skipped states' events first, so any order and any
 * duplication of one dispatch's receipts yields the same status, carrier status, error and event list as the
 * in-order case (timestamps are those of the receipts that arrived first).
 */
export function applySignal(state: RecipientState, signal: RecipientSignal): RecipientTransition {
  if (isTerminal(state.status)) return { state, events: [], changed: false };

  // from a non-terminal state a move to failed always changes it
  if (signal.type === 'receipt_timeout') {
    const code = ERROR_CATALOGUE.SMS_TIMEOUT.code;
    return { ...moveTo(state, ['failed'], signal.at, { errorCode: code, errorMessage: failureMessage(code) }), changed: true };
  }
  if (signal.type === 'gateway_failure') {
    return { ...moveTo(state, ['failed'], signal.at, { errorCode: signal.errorCode, errorMessage: signal.errorMessage }), changed: true };
  }

  const outcome = CARRIER_OUTCOMES[signal.status];
  if (outcome.rank <= state.carrierRank) return { state, events: [], changed: false };
  const code = failureCode(signal.status, signal.errorCode);
  const failure = code === null ? null : { errorCode: code, errorMessage: failureMessage(code, signal.errorMessage) };
  const next = moveTo(state, [...outcome.implies, outcome.status], signal.at, failure);
  const merged: RecipientState = {
    ...next.state,
    carrierStatus: signal.carrierStatus ?? signal.status,
    carrierRank: outcome.rank,
    updatedAt: signal.at,
  };
  return { state: merged, events: next.events, changed: true };
}

/**
 * Moves a non-terminal recipient along `path`, skipping the states it is already at or past. `failure` is given
 * exactly when the path ends in `failed` (every failed outcome has a code), so it alone decides the error fields.
 * A path that changes nothing only stamps `updatedAt`, which the caller overrides with the report's time anyway.
 */
function moveTo(
  state: RecipientState,
  path: readonly Exclude<RecipientStatus, 'pending'>[],
  at: number,
  failure: { errorCode: string; errorMessage: string } | null,
): { readonly state: RecipientState; readonly events: readonly RecipientEventType[] } {
  const events: RecipientEventType[] = [];
  let status = state.status;
  for (const step of path) {
    if (STATUS_RANK[step] <= STATUS_RANK[status]) continue;
    status = step;
    events.push(EVENT_OF_STATUS[step]);
  }
  const next: RecipientState = {
    ...state,
    status,
    updatedAt: at,
    sentAt: state.sentAt ?? (events.includes('sms.sent') ? at : null),
    deliveredAt: status === 'delivered' ? at : state.deliveredAt,
    failedAt: status === 'failed' ? at : state.failedAt,
    errorCode: failure ? failure.errorCode : state.errorCode,
    errorMessage: failure ? failure.errorMessage : state.errorMessage,
  };
  return { state: next, events };
}

export interface RecipientCounters {
  readonly delivered: number;
  readonly failed: number;
  /** Every recipient not yet terminal (pending, processing or sent). */
  readonly pending: number;
}

export type AggregateStatus = 'pending' | 'processing' | 'sent' | 'delivered' | 'failed';

export function countRecipients(statuses: Iterable<RecipientStatus>): RecipientCounters {
  let delivered = 0;
  let failed = 0;
  let pending = 0;
  for (const status of statuses) {
    if (status === 'delivered') delivered++;
    else if (status === 'failed') failed++;
    else pending++;
  }
  return { delivered, failed, pending };
}

/**
 * The contract's aggregate rules 1–6, read in order: all terminal → delivered if any succeeded, else failed;
 * some pending and none terminal → pending; all handed off (sent or terminal) → sent; otherwise → processing.
 */
export function aggregateStatus(statuses: readonly RecipientStatus[]): AggregateStatus {
  let anyPending = false;
  let anyTerminal = false;
  let anyDelivered = false;
  let allTerminal = true;
  let allHandedOff = true;
  for (const status of statuses) {
    if (status === 'pending') anyPending = true;
    if (status === 'delivered') anyDelivered = true;
    if (isTerminal(status)) anyTerminal = true;
    else allTerminal = false;
    if (STATUS_RANK[status] < STATUS_RANK.sent) allHandedOff = false;
  }
  if (statuses.length > 0 && allTerminal) return anyDelivered ? 'delivered' : 'failed';
  if (anyPending && !anyTerminal) return 'pending';
  if (allHandedOff && statuses.length > 0) return 'sent';
  return statuses.length === 0 ? 'pending' : 'processing';
}
