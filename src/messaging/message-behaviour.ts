import type { Behaviour, BehaviourContext, COMPACT_JOURNAL, CompactJournalReply, Effect } from '../libraries/actors/behaviour.js';
import type { CarrierStatus, RecipientStatus } from '../carriers/carrier-outcomes.js';
import { add, multiply, toDecimalNumber, ZERO, type Money } from '../pricing/money.js';
import type { RecurrenceRule } from '../scheduling/recurrence.js';
import { buildEvent, recipientEventData, type EventType, type WebhookEvent } from '../webhooks/event-envelope.js';
import { toIsoUtc } from '../libraries/clock/clock.js';
import { ALWAYS_RECORD, type WebhookPresence } from '../webhooks/webhook-presence.js';
import { applySignal, INITIAL_RECIPIENT_STATE, isTerminal, type RecipientEventType, type RecipientSignal, type RecipientState } from './recipient-state.js';
import type { Encoding } from './segments.js';
import type { SendingType } from './send-request.js';

/**
 * MessageActor (`message:<messageId>`): one submitted message, all its recipients and occurrences. Every state
 * change the contract turns into a webhook event writes an outbox entry with the event (its id fixed now) in the
 * same append, when the event can go somewhere (webhook-presence.ts); so does every dispatch to a carrier.
 */

export interface MessageRecipient {
  readonly index: number;
  readonly phone: string;
  readonly price: Money;
  readonly carrier: string;
}

export type OccurrenceStatus = 'scheduled' | 'dispatched' | 'skipped' | 'cancelled';

export interface Occurrence {
  readonly index: number;
  readonly scheduledAt: number;
  readonly status: OccurrenceStatus;
  readonly dispatchedAt: number | null;
  /** Per recipient, once dispatched. */
  readonly recipients: readonly RecipientState[] | null;
}

export type ScheduleState = 'active' | 'paused' | 'cancelled' | 'completed';

export interface MessageSpec {
  readonly messageId: string;
  readonly merchantId: string;
  readonly keyId: string;
  readonly text: string;
  readonly senderId: string | null;
  readonly encoding: Encoding;
  readonly segments: number;
  readonly callbackUrl: string | null;
  readonly currency: string;
  readonly sendingType: SendingType;
  readonly recipients: readonly MessageRecipient[];
  /** Occurrence instants for scheduled and recurring sends; empty for immediate ones. */
  readonly occurrences: readonly number[];
  readonly recurrence: RecurrenceRule | null;
  readonly totalMessages: number;
  readonly totalCost: Money;
  readonly costPerOccurrence: Money;
}

export interface MessageState {
  readonly created: boolean;
  readonly spec: MessageSpec | null;
  readonly createdAt: number;
  readonly updatedAt: number;
  readonly occurrences: readonly Occurrence[];
  readonly schedule: ScheduleState | null;
  readonly refunded: Money;
}

export type MessageEvent =
  | { readonly type: 'message_created'; readonly spec: MessageSpec; readonly at: number }
  | { readonly type: 'occurrence_dispatched'; readonly occurrence: number; readonly at: number }
  | { readonly type: 'recipient_signal'; readonly occurrence: number; readonly recipient: number; readonly signal: RecipientSignal; readonly at: number }
  | { readonly type: 'schedule_paused'; readonly at: number }
  | { readonly type: 'schedule_resumed'; readonly at: number }
  /** Occurrences that will never go, and the cost returned for them. */
  | { readonly type: 'occurrences_skipped'; readonly occurrences: readonly number[]; readonly refund: Money; readonly at: number }
  | { readonly type: 'schedule_cancelled'; readonly occurrences: readonly number[]; readonly refund: Money; readonly at: number };

export interface CarrierReceipt {
  readonly occurrence: number;
  readonly recipient: number;
  readonly status: CarrierStatus;
  /** When the carrier says it happened. */
  readonly at: number;
  readonly errorCode?: string | null;
  readonly errorMessage?: string | null;
  /** The carrier's own words for the outcome (`smpp:UNDELIV err:001`); absent: the status is the recipient's carrier_status. */
  readonly carrierStatus?: string;
}

