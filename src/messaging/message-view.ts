import { toIsoUtc } from '../libraries/clock/clock.js';
import type { MessageState, Occurrence } from './message-behaviour.js';
import { aggregateStatus, countRecipients, INITIAL_RECIPIENT_STATE, type AggregateStatus, type RecipientState } from './recipient-state.js';

/** `GET /status` data: the contract's Message, plus `sending_type`, `schedule` and `occurrences[]` (additive). */
export interface MessageStatusView {
  readonly message_id: string;
  readonly status: AggregateStatus | 'scheduled';
  readonly total_recipients: number;
  readonly delivered: number;
  readonly failed: number;
  readonly pending: number;
  /** Recipients of a schedule cancelled before anything went (additive). */
  readonly cancelled: number;
  /** Recipients of a schedule whose every occurrence was skipped while paused (additive). */
  readonly skipped: number;
  readonly created_at: string;
  readonly updated_at: string;
  readonly recipients: readonly RecipientView[];
  readonly sending_type: 'immediate' | 'scheduled' | 'recurring';
  readonly schedule: ScheduleView | null;
  readonly occurrences: readonly OccurrenceView[];
}

export interface RecipientView {
  readonly recipient_index: number;
  readonly phone: string;
  /** A recipient state, or `cancelled` / `skipped` when the schedule ended without ever dispatching. */
  readonly status: RecipientState['status'] | NotSent;
  readonly carrier_status: string | null;
  readonly segments: number;
  readonly carrier: string;
  readonly error_code: string | null;
  readonly error_message: string | null;
  readonly updated_at: string | null;
  readonly sent_at: string | null;
  readonly delivered_at: string | null;
  readonly failed_at: string | null;
}

export interface ScheduleView {
  readonly type: 'scheduled' | 'recurring';
  readonly state: 'active' | 'paused' | 'cancelled' | 'completed';
  readonly next_occurrence_at: string | null;
  readonly occurrences_total: number;
  readonly occurrences_dispatched: number;
  readonly occurrences_remaining: number;
}

export interface OccurrenceView {
  readonly occurrence_index: number;
  /** `scheduled` before dispatch, the aggregate status after, `skipped` or `cancelled` when it never went. */
  readonly status: AggregateStatus | 'scheduled' | 'skipped' | 'cancelled';
  readonly scheduled_at: string;
  readonly delivered: number;
  readonly failed: number;
  readonly pending: number;
  readonly cancelled: number;
  readonly skipped: number;
}

/** How an occurrence that never went ended: its recipients are neither pending nor terminal. */
type NotSent = 'cancelled' | 'skipped';

/** The view's counters: `delivered + failed + pending + cancelled + skipped = total_recipients`. */
type Counters = Pick<OccurrenceView, 'delivered' | 'failed' | 'pending' | 'cancelled' | 'skipped'>;

const iso = (ms: number | null): string | null => (ms === null ? null : toIsoUtc(ms));

function occurrenceStatus(occurrence: Occurrence): OccurrenceView['status'] {
  if (occurrence.status === 'dispatched' && occurrence.recipients) return aggregateStatus(occurrence.recipients.map((r) => r.status));
  return occurrence.status === 'dispatched' ? 'pending' : occurrence.status;
}

const NO_RECIPIENTS: Counters = { delivered: 0, failed: 0, pending: 0, cancelled: 0, skipped: 0 };

/**
 * The counters of one occurrence. Only a dispatched occurrence has recipient states; one still to come counts its
 * recipients as pending, and a cancelled or skipped one counts them as such: they will never be sent.
 */
function occurrenceCounters(occurrence: Occurrence, total: number): Counters {
  const none = NO_RECIPIENTS;
  switch (occurrence.status) {
    case 'dispatched':
      return { ...none, ...countRecipients((occurrence.recipients ?? []).map((r) => r.status)) };
    case 'scheduled':
      return { ...none, pending: total };
    case 'cancelled':
      return { ...none, cancelled: total };
    case 'skipped':
      return { ...none, skipped: total };
  }
}

