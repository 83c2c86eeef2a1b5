import type { Behaviour, BehaviourContext, HostPolicy } from '../../libraries/actors/behaviour.js';
import type { OwnerEntry } from '../../libraries/persistence/journal-port.js';
import { multiply, ZERO } from '../../pricing/money.js';
import type { WalletAdjustment } from '../../wallets/wallet-adjustments.js';
import type { WebhookPresence } from '../../webhooks/webhook-presence.js';
import { mergeWebhookEffects } from '../../webhooks/webhook-jobs.js';
import { applySignal, isTerminal, type RecipientSignal, type RecipientState } from '../recipient-state.js';
import {
  adjustment,
  adjustmentEffect,
  dispatchEffects,
  eventsWanted,
  mootDeadlines,
  queuedEffects,
  recipientEffects,
  scheduleRegistrationEffect,
  type MessageEffect,
} from './message-effects.js';
import { applyMessageEvent, applyMessageEvents, EMPTY_MESSAGE, isSettled } from './message-evolve.js';
import {
  MESSAGE_KIND,
  sendReceipt,
  type CarrierReceipt,
  type ManagementReply,
  type MessageCommand,
  type MessageEvent,
  type MessageReplies,
  type MessageSpec,
  type MessageState,
  type NotFound,
  type ReceiptOutcome,
} from './message-types.js';

/**
 * MessageActor (`message:<messageId>`): one submitted message, all its recipients and occurrences. Every state
 * change the contract turns into a webhook event writes an outbox entry with the event (its id fixed now) in the
 * same append, when the event can go somewhere; so does every dispatch to a carrier.
 */

const NOT_FOUND: NotFound = { ok: false, code: 'NOT_FOUND' };

/** Occurrences still waiting whose time has come (or passed). */
function dueWhilePaused(state: MessageState, now: number): number[] {
  return state.occurrences.filter((o) => o.status === 'scheduled' && o.scheduledAt <= now).map((o) => o.index);
}

/** Skips `indexes` and refunds them; settles the charge when nothing else can be refunded afterwards. */
function skip(
  state: MessageState,
  spec: MessageSpec,
  indexes: readonly number[],
  now: number,
): { events: MessageEvent[]; adjust: WalletAdjustment | null } {
  if (indexes.length === 0) return { events: [], adjust: null };
  const refund = multiply(spec.costPerOccurrence, indexes.length);
  const event: MessageEvent = { type: 'occurrences_skipped', occurrences: indexes, refund, at: now };
  const after = applyMessageEvent(state, event);
  return { events: [event], adjust: adjustment(spec, `skip:${indexes.join('-')}`, refund, after.schedule === 'completed') };
}

/**
 * A paused schedule's occurrences stay reserved until resume, unless none is left to come: then the schedule
 * completes and every occurrence still waiting is skipped and refunded. Null: nothing to do yet.
 */
function skipIfNothingToCome(
  state: MessageState,
  spec: MessageSpec,
  now: number,
): { events: MessageEvent[]; effects: MessageEffect[] } | null {
  const waiting = state.occurrences.filter((o) => o.status === 'scheduled');
  if (waiting.length === 0 || waiting.some((o) => o.scheduledAt > now)) return null;
  const skipped = skip(
    state,
    spec,
    waiting.map((o) => o.index),
    now,
  );
  return { events: skipped.events, effects: skipped.adjust ? [adjustmentEffect(skipped.adjust)] : [] };
}

type ManagementDecision = { events: MessageEvent[]; effects?: MessageEffect[]; reply: ManagementReply };

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

interface AppliedReceipt {
  readonly outcome: ReceiptOutcome | NotFound;
  /** The event to journal; null when the receipt changes nothing. */
  readonly event: MessageEvent | null;
  /** The recipient after the receipt, when it changed. */
  readonly next: RecipientState | null;
  readonly effects: readonly MessageEffect[];
}

/**
 * One carrier receipt against the recipient as it is now (`latest`: as earlier receipts of the same batch left it):
 * the forward-only merge of recipient-state.ts.
 */