export type MessageCommand =
  | { readonly type: 'create'; readonly spec: MessageSpec }
  | { readonly type: 'dispatch_occurrence'; readonly occurrence: number }
  /** The scheduler's tick: dispatch every occurrence whose time has come; answers when to come back. */
  | { readonly type: 'dispatch_due' }
  /** 24 hours after an occurrence left: recipients without a final receipt fail with 1503. */
  | { readonly type: 'receipt_timeout'; readonly occurrence: number }
  | { readonly type: 'apply_receipt'; readonly receipt: CarrierReceipt }
  /** Several receipts of this message applied in order, journaled as one record (a connector's receipt batch). */
  | { readonly type: 'apply_receipts'; readonly receipts: readonly CarrierReceipt[] }
  | { readonly type: 'status'; readonly merchantId: string }
  | { readonly type: 'cancel'; readonly merchantId: string }
  | { readonly type: 'pause'; readonly merchantId: string }
  | { readonly type: 'resume'; readonly merchantId: string }
  | { readonly type: typeof COMPACT_JOURNAL };

export interface SendReceipt {
  readonly message_id: string;
  readonly total_recipients: number;
  readonly total_messages: number;
  readonly total_cost: number;
  readonly currency: string;
  readonly status: 'pending';
}

type NotFound = { readonly ok: false; readonly code: 'NOT_FOUND' };

/** What one receipt did: `changed` false for a duplicate or stale one, which emits nothing. */
export interface ReceiptOutcome {
  readonly ok: true;
  readonly changed: boolean;
  readonly events: readonly EventType[];
}

export interface MessageReplies {
  readonly create: { readonly ok: true; readonly created: boolean; readonly receipt: SendReceipt };
  readonly dispatch_occurrence:
    | { readonly ok: true; readonly dispatched: boolean }
    | NotFound
    | { readonly ok: false; readonly code: 'INVALID_STATE'; readonly state: OccurrenceStatus };
  readonly apply_receipt: ReceiptOutcome | NotFound;
  /** One outcome per receipt, in the order given; NOT_FOUND for a receipt naming a dispatch the message does not have. */
  readonly apply_receipts: { readonly ok: true; readonly outcomes: readonly (ReceiptOutcome | NotFound)[] } | NotFound;
  /** `lateMs`: how long after its instant the earliest occurrence dispatched now was due (null: none dispatched). */
  readonly dispatch_due: { readonly ok: true; readonly dispatched: readonly number[]; readonly next: number | null; readonly lateMs?: number | null } | NotFound;
  readonly receipt_timeout: { readonly ok: true; readonly failed: number } | NotFound;
  readonly status: { readonly ok: true; readonly state: MessageState } | NotFound;
  readonly cancel: ManagementReply;
  readonly pause: ManagementReply;
  readonly resume: ManagementReply;
  readonly compact_journal: CompactJournalReply;
}

/** Cancel, pause and resume: the state after, and what was refunded by this call. */
export type ManagementReply =
  | { readonly ok: true; readonly state: MessageState; readonly refunded: Money; readonly adjustment: WalletAdjustment | null }
  | NotFound
  | { readonly ok: false; readonly code: 'INVALID_STATE' };

/** Payload of a `wallet.adjust` outbox entry: return money for occurrences that never go, and/or close the charge. */
export interface WalletAdjustment {
  readonly merchantId: string;
  readonly chargeId: string;
  readonly refundId: string;
  readonly amount: Money;
  /** No refund can follow: the wallet forgets the charge. */
  readonly settle: boolean;
}

/** Payload of a `webhook.event` outbox entry: the event and where it goes. */
export interface WebhookOutboxPayload {
  readonly merchantId: string;
  readonly keyId: string;
  readonly callbackUrl: string | null;
  readonly event: WebhookEvent;
}

/** Payload of a `carrier.dispatch` outbox entry: one occurrence to every recipient. */
export interface DispatchOutboxPayload {
  readonly messageId: string;
  readonly merchantId: string;
  readonly occurrence: number;
  readonly senderId: string | null;
  readonly text: string;
  readonly encoding: Encoding;
  readonly segments: number;
  readonly recipients: readonly { readonly index: number; readonly phone: string; readonly carrier: string }[];
}

export const WEBHOOK_TOPIC = 'webhook.event';
export const DISPATCH_TOPIC = 'carrier.dispatch';
export const WALLET_ADJUST_TOPIC = 'wallet.adjust';
/** Asks the scheduler to wake the message at its first occurrence. */
export const SCHEDULE_REGISTER_TOPIC = 'schedule.register';
/** Left in the outbox at dispatch; carried out once the receipt timeout (24 h) has passed. */
export const RECEIPT_TIMEOUT_TOPIC = 'receipt.timeout';

