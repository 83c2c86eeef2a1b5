import { add, ZERO } from '../../pricing/money.js';
import type { RecipientStatus } from '../../carriers/carrier-outcomes.js';
import { applySignal, INITIAL_RECIPIENT_STATE, isTerminal, type RecipientEventType, type RecipientState } from '../recipient-state.js';
import type { MessageEvent, MessageSpec, MessageState, Occurrence, OccurrenceStatus } from './message-types.js';

/** The message's fold: its state is its journal's events applied in order from EMPTY_MESSAGE. */

export const EMPTY_MESSAGE: MessageState = {
  created: false,
  spec: null,
  createdAt: 0,
  updatedAt: 0,
  occurrences: [],
  schedule: null,
  refunded: ZERO,
};

function initialOccurrences(spec: MessageSpec, at: number): Occurrence[] {
  if (spec.sendingType === 'immediate') return [{ index: 0, scheduledAt: at, status: 'scheduled', dispatchedAt: null, recipients: null }];
  return spec.occurrences.map((scheduledAt, index) => ({ index, scheduledAt, status: 'scheduled', dispatchedAt: null, recipients: null }));
}

function replaceAt<T>(items: readonly T[], index: number, value: T): T[] {
  const copy = [...items];
  copy[index] = value;
  return copy;
}

export function applyMessageEvent(state: MessageState, event: MessageEvent): MessageState {
  switch (event.type) {
    case 'message_created':
      return {
        ...state,
        created: true,
        spec: event.spec,
        createdAt: event.at,
        updatedAt: event.at,
        occurrences: initialOccurrences(event.spec, event.at),
        schedule: event.spec.sendingType === 'immediate' ? null : 'active',
      };
    case 'occurrence_dispatched': {
      const occurrence = state.occurrences[event.occurrence];
      if (!occurrence || !state.spec) return state;
      const recipients = state.spec.recipients.map(() => INITIAL_RECIPIENT_STATE);
      const dispatched: Occurrence = { ...occurrence, status: 'dispatched', dispatchedAt: event.at, recipients };
      return completeIfDone({ ...state, occurrences: replaceAt(state.occurrences, event.occurrence, dispatched), updatedAt: event.at });
    }
    case 'recipient_signal': {
      const occurrence = state.occurrences[event.occurrence];
      const current = occurrence?.recipients?.[event.recipient];
      if (!occurrence?.recipients || !current) return state;
      const next = applySignal(current, event.signal).state;
      const updated: Occurrence = { ...occurrence, recipients: replaceAt(occurrence.recipients, event.recipient, next) };
      return { ...state, occurrences: replaceAt(state.occurrences, event.occurrence, updated), updatedAt: event.at };
    }
    case 'schedule_paused':
      return { ...state, schedule: 'paused', updatedAt: event.at };
    case 'schedule_resumed':
      return completeIfDone({ ...state, schedule: 'active', updatedAt: event.at });
    case 'occurrences_skipped':
      return completeIfDone({
        ...withOccurrences(state, event.occurrences, 'skipped'),
        refunded: add(state.refunded, event.refund),
        updatedAt: event.at,
      });
    case 'schedule_cancelled':
      return {
        ...withOccurrences(state, event.occurrences, 'cancelled'),
        schedule: 'cancelled',
        refunded: add(state.refunded, event.refund),
        updatedAt: event.at,
      };
  }
}

/**
 * The events of one record folded at once, equal to folding them one by one: each run of recipient signals copies
 * the recipients of the occurrences it touches once, not once per signal (a batch of receipts for a message of
 * 1 000 recipients would otherwise copy 1 000 entries per receipt).
 */
export function applyMessageEvents(state: MessageState, events: readonly MessageEvent[]): MessageState {
  let working = state;
  let run: Extract<MessageEvent, { type: 'recipient_signal' }>[] = [];
  const flush = (): void => {
    if (run.length > 0) working = applyRecipientSignals(working, run);
    run = [];
  };
  for (const event of events) {
    if (event.type === 'recipient_signal') {
      run.push(event);
      continue;
    }
    flush();
    working = applyMessageEvent(working, event);
  }
  flush();
  return working;
}

