import type { BehaviourContext } from '../../libraries/actors/behaviour.js';
import { DISPATCH_TOPIC, type DispatchEffect, type DispatchOutboxPayload } from '../../carriers/dispatch-outbox.js';
import { toIsoUtc } from '../../libraries/clock/clock.js';
import { toDecimalNumber, type Money } from '../../pricing/money.js';
import { SCHEDULE_REGISTER_TOPIC, type ScheduleRegistrationEffect } from '../../scheduling/schedule-registration.js';
import { WALLET_ADJUST_TOPIC, type WalletAdjustment, type WalletAdjustmentEffect } from '../../wallets/wallet-adjustments.js';
import { buildEvent, recipientEventData, type EventType } from '../../webhooks/event-envelope.js';
import { webhookEventsEffect, type WebhookEffect } from '../../webhooks/webhook-jobs.js';
import { RECEIPT_TIMEOUT_TOPIC, receiptDeadlineId, type ReceiptDeadline, type ReceiptDeadlineEffect } from '../receipt-deadlines.js';
import { isTerminal, type RecipientState } from '../recipient-state.js';
import type { KeyWebhook, MessageSpec, MessageState } from './message-types.js';

/**
 * What outbox entries a message's decisions yield, each for the area that consumes it: dispatches to carriers and
 * their receipt deadlines, webhook events, wallet adjustments, and the scheduler's registration.
 */
export type MessageEffect = DispatchEffect | ReceiptDeadlineEffect | WebhookEffect | WalletAdjustmentEffect | ScheduleRegistrationEffect;

/** Asks the scheduler to wake a scheduled or recurring message at its first occurrence. */
export function scheduleRegistrationEffect(spec: MessageSpec, at: number): ScheduleRegistrationEffect {
  return {
    id: `schedule:${spec.messageId}`,
    topic: SCHEDULE_REGISTER_TOPIC,
    payload: { merchantId: spec.merchantId, messageId: spec.messageId, at },
  };
}

/**
 * Events are recorded when they can go somewhere: the message's callback_url, or a key that may have a webhook
 * (what the command says of it, KeyWebhook). Without this, every event of a merchant who reads `GET /status` instead
 * of taking webhooks would be written, relayed to nowhere and deleted.
 */
export function eventsWanted(spec: MessageSpec, keyWebhook: KeyWebhook | undefined): boolean {
  return spec.callbackUrl !== null || keyWebhook !== 'none';
}

/** What leaves with an occurrence: the dispatch, and the deadline for its receipts. */
export function dispatchEffects(spec: MessageSpec, occurrence: number): (DispatchEffect | ReceiptDeadlineEffect)[] {
  const deadline: ReceiptDeadline = { merchantId: spec.merchantId, messageId: spec.messageId, occurrence };
  return [
    dispatchEffect(spec, occurrence),
    { id: receiptDeadlineId(spec.messageId, occurrence), topic: RECEIPT_TIMEOUT_TOPIC, payload: deadline },
  ];
}

/**
 * The receipt deadlines receipts have made moot: those of the occurrences `occurrences` in which every recipient is
 * now final, as `latest` (the recipients a batch of receipts changed, by `occurrence:recipient`) over `state` tells.
 * Retired with the receipts' record, they leave the outbox at once instead of a day later.
 */
export function mootDeadlines(
  state: MessageState,
  messageId: string,
  occurrences: ReadonlySet<number>,
  latest: ReadonlyMap<string, RecipientState>,
): string[] {
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

function dispatchEffect(spec: MessageSpec, occurrence: number): DispatchEffect {
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

export function queuedEffects(spec: MessageSpec, context: BehaviourContext, wanted: boolean): WebhookEffect[] {
  if (!wanted) return [];
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
  return [webhookEventsEffect(spec, [event])];
}

/** The instant an event reports (`sent_at`, `delivered_at`, `failed_at`): when the carrier says it happened. */
function eventInstant(type: Exclude<EventType, 'sms.queued'>, recipient: RecipientState): number | null {
  if (type === 'sms.sent') return recipient.sentAt;
  if (type === 'sms.delivered') return recipient.deliveredAt;
  if (type === 'sms.failed') return recipient.failedAt;
  return null;
}

/** Recipient events of one transition, each with its own id fixed now, in one entry. */
export function recipientEffects(
  state: MessageState,
  occurrenceIndex: number,
  recipientIndex: number,
  next: RecipientState,
  types: readonly Exclude<EventType, 'sms.queued'>[],
  context: BehaviourContext,
  wanted: boolean,
): WebhookEffect[] {
  const spec = state.spec;
  const occurrence = state.occurrences[occurrenceIndex];
  const recipient = spec?.recipients[recipientIndex];
  if (!spec || !occurrence || !recipient || !wanted) return [];
  const events = types.map((type) => {
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
    return buildEvent(type, spec.messageId, data, context.newId(), context.now);
  });
  const [first, ...rest] = events;
  return first ? [webhookEventsEffect(spec, [first, ...rest])] : [];
}

export function adjustment(spec: MessageSpec, refundId: string, amount: Money, settle: boolean): WalletAdjustment {
  return { merchantId: spec.merchantId, chargeId: spec.messageId, refundId, amount, settle };
}

export function adjustmentEffect(adjust: WalletAdjustment): WalletAdjustmentEffect {
  return { id: `adjust:${adjust.chargeId}:${adjust.refundId}`, topic: WALLET_ADJUST_TOPIC, payload: adjust };
}