function applyReceipt(
  state: MessageState,
  receipt: CarrierReceipt,
  context: BehaviourContext,
  wanted: boolean,
  latest?: RecipientState,
): AppliedReceipt {
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
  wanted: boolean,
): { events: MessageEvent[]; effects: MessageEffect[]; retire: string[]; outcomes: (ReceiptOutcome | NotFound)[] } {
  const events: MessageEvent[] = [];
  const effects: MessageEffect[] = [];
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
 * The message's decisions: a function of its state and the command alone. Whether its key may have a webhook is
 * part of the command (KeyWebhook, put in by messageHostPolicy); a command without it records every event.
 */
export function createMessageBehaviour(): Behaviour<MessageState, MessageCommand, MessageEvent, MessageReplies, MessageEffect> {
  return {
    kind: MESSAGE_KIND,
    initialState: () => EMPTY_MESSAGE,
    apply: applyMessageEvent,
    handlers: {
      // answered by the actor host before any handler (behaviour.ts); a host without that support compacts nothing
      compact_journal: () => ({ events: [], reply: { compacted: false, reason: 'not_settled' } }),
      create: (state, command, context) => {
        if (state.created && state.spec) return { events: [], reply: { ok: true, created: false, receipt: sendReceipt(state.spec) } };
        const spec = command.spec;
        const events: MessageEvent[] = [{ type: 'message_created', spec, at: context.now }];
        const effects: MessageEffect[] = queuedEffects(spec, context, eventsWanted(spec, command.keyWebhook));
        if (spec.sendingType === 'immediate') {
          events.push({ type: 'occurrence_dispatched', occurrence: 0, at: context.now });
          effects.push(...dispatchEffects(spec, 0));
        } else {
          effects.push(scheduleRegistrationEffect(spec, spec.occurrences[0] ?? context.now));
        }
        return { events, effects, reply: { ok: true, created: true, receipt: sendReceipt(spec) } };
      },

      dispatch_due: (state, _command, context) => {
        const spec = state.spec;
        if (!spec) return { events: [], reply: NOT_FOUND };
        const waiting = state.occurrences.filter((o) => o.status === 'scheduled');
        const nextAfterNow = waiting.find((o) => o.scheduledAt > context.now)?.scheduledAt ?? null;
        if (state.schedule === 'paused') {
          const skipped = skipIfNothingToCome(state, spec, context.now);
          return skipped
            ? { ...skipped, reply: { ok: true, dispatched: [], next: null } }
            : { events: [], reply: { ok: true, dispatched: [], next: nextAfterNow } };
        }
        if (state.schedule !== 'active') return { events: [], reply: { ok: true, dispatched: [], next: null } };
        // late occurrences (the node was down at their time) still go: a crash never skips one
        const dueOccurrences = waiting.filter((o) => o.scheduledAt <= context.now);
        const due = dueOccurrences.map((o) => o.index);
        const lateMs = dueOccurrences.length > 0 ? context.now - Math.min(...dueOccurrences.map((o) => o.scheduledAt)) : null;
        const events: MessageEvent[] = due.map((occurrence) => ({ type: 'occurrence_dispatched', occurrence, at: context.now }));
        const completes = events.reduce(applyMessageEvent, state).schedule === 'completed';
        const effects = [
          ...due.flatMap((occurrence) => dispatchEffects(spec, occurrence)),
          ...(completes ? [adjustmentEffect(adjustment(spec, 'settle', ZERO, true))] : []),
        ];
        return { events, effects, reply: { ok: true, dispatched: due, next: nextAfterNow, lateMs } };
      },

      receipt_timeout: (state, command, context) => {
        const occurrence = state.occurrences[command.occurrence];
        if (!state.spec || !occurrence?.recipients) return { events: [], reply: NOT_FOUND };
        const events: MessageEvent[] = [];
        const effects: MessageEffect[] = [];
        const wanted = eventsWanted(state.spec, command.keyWebhook);
        let working = state;
        occurrence.recipients.forEach((recipient, index) => {
          const signal: RecipientSignal = { type: 'receipt_timeout', at: context.now };
          const transition = applySignal(recipient, signal);
          if (!transition.changed) return;
          const event: MessageEvent = {
            type: 'recipient_signal',
            occurrence: command.occurrence,
            recipient: index,
            signal,
            at: context.now,
          };
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
          const skipped = skipIfNothingToCome(state, spec, context.now);
          return skipped ? { ...skipped, reply: { ok: true, dispatched: false } } : { events: [], reply: { ok: true, dispatched: false } };
        }
        if (state.schedule !== 'active') return { events: [], reply: { ok: false, code: 'INVALID_STATE', state: occurrence.status } };
        const event: MessageEvent = { type: 'occurrence_dispatched', occurrence: command.occurrence, at: context.now };
        const completes = applyMessageEvent(state, event).schedule === 'completed';
        return {
          events: [event],
          effects: [
            ...dispatchEffects(spec, command.occurrence),
            ...(completes ? [adjustmentEffect(adjustment(spec, 'settle', ZERO, true))] : []),
          ],
          reply: { ok: true, dispatched: true },
        };
      },

      apply_receipt: (state, command, context) => {
        if (!state.spec) return { events: [], reply: NOT_FOUND };
        const wanted = eventsWanted(state.spec, command.keyWebhook);
        const {
          outcomes: [outcome = NOT_FOUND],
          ...decided
        } = applyReceipts(state, state.spec, [command.receipt], context, wanted);
        return { ...decided, reply: outcome };
      },

      apply_receipts: (state, command, context) => {
        if (!state.spec) return { events: [], reply: NOT_FOUND };
        const wanted = eventsWanted(state.spec, command.keyWebhook);
        const { outcomes, ...decided } = applyReceipts(state, state.spec, command.receipts, context, wanted);
        return { ...decided, reply: { ok: true, outcomes } };
      },

      status: (state, command) =>
        state.created && state.spec?.merchantId === command.merchantId
          ? { events: [], reply: { ok: true, state } }
          : { events: [], reply: NOT_FOUND },

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

/**
 * How a host runs messages. `keys`: what this node's key actors know of their webhooks (webhook-presence.ts); each
 * command that can yield webhook events gets it as KeyWebhook when it is decided.
 *
 * Presence is an input of the command rather than a filter in the webhook relay: the relay would see the events only
 * after they were written, and the point of knowing is not to write them at all (a third of the database's work per
 * message). Read from memory when the command is decided, it costs no round-trip, and the node deciding is the one
 * whose key actors know the key (the key and its messages share the merchant's shard).
 */
export function messageHostPolicy(keys?: Pick<WebhookPresence, 'mayHaveWebhook'>): HostPolicy<MessageState, MessageCommand, MessageEvent> {
  return {
    applyAll: applyMessageEvents,
    // message ids are generated at submit: a create wakes a message with no journal (save after a crash, when the
    // outbox relay repeats it and the runtime's conflict retry reads the journal)
    startsFresh: (command) => command.type === 'create',
    // a batch of receipts is as much work as that many single receipts
    weightOf: (command) => (command.type === 'apply_receipts' ? Math.max(1, command.receipts.length) : 1),
    settled: isSettled,
    // the webhook events of a record (a batch of receipts yields several per recipient) go as one outbox entry
    packEffects: mergeWebhookEffects,
    // the record creating a message makes its merchant the owner status and receipts look up
    ownerOf: messageOwnerOf,
    ...(keys ? { withInputs: (state: MessageState, command: MessageCommand) => withKeyWebhook(keys, state, command) } : {}),
  };
}

/** The owner a message's creation establishes: its merchant. */
export function messageOwnerOf(events: readonly MessageEvent[]): OwnerEntry | undefined {
  for (const event of events) if (event.type === 'message_created') return { id: event.spec.messageId, owner: event.spec.merchantId };
  return undefined;
}

/** The command with what `keys` knows of the message's key, for the commands that can yield webhook events. */
export function withKeyWebhook(
  keys: Pick<WebhookPresence, 'mayHaveWebhook'>,
  state: MessageState,
  command: MessageCommand,
): MessageCommand {
  switch (command.type) {
    case 'create': {
      // a create decides on the spec it carries (a repeated one on the state's, which yields no event)
      return { ...command, keyWebhook: keys.mayHaveWebhook(command.spec.keyId) ? 'maybe' : 'none' };
    }
    case 'apply_receipt':
    case 'apply_receipts':
    case 'receipt_timeout': {
      const keyId = state.spec?.keyId;
      return keyId === undefined ? command : { ...command, keyWebhook: keys.mayHaveWebhook(keyId) ? 'maybe' : 'none' };
    }
    default:
      return command;
  }
}