export interface ScheduleRegistration {
  readonly merchantId: string;
  readonly messageId: string;
  readonly at: number;
}

export interface ReceiptDeadline {
  readonly merchantId: string;
  readonly messageId: string;
  readonly occurrence: number;
}
const NOT_FOUND: NotFound = { ok: false, code: 'NOT_FOUND' };

export function sendReceipt(spec: MessageSpec): SendReceipt {
  return {
    message_id: spec.messageId,
    total_recipients: spec.recipients.length,
    total_messages: spec.totalMessages,
    total_cost: toDecimalNumber(spec.totalCost),
    currency: spec.currency,
    status: 'pending',
  };
}

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
      return completeIfDone({ ...withOccurrences(state, event.occurrences, 'skipped'), refunded: add(state.refunded, event.refund), updatedAt: event.at });
    case 'schedule_cancelled':
      return { ...withOccurrences(state, event.occurrences, 'cancelled'), schedule: 'cancelled', refunded: add(state.refunded, event.refund), updatedAt: event.at };
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

function withOccurrences(state: MessageState, indexes: readonly number[], status: OccurrenceStatus): MessageState {
  const chosen = new Set(indexes);
  return { ...state, occurrences: state.occurrences.map((o) => (chosen.has(o.index) ? { ...o, status } : o)) };
}

/** A schedule with nothing left to dispatch is completed (unless it was cancelled). */
function completeIfDone(state: MessageState): MessageState {
  const open = state.schedule === 'active' || state.schedule === 'paused';
  return open && state.occurrences.every((o) => o.status !== 'scheduled') ? { ...state, schedule: 'completed' } : state;
}

function webhookEffect(spec: MessageSpec, event: WebhookEvent): Effect {
  const payload: WebhookOutboxPayload = { merchantId: spec.merchantId, keyId: spec.keyId, callbackUrl: spec.callbackUrl, event };
  return { id: event.event_id, topic: WEBHOOK_TOPIC, payload };
}

/** Events are recorded when they can go somewhere: the message's callback_url, or a key that may have a webhook. */
type EventsWanted = (spec: MessageSpec) => boolean;

/** What leaves with an occurrence: the dispatch, and the deadline for its receipts. */
function dispatchEffects(spec: MessageSpec, occurrence: number): Effect[] {
  const deadline: ReceiptDeadline = { merchantId: spec.merchantId, messageId: spec.messageId, occurrence };
  return [dispatchEffect(spec, occurrence), { id: receiptDeadlineId(spec.messageId, occurrence), topic: RECEIPT_TIMEOUT_TOPIC, payload: deadline }];
}

/** The outbox id of an occurrence's receipt deadline. */
function receiptDeadlineId(messageId: string, occurrence: number): string {
  return `timeout:${messageId}:${occurrence}`;
}

/**
 * The receipt deadlines receipts have made moot: those of the occurrences `occurrences` in which every recipient is
 * now final, as `latest` (the recipients a batch of receipts changed, by `occurrence:recipient`) over `state` tells.
 * Retired with the receipts' record, they leave the outbox at once instead of a day later.
 */
function mootDeadlines(state: MessageState, messageId: string, occurrences: ReadonlySet<number>, latest: ReadonlyMap<string, RecipientState>): string[] {
  const moot: string[] = [];
  for (const index of occurrences) {
    const recipients = state.occurrences[index]?.recipients;
    // a recipient final before the batch needs no look-up; the first one still waiting ends the scan
    const final = (recipient: RecipientState, i: number): boolean => {
      if (isTerminal(recipient.status)) return true;
      const now = latest.get(`${index}:${i}`);
      return now !== undefined && isTerminal(now.status);
    };
    if (recipients?.every(final)) moot.push(receiptDeadlineId(messageId, index));
  }
  return moot;
}

function dispatchEffect(spec: MessageSpec, occurrence: number): Effect {
  const payload: DispatchOutboxPayload = {
    messageId: spec.messageId,
    merchantId: spec.merchantId,
    occurrence,
    senderId: spec.senderId,
    text: spec.text,
    encoding: spec.encoding,
    segments: spec.segments,
    recipients: spec.recipients.map((r) => ({ index: r.index, phone: r.phone, carrier: r.carrier })),
  };
  // one dispatch per occurrence: a relay that repeats it repeats the same dispatch ids
  return { id: `dispatch:${spec.messageId}:${occurrence}`, topic: DISPATCH_TOPIC, payload };
}