function applyRecipientSignals(state: MessageState, signals: readonly Extract<MessageEvent, { type: 'recipient_signal' }>[]): MessageState {
  const copies = new Map<number, RecipientState[]>();
  let updatedAt = state.updatedAt;
  for (const event of signals) {
    const occurrence = state.occurrences[event.occurrence];
    if (!occurrence?.recipients || !occurrence.recipients[event.recipient]) continue;
    let recipients = copies.get(event.occurrence);
    if (!recipients) {
      recipients = [...occurrence.recipients];
      copies.set(event.occurrence, recipients);
    }
    const current = recipients[event.recipient];
    if (!current) continue;
    recipients[event.recipient] = applySignal(current, event.signal).state;
    updatedAt = event.at;
  }
  if (copies.size === 0) return state;
  const occurrences = state.occurrences.map((occurrence) => {
    const recipients = copies.get(occurrence.index);
    return recipients ? { ...occurrence, recipients } : occurrence;
  });
  return { ...state, occurrences, updatedAt };
}

const STATUS_OF_EVENT: Readonly<Record<RecipientEventType, Exclude<RecipientStatus, 'pending'>>> = {
  'sms.processing': 'processing',
  'sms.sent': 'sent',
  'sms.delivered': 'delivered',
  'sms.failed': 'failed',
};

/**
 * The statuses recipients entered through `events` (one journal record of the message), in order, from `state`
 * (the message before the record): one per status a recipient moved into, the states a report skipped included
 * (a delivered report on a pending recipient enters processing, sent and delivered), exactly the steps its webhook
 * events name, whether or not those events were recorded for a webhook. A signal that moves no status (an enroute
 * report after accepted) enters none.
 */
export function recipientTransitions(state: MessageState, events: readonly MessageEvent[]): Exclude<RecipientStatus, 'pending'>[] {
  const entered: Exclude<RecipientStatus, 'pending'>[] = [];
  let working = state;
  // recipients as the signals so far left them, by `occurrence:recipient`; folded into `working` before any other event
  const latest = new Map<string, RecipientState>();
  let signals: MessageEvent[] = [];
  for (const event of events) {
    if (event.type !== 'recipient_signal') {
      if (signals.length > 0) working = applyMessageEvents(working, signals);
      signals = [];
      latest.clear();
      working = applyMessageEvent(working, event);
      continue;
    }
    const key = `${event.occurrence}:${event.recipient}`;
    const current = latest.get(key) ?? working.occurrences[event.occurrence]?.recipients?.[event.recipient];
    if (!current) continue;
    const transition = applySignal(current, event.signal);
    latest.set(key, transition.state);
    signals.push(event);
    for (const type of transition.events) entered.push(STATUS_OF_EVENT[type]);
  }
  return entered;
}

export function withOccurrences(state: MessageState, indexes: readonly number[], status: OccurrenceStatus): MessageState {
  const chosen = new Set(indexes);
  return { ...state, occurrences: state.occurrences.map((o) => (chosen.has(o.index) ? { ...o, status } : o)) };
}

/** A schedule with nothing left to dispatch is completed (unless it was cancelled). */
function completeIfDone(state: MessageState): MessageState {
  const open = state.schedule === 'active' || state.schedule === 'paused';
  return open && state.occurrences.every((o) => o.status !== 'scheduled') ? { ...state, schedule: 'completed' } : state;
}

/** Nothing left to dispatch and every recipient final: only late duplicates and status reads can come. */
export function isSettled(state: MessageState): boolean {
  return (
    !state.created || state.occurrences.every((o) => o.status !== 'scheduled' && (o.recipients ?? []).every((r) => isTerminal(r.status)))
  );
}
