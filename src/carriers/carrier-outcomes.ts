import { ERROR_CATALOGUE, isCarrierErrorCode } from '../libraries/errors/error-catalogue.js';

/**
 * What a connector can report about one dispatch (docs/carrier-protocol.md). `processing` means the connector
 * picked the job up; the others are the message centre's and the network's verdicts.
 */
export const CARRIER_STATUSES = [
  'processing',
  'accepted',
  'enroute',
  'delivered',
  'undelivered',
  'rejected',
  'expired',
  'failed',
  'partially_delivered',
  'delivery_unknown',
] as const;
export type CarrierStatus = (typeof CARRIER_STATUSES)[number];

/** The states a recipient moves through (README "Interpretations"): the precise carrier outcome lives in carrier_status. */
export const RECIPIENT_STATUSES = ['pending', 'processing', 'sent', 'delivered', 'failed'] as const;
export type RecipientStatus = (typeof RECIPIENT_STATUSES)[number];

export type TerminalStatus = 'delivered' | 'failed';

export const EVENT_OF_STATUS = {
  processing: 'sms.processing',
  sent: 'sms.sent',
  delivered: 'sms.delivered',
  failed: 'sms.failed',
} as const satisfies Record<Exclude<RecipientStatus, 'pending'>, string>;

export interface CarrierOutcome {
  /** The recipient status this report leads to. */
  readonly status: Exclude<RecipientStatus, 'pending'>;
  /** States a report of this kind proves were passed through (a delivered handset was sent to). */
  readonly implies: readonly Exclude<RecipientStatus, 'pending'>[];
  /** Order of carrier statuses: a report only counts when it is further along than the last one. */
  readonly rank: number;
  /** The catalogue code of a failure; `failed` may carry the connector's own 15xx code instead. */
  readonly errorCode: string | null;
}

const TERMINAL_RANK = 4;
const SENT_THEN: readonly ('processing' | 'sent')[] = ['processing', 'sent'];

export const CARRIER_OUTCOMES: Readonly<Record<CarrierStatus, CarrierOutcome>> = {
  processing: { status: 'processing', implies: [], rank: 1, errorCode: null },
  accepted: { status: 'sent', implies: ['processing'], rank: 2, errorCode: null },
  enroute: { status: 'sent', implies: ['processing'], rank: 3, errorCode: null },
  delivered: { status: 'delivered', implies: SENT_THEN, rank: TERMINAL_RANK, errorCode: null },
  undelivered: { status: 'failed', implies: SENT_THEN, rank: TERMINAL_RANK, errorCode: ERROR_CATALOGUE.UNDELIVERED.code },
  expired: { status: 'failed', implies: SENT_THEN, rank: TERMINAL_RANK, errorCode: ERROR_CATALOGUE.EXPIRED.code },
  delivery_unknown: { status: 'failed', implies: SENT_THEN, rank: TERMINAL_RANK, errorCode: ERROR_CATALOGUE.DELIVERY_UNKNOWN.code },
  partially_delivered: {
    status: 'failed',
    implies: SENT_THEN,
    rank: TERMINAL_RANK,
    errorCode: ERROR_CATALOGUE.PARTIALLY_DELIVERED.code,
  },
  rejected: { status: 'failed', implies: ['processing'], rank: TERMINAL_RANK, errorCode: ERROR_CATALOGUE.REJECTED.code },
  failed: { status: 'failed', implies: ['processing'], rank: TERMINAL_RANK, errorCode: ERROR_CATALOGUE.CARRIER_FAILURE.code },
};

/** A later resend may succeed after these codes (`retryable` in `sms.failed`); not after the others. */
const RETRYABLE_CODES: ReadonlySet<string> = new Set([
  ERROR_CATALOGUE.UNDELIVERED.code,
  ERROR_CATALOGUE.SMS_TIMEOUT.code,
  ERROR_CATALOGUE.EXPIRED.code,
  ERROR_CATALOGUE.DELIVERY_UNKNOWN.code,
]);

export function isRetryable(errorCode: string): boolean {
  return RETRYABLE_CODES.has(errorCode);
}

export function isCarrierStatus(value: unknown): value is CarrierStatus {
  return typeof value === 'string' && (CARRIER_STATUSES as readonly string[]).includes(value);
}

/**
 * The error code a failed report ends with: the fixed code of its status, except `failed`, which keeps a
 * connector's own 15xx code when it gives a valid one.
 */
export function failureCode(status: CarrierStatus, reportedCode: string | null | undefined): string | null {
  const outcome = CARRIER_OUTCOMES[status];
  if (outcome.status !== 'failed') return null;
  if (status === 'failed' && reportedCode && isCarrierErrorCode(reportedCode)) return reportedCode;
  return outcome.errorCode;
}

const CATALOGUE_MESSAGES = new Map(Object.values(ERROR_CATALOGUE).map((entry) => [entry.code as string, entry.message as string]));

export function failureMessage(errorCode: string, reported?: string | null): string {
  if (reported && reported.trim() !== '') return reported;
  return CATALOGUE_MESSAGES.get(errorCode) ?? 'The carrier reported a failure.';
}