function queuedEffects(spec: MessageSpec, context: BehaviourContext, wanted: EventsWanted): Effect[] {
  if (!wanted(spec)) return [];
  const firstOccurrence = spec.sendingType === 'immediate' ? null : (spec.occurrences[0] ?? null);
  const event = buildEvent(
    'sms.queued',
    spec.messageId,
    {
      total_recipients: spec.recipients.length,
      total_messages: spec.totalMessages,
      total_cost: toDecimalNumber(spec.totalCost),
      currency: spec.currency,
      scheduled_at: firstOccurrence === null ? null : toIsoUtc(firstOccurrence),
    },
    context.newId(),
    context.now,
  );
  return [webhookEffect(spec, event)];
}

/** The instant an event reports (`sent_at`, `delivered_at`, `failed_at`): when the carrier says it happened. */
function eventInstant(type: Exclude<EventType, 'sms.queued'>, recipient: RecipientState): number | null {
  if (type === 'sms.sent') return recipient.sentAt;
  if (type === 'sms.delivered') return recipient.deliveredAt;
  if (type === 'sms.failed') return recipient.failedAt;
  return null;
}

/** Recipient events of one transition, each with its own id fixed now. */
function recipientEffects(
  state: MessageState,
  occurrenceIndex: number,
  recipientIndex: number,
  next: RecipientState,
  types: readonly Exclude<EventType, 'sms.queued'>[],
  context: BehaviourContext,
  wanted: EventsWanted,
): Effect[] {
  const spec = state.spec;
  const occurrence = state.occurrences[occurrenceIndex];
  const recipient = spec?.recipients[recipientIndex];
  if (!spec || !occurrence || !recipient || !wanted(spec)) return [];
  return types.map((type) => {
    const at = eventInstant(type, next) ?? context.now;
    const data = recipientEventData({
      type,
      phone: recipient.phone,
      carrier: recipient.carrier,
      recipientIndex,
      occurrence: spec.sendingType === 'immediate' ? null : { index: occurrenceIndex, scheduledAt: occurrence.scheduledAt },
      at,
      segments: spec.segments,
      errorCode: next.errorCode,
      errorMessage: next.errorMessage,
    });
    return webhookEffect(spec, buildEvent(type, spec.messageId, data, context.newId(), context.now));
  });
}

function adjustment(spec: MessageSpec, refundId: string, amount: Money, settle: boolean): WalletAdjustment {
  return { merchantId: spec.merchantId, chargeId: spec.messageId, refundId, amount, settle };
}

function adjustmentEffect(adjust: WalletAdjustment): Effect {
  return { id: `adjust:${adjust.chargeId}:${adjust.refundId}`, topic: WALLET_ADJUST_TOPIC, payload: adjust };
}

/** Occurrences still waiting whose time has come (or passed). */
function dueWhilePaused(state: MessageState, now: number): number[] {
  return state.occurrences.filter((o) => o.status === 'scheduled' && o.scheduledAt <= now).map((o) => o.index);
}

/** Skips `indexes` and refunds them; settles the charge when nothing else can be refunded afterwards. */
function skip(state: MessageState, spec: MessageSpec, indexes: readonly number[], now: number): { events: MessageEvent[]; adjust: WalletAdjustment | null } {
  if (indexes.length === 0) return { events: [], adjust: null };
  const refund = multiply(spec.costPerOccurrence, indexes.length);
  const event: MessageEvent = { type: 'occurrences_skipped', occurrences: indexes, refund, at: now };
  const after = applyMessageEvent(state, event);
  return { events: [event], adjust: adjustment(spec, `skip:${indexes.join('-')}`, refund, after.schedule === 'completed') };
}

type ManagementDecision = { events: MessageEvent[]; effects?: Effect[]; reply: ManagementReply };

function manage(
  state: MessageState,
  merchantId: string,
  decideFor: (state: MessageState, spec: MessageSpec) => { events: MessageEvent[]; adjust: WalletAdjustment | null } | 'invalid',
): ManagementDecision {
  if (!state.created || !state.spec || state.spec.merchantId !== merchantId) return { events: [], reply: NOT_FOUND };
  if (state.spec.sendingType === 'immediate') return { events: [], reply: { ok: false, code: 'INVALID_STATE' } };
  const decided = decideFor(state, state.spec);
  if (decided === 'invalid') return { events: [], reply: { ok: false, code: 'INVALID_STATE' } };
  const after = decided.events.reduce(applyMessageEvent, state);
  return {
    events: decided.events,
    effects: decided.adjust ? [adjustmentEffect(decided.adjust)] : [],
    reply: { ok: true, state: after, refunded: decided.adjust?.amount ?? ZERO, adjustment: decided.adjust },
  };
}