/**
 * Which occurrence recipients[] and the message's counters show: the most recent dispatched one; before any
 * dispatch, none (every recipient pending) while the schedule may still send, and its last occurrence once it
 * ended without sending (all cancelled or skipped).
 */
function shownOccurrence(state: MessageState): Occurrence | null {
  const latest = [...state.occurrences].reverse().find((o) => o.status === 'dispatched' && o.recipients);
  if (latest) return latest;
  const last = state.occurrences.at(-1);
  return last && (last.status === 'cancelled' || last.status === 'skipped') ? last : null;
}

/** Views already built, by state: a message's state is immutable, and status is asked far more often than it changes. */
const viewsByState = new WeakMap<MessageState, MessageStatusView>();

/** The contract's Message shape of a state (built once per state object, then shared: callers must not change it). */
export function messageStatusView(state: MessageState): MessageStatusView {
  const known = viewsByState.get(state);
  if (known) return known;
  const view = buildStatusView(state);
  viewsByState.set(state, view);
  return view;
}

function buildStatusView(state: MessageState): MessageStatusView {
  const spec = state.spec;
  if (!spec) throw new Error('status of a message that was never created');
  // for a schedule, recipients and the aggregate reflect the most recent dispatched occurrence
  const shown = shownOccurrence(state);
  const latest = shown?.status === 'dispatched' ? shown : null;
  const notSent: NotSent | null = shown?.status === 'cancelled' || shown?.status === 'skipped' ? shown.status : null;
  const recipientStates = latest?.recipients ?? spec.recipients.map(() => INITIAL_RECIPIENT_STATE);
  const counters = shown ? occurrenceCounters(shown, spec.recipients.length) : { ...NO_RECIPIENTS, pending: spec.recipients.length };
  const recipients = spec.recipients.map((recipient, i): RecipientView => {
    const r = recipientStates[i] ?? INITIAL_RECIPIENT_STATE;
    return {
      recipient_index: recipient.index,
      phone: recipient.phone,
      status: notSent ?? r.status,
      carrier_status: r.carrierStatus,
      segments: spec.segments,
      carrier: recipient.carrier,
      error_code: r.errorCode,
      error_message: r.errorMessage,
      updated_at: iso(r.updatedAt),
      sent_at: iso(r.sentAt),
      delivered_at: iso(r.deliveredAt),
      failed_at: iso(r.failedAt),
    };
  });
  const dispatched = state.occurrences.filter((o) => o.status === 'dispatched').length;
  const remaining = state.occurrences.filter((o) => o.status === 'scheduled');
  const schedule: ScheduleView | null =
    spec.sendingType === 'immediate' || state.schedule === null
      ? null
      : {
          type: spec.sendingType,
          state: state.schedule,
          next_occurrence_at: state.schedule === 'active' || state.schedule === 'paused' ? iso(remaining[0]?.scheduledAt ?? null) : null,
          occurrences_total: state.occurrences.length,
          occurrences_dispatched: dispatched,
          occurrences_remaining: remaining.length,
        };
  return {
    message_id: spec.messageId,
    status: latest ? aggregateStatus(recipientStates.map((r) => r.status)) : spec.sendingType === 'immediate' ? 'pending' : 'scheduled',
    total_recipients: spec.recipients.length,
    ...counters,
    created_at: toIsoUtc(state.createdAt),
    updated_at: toIsoUtc(state.updatedAt),
    recipients,
    sending_type: spec.sendingType,
    schedule,
    occurrences:
      spec.sendingType === 'immediate'
        ? []
        : state.occurrences.map((o) => ({
            occurrence_index: o.index,
            status: occurrenceStatus(o),
            scheduled_at: toIsoUtc(o.scheduledAt),
            ...occurrenceCounters(o, spec.recipients.length),
          })),
  };
}