export const EMPTY_MESSAGE: MessageState = {
  created: false,
  spec: null,
  createdAt: 0,
  updatedAt: 0,
  occurrences: [],
  schedule: null,
  refunded: ZERO,
};

interface AppliedReceipt {
  readonly outcome: ReceiptOutcome | NotFound;
  /** The event to journal; null when the receipt changes nothing. */
  readonly event: MessageEvent | null;
  /** The recipient after the receipt, when it changed. */
  readonly next: RecipientState | null;
  readonly effects: readonly Effect[];
}

/**
 * One carrier receipt against the recipient as it is now (`latest`: as earlier receipts of the same batch left it):
 * the forward-only merge of recipient-state.ts.
 */
function applyReceipt(state: MessageState, receipt: CarrierReceipt, context: BehaviourContext, wanted: EventsWanted, latest?: RecipientState): AppliedReceipt {
  const current = latest ?? state.occurrences[receipt.occurrence]?.recipients?.[receipt.recipient];
  if (!current) return { outcome: NOT_FOUND, event: null, next: null, effects: [] };
  const signal: RecipientSignal = {
    type: 'carrier_report',
    status: receipt.status,
    at: receipt.at,
    errorCode: receipt.errorCode ?? null,
    errorMessage: receipt.errorMessage ?? null,
    ...(receipt.carrierStatus === undefined ? {} : { carrierStatus: receipt.carrierStatus }),
  };
  const transition = applySignal(current, signal);
  if (!transition.changed) return { outcome: { ok: true, changed: false, events: [] }, event: null, next: null, effects: [] };
  return {
    outcome: { ok: true, changed: true, events: transition.events },
    event: { type: 'recipient_signal', occurrence: receipt.occurrence, recipient: receipt.recipient, signal, at: context.now },
    next: transition.state,
    effects: recipientEffects(state, receipt.occurrence, receipt.recipient, transition.state, transition.events, context, wanted),
  };
}

/**
 * Receipts in arrival order: each sees the recipients as the earlier ones left them. Only recipients change, so they
 * are tracked on their own instead of folding a whole new state per receipt. The deadlines of occurrences the
 * receipts made final are retired.
 */
function applyReceipts(
  state: MessageState,
  spec: MessageSpec,
  receipts: readonly CarrierReceipt[],
  context: BehaviourContext,
  wanted: EventsWanted,
): { events: MessageEvent[]; effects: Effect[]; retire: string[]; outcomes: (ReceiptOutcome | NotFound)[] } {
  const events: MessageEvent[] = [];
  const effects: Effect[] = [];
  const outcomes: (ReceiptOutcome | NotFound)[] = [];
  const changed = new Map<string, RecipientState>();
  // occurrences in which a recipient became final: their deadline may be moot now
  const finalised = new Set<number>();
  for (const receipt of receipts) {
    const key = `${receipt.occurrence}:${receipt.recipient}`;
    const applied = applyReceipt(state, receipt, context, wanted, changed.get(key));
    outcomes.push(applied.outcome);
    if (!applied.event || !applied.next) continue;
    changed.set(key, applied.next);
    if (isTerminal(applied.next.status)) finalised.add(receipt.occurrence);
    effects.push(...applied.effects);
    events.push(applied.event);
  }
  const retire = finalised.size > 0 ? mootDeadlines(state, spec.messageId, finalised, changed) : [];
  return { events, effects, retire, outcomes };
}

/**
 * `keys` tells whether a message's key may have a webhook (webhook-presence.ts); without it every event is recorded
 * and the relay finds out where it goes.
 */
export function createMessageBehaviour(
  keys: Pick<WebhookPresence, 'mayHaveWebhook'> = ALWAYS_RECORD,
): Behaviour<MessageState, MessageCommand, MessageEvent, MessageReplies> {
  const wanted: EventsWanted = (spec) => spec.callbackUrl !== null || keys.mayHaveWebhook(spec.keyId);
  return {
    kind: 'message',
    initialState: () => EMPTY_MESSAGE,
    apply: applyMessageEvent,
    applyAll: applyMessageEvents,
    // message ids are generated at submit: a create wakes a message with no journal (save after a crash, when the
    // outbox relay repeats it and the runtime's conflict retry reads the journal)
    startsFresh: (command) => command.type === 'create',
    // a batch of receipts is as much work as that many single receipts
    weightOf: (command) => (command.type === 'apply_receipts' ? Math.max(1, command.receipts.length) : 1),
    // nothing left to dispatch and every recipient final: only late duplicates and status reads can come
    settled: (state) =>
      !state.created || state.occurrences.every((o) => o.status !== 'scheduled' && (o.recipients ?? []).every((r) => isTerminal(r.status))),
    handlers: {
      // answered by the actor host before any handler (behaviour.ts); a host without that support compacts nothing
      compact_journal: () => ({ events: [], reply: { compacted: false, reason: 'not_settled' } }),
      create: (state, command, context) => {
        if (state.created && state.spec) return { events: [], reply: { ok: true, created: false, receipt: sendReceipt(state.spec) } };
        const spec = command.spec;
        const events: MessageEvent[] = [{ type: 'message_created', spec, at: context.now }];
        const effects: Effect[] = queuedEffects(spec, context, wanted);
        if (spec.sendingType === 'immediate') {
          events.push({ type: 'occurrence_dispatched', occurrence: 0, at: context.now });
          effects.push(...dispatchEffects(spec, 0));
        } else {
          const registration: ScheduleRegistration = { merchantId: spec.merchantId, messageId: spec.messageId, at: spec.occurrences[0] ?? context.now };
          effects.push({ id: `schedule:${spec.messageId}`, topic: SCHEDULE_REGISTER_TOPIC, payload: registration });
        }
        return { events, effects, reply: { ok: true, created: true, receipt: sendReceipt(spec) } };
      },

      dispatch_due: (state, _command, context) => {
        const spec = state.spec;
        if (!spec) return { events: [], reply: NOT_FOUND };
        const waiting = state.occurrences.filter((o) => o.status === 'scheduled');
        const nextAfterNow = waiting.find((o) => o.scheduledAt > context.now)?.scheduledAt ?? null;
        if (state.schedule === 'paused') {
          // paused occurrences stay reserved until resume, unless none is left to come: then the schedule
          // completes and every skipped occurrence is refunded
          if (nextAfterNow !== null || waiting.length === 0) return { events: [], reply: { ok: true, dispatched: [], next: nextAfterNow } };
          const skipped = skip(state, spec, waiting.map((o) => o.index), context.now);
          return { events: skipped.events, effects: skipped.adjust ? [adjustmentEffect(skipped.adjust)] : [], reply: { ok: true, dispatched: [], next: null } };
        }
        if (state.schedule !== 'active') return { events: [], reply: { ok: true, dispatched: [], next: null } };
        // late occurrences (the node was down at their time) still go: a crash never skips one
        const dueOccurrences = waiting.filter((o) => o.scheduledAt <= context.now);
        const due = dueOccurrences.map((o) => o.index);
        const lateMs = dueOccurrences.length > 0 ? context.now - Math.min(...dueOccurrences.map((o) => o.scheduledAt)) : null;
        const events: MessageEvent[] = due.map((occurrence) => ({ type: 'occurrence_dispatched', occurrence, at: context.now }));
        const completes = events.reduce(applyMessageEvent, state).schedule === 'completed';
        const effects = [...due.flatMap((occurrence) => dispatchEffects(spec, occurrence)), ...(completes ? [adjustmentEffect(adjustment(spec, 'settle', ZERO, true))] : [])];
        return { events, effects, reply: { ok: true, dispatched: due, next: nextAfterNow, lateMs } };
      },

      receipt_timeout: (state, command, context) => {
        const occurrence = state.occurrences[command.occurrence];
        if (!state.spec || !occurrence?.recipients) return { events: [], reply: NOT_FOUND };
        const events: MessageEvent[] = [];
        const effects: Effect[] = [];
        let working = state;
        occurrence.recipients.forEach((recipient, index) => {
          const signal: RecipientSignal = { type: 'receipt_timeout', at: context.now };
          const transition = applySignal(recipient, signal);
          if (!transition.changed) return;
          const event: MessageEvent = { type: 'recipient_signal', occurrence: command.occurrence, recipient: index, signal, at: context.now };
          effects.push(...recipientEffects(working, command.occurrence, index, transition.state, transition.events, context, wanted));
          working = applyMessageEvent(working, event);
          events.push(event);
        });
        return { events, effects, reply: { ok: true, failed: events.length } };
      },

      dispatch_occurrence: (state, command, context) => {
        const occurrence = state.occurrences[command.occurrence];
        const spec = state.spec;
        if (!spec || !occurrence) return { events: [], reply: NOT_FOUND };
        // exactly once per occurrence: the journal says it left, so a repeated trigger changes nothing
        if (occurrence.status === 'dispatched') return { events: [], reply: { ok: true, dispatched: false } };
        if (occurrence.status !== 'scheduled') return { events: [], reply: { ok: false, code: 'INVALID_STATE', state: occurrence.status } };
        if (state.schedule === 'paused') {
          // paused occurrences stay reserved until resume, unless none is left to come: then the schedule
          // completes and every skipped occurrence is refunded
          const waiting = state.occurrences.filter((o) => o.status === 'scheduled');
          if (waiting.some((o) => o.scheduledAt > context.now)) return { events: [], reply: { ok: true, dispatched: false } };
          const skipped = skip(state, spec, waiting.map((o) => o.index), context.now);
          return { events: skipped.events, effects: skipped.adjust ? [adjustmentEffect(skipped.adjust)] : [], reply: { ok: true, dispatched: false } };
        }
        if (state.schedule !== 'active') return { events: [], reply: { ok: false, code: 'INVALID_STATE', state: occurrence.status } };
        const event: MessageEvent = { type: 'occurrence_dispatched', occurrence: command.occurrence, at: context.now };
        const completes = applyMessageEvent(state, event).schedule === 'completed';
        return {
          events: [event],
          effects: [...dispatchEffects(spec, command.occurrence), ...(completes ? [adjustmentEffect(adjustment(spec, 'settle', ZERO, true))] : [])],
          reply: { ok: true, dispatched: true },
        };
      },

      apply_receipt: (state, command, context) => {
        if (!state.spec) return { events: [], reply: NOT_FOUND };
        const { outcomes: [outcome = NOT_FOUND], ...decided } = applyReceipts(state, state.spec, [command.receipt], context, wanted);
        return { ...decided, reply: outcome };
      },

      apply_receipts: (state, command, context) => {
        if (!state.spec) return { events: [], reply: NOT_FOUND };
        const { outcomes, ...decided } = applyReceipts(state, state.spec, command.receipts, context, wanted);
        return { ...decided, reply: { ok: true, outcomes } };
      },

      status: (state, command) =>
        state.created && state.spec?.merchantId === command.merchantId ? { events: [], reply: { ok: true, state } } : { events: [], reply: NOT_FOUND },

      // cancel: remaining occurrences never go and their cost returns at once; cancelling again, or a completed
      // schedule, is an idempotent no-op refunding 0
      cancel: (state, command, context) =>
        manage(state, command.merchantId, (current, spec) => {
          if (current.schedule !== 'active' && current.schedule !== 'paused') return { events: [], adjust: null };
          const remaining = current.occurrences.filter((o) => o.status === 'scheduled').map((o) => o.index);
          const refund = multiply(spec.costPerOccurrence, remaining.length);
          return {
            events: [{ type: 'schedule_cancelled', occurrences: remaining, refund, at: context.now }],
            adjust: adjustment(spec, 'cancel', refund, true),
          };
        }),

      // pause: occurrences stop; their cost stays reserved. Pausing a paused schedule is a no-op.
      pause: (state, command, context) =>
        manage(state, command.merchantId, (current) => {
          if (current.schedule === 'paused') return { events: [], adjust: null };
          if (current.schedule !== 'active') return 'invalid';
          return { events: [{ type: 'schedule_paused', at: context.now }], adjust: null };
        }),

      // resume: occurrences whose time passed while paused are skipped and refunded; later ones proceed
      resume: (state, command, context) =>
        manage(state, command.merchantId, (current, spec) => {
          if (current.schedule === 'active') return { events: [], adjust: null };
          if (current.schedule !== 'paused') return 'invalid';
          const skipped = skip(current, spec, dueWhilePaused(current, context.now), context.now);
          return { events: [...skipped.events, { type: 'schedule_resumed', at: context.now }], adjust: skipped.adjust };
        }),
    },
  };
}
