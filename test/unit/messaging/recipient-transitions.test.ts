import { expect } from 'chai';
import fc from 'fast-check';
import { CARRIER_STATUSES, type CarrierStatus } from '../../../src/carriers/carrier-outcomes.js';
import { decide, type BehaviourContext } from '../../../src/libraries/actors/behaviour.js';
import { createSequentialIds } from '../../../src/libraries/clock/clock.js';
import {
  applyMessageEvents,
  createMessageBehaviour,
  messageHostPolicy,
  recipientTransitions,
  type CarrierReceipt,
  type MessageCommand,
  type MessageEvent,
  type MessageReplies,
  type MessageSpec,
  type MessageState,
} from '../../../src/messaging/message-behaviour.js';
import { eventsOf, type WebhookOutboxPayload } from '../../../src/webhooks/webhook-jobs.js';
import { fromUnits } from '../../../src/pricing/money.js';

const T0 = Date.UTC(2026, 2, 2, 9, 0, 0);
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function spec(overrides: Partial<MessageSpec> = {}): MessageSpec {
  return {
    messageId: 'msg-transitions',
    merchantId: 'merchant-1',
    keyId: 'key-1',
    text: 'hello',
    senderId: null,
    encoding: 'GSM-7',
    segments: 1,
    callbackUrl: null,
    currency: 'USD',
    sendingType: 'immediate',
    recipients: [0, 1, 2].map((index) => ({ index, phone: `+24381000000${index}`, price: fromUnits(200), carrier: 'vodacom-cd' })),
    occurrences: [],
    recurrence: null,
    totalMessages: 3,
    totalCost: fromUnits(600),
    costPerOccurrence: fromUnits(600),
    ...overrides,
  };
}

/** A key known to have no webhook and no callback_url: the message records no webhook event at all. */
const withoutWebhooks = messageHostPolicy({ mayHaveWebhook: () => false });
/** Every event recorded: its webhook events are the reference for what recipients went through. */
const recordingAll = messageHostPolicy();
const behaviour = createMessageBehaviour();

/**
 * Commands decided as the actor host does, one journal record per batch: each record's state before it and its
 * events, and the webhook events (without sms.queued) the record left.
 */
function journalOf(policy: typeof recordingAll, batches: readonly (readonly MessageCommand[])[]) {
  const newId = createSequentialIds('evt');
  let state = behaviour.initialState('msg-transitions');
  const records: { before: MessageState; events: MessageEvent[] }[] = [];
  const webhookStatuses: string[] = [];
  batches.forEach((batch, i) => {
    const context: BehaviourContext = { now: T0 + i * MINUTE, newId, shard: 0 };
    const before = state;
    const events: MessageEvent[] = [];
    for (const command of batch) {
      const decision = decide<MessageState, MessageCommand, MessageEvent, MessageReplies, MessageCommand['type']>(
        behaviour,
        state,
        policy.withInputs?.(state, command) ?? command,
        context,
      );
      state = applyMessageEvents(state, decision.events);
      events.push(...decision.events);
      for (const effect of decision.effects ?? []) {
        if (effect.topic !== 'webhook.event') continue;
        for (const { event_type: type } of eventsOf(effect.payload as WebhookOutboxPayload))
          if (type !== 'sms.queued') webhookStatuses.push(type.slice('sms.'.length));
      }
    }
    if (events.length > 0) records.push({ before, events });
  });
  return { records, webhookStatuses, counted: records.flatMap((record) => recipientTransitions(record.before, record.events)) };
}

const create = (s: MessageSpec = spec()): MessageCommand => ({ type: 'create', spec: s });
const receipt = (recipient: number, status: CarrierStatus, at = T0, occurrence = 0): MessageCommand => ({
  type: 'apply_receipt',
  receipt: { occurrence, recipient, status, at },
});

describe('recipient transitions (what recipient_transitions_total counts)', () => {
  it('when a delivered report reaches a pending recipient, then it entered processing, sent and delivered', () => {
    const { counted } = journalOf(withoutWebhooks, [[create()], [receipt(0, 'delivered')]]);

    expect(counted).to.deep.equal(['processing', 'sent', 'delivered']);
  });

  it('when enroute follows accepted, then enroute enters no status (the recipient was already sent)', () => {
    const { records, counted } = journalOf(withoutWebhooks, [
      [create()],
      [receipt(0, 'processing')],
      [receipt(0, 'accepted')],
      [receipt(0, 'enroute')],
    ]);

    expect(records.at(-1)?.events, 'enroute is journaled: it moves the carrier status on').to.have.length(1);
    expect(counted).to.deep.equal(['processing', 'sent']);
  });

  it('when reports repeat or come after the final one, then nothing more is counted', () => {
    const { counted } = journalOf(withoutWebhooks, [
      [create()],
      [receipt(1, 'rejected')],
      [receipt(1, 'rejected'), receipt(1, 'delivered'), receipt(1, 'accepted')],
    ]);

    expect(counted).to.deep.equal(['processing', 'failed']);
  });

  it('when the receipt timeout fails the recipients left, then each enters failed once and final ones nothing', () => {
    const { counted } = journalOf(withoutWebhooks, [
      [create()],
      [receipt(0, 'delivered'), receipt(1, 'accepted')],
      [{ type: 'receipt_timeout', occurrence: 0 }],
    ]);

    expect(counted).to.deep.equal(['processing', 'sent', 'delivered', 'processing', 'sent', 'failed', 'failed']);
  });

  it('when one record holds several reports of one recipient, then each is counted against the state the earlier ones left', () => {
    const batch: MessageCommand = {
      type: 'apply_receipts',
      receipts: [
        { occurrence: 0, recipient: 2, status: 'processing', at: T0 },
        { occurrence: 0, recipient: 2, status: 'accepted', at: T0 },
        { occurrence: 0, recipient: 2, status: 'enroute', at: T0 },
        { occurrence: 0, recipient: 2, status: 'delivered', at: T0 },
      ],
    };

    const { records, counted } = journalOf(withoutWebhooks, [[create()], [batch]]);

    expect(records.at(-1)?.events).to.have.length(4);
    expect(counted).to.deep.equal(['processing', 'sent', 'delivered']);
  });

  it('when a record also dispatches occurrences (a scheduled send), then signals after the dispatch are counted on it', () => {
    const scheduled = spec({ sendingType: 'scheduled', occurrences: [T0, T0 + DAY], totalMessages: 6, totalCost: fromUnits(1200) });

    const { counted } = journalOf(withoutWebhooks, [
      [create(scheduled)],
      [{ type: 'dispatch_occurrence', occurrence: 0 }, receipt(0, 'delivered', T0, 0)],
    ]);

    expect(counted).to.deep.equal(['processing', 'sent', 'delivered']);
  });

  describe('any receipts, batches and timeouts', () => {
    const command: fc.Arbitrary<MessageCommand> = fc.oneof(
      {
        weight: 6,
        arbitrary: fc
          .record({ recipient: fc.integer({ min: 0, max: 2 }), status: fc.constantFrom(...CARRIER_STATUSES) })
          .map(({ recipient, status }) => receipt(recipient, status)),
      },
      {
        weight: 2,
        arbitrary: fc
          .array(fc.record({ recipient: fc.integer({ min: 0, max: 3 }), status: fc.constantFrom(...CARRIER_STATUSES) }), { maxLength: 6 })
          .map((items): MessageCommand => ({
            type: 'apply_receipts',
            receipts: items.map((r): CarrierReceipt => ({ occurrence: 0, ...r, at: T0 })),
          })),
      },
      { weight: 1, arbitrary: fc.constant<MessageCommand>({ type: 'receipt_timeout', occurrence: 0 }) },
    );
    const batches = fc.array(fc.array(command, { minLength: 1, maxLength: 4 }), { maxLength: 12 });

    it('when a message records webhook events, then the statuses counted are exactly those its recipient events name', () => {
      fc.assert(
        fc.property(batches, (commands) => {
          const { webhookStatuses, counted } = journalOf(recordingAll, [[create()], ...commands]);

          expect(counted).to.deep.equal(webhookStatuses);
        }),
        { numRuns: 300 },
      );
    });

    it('when the merchant has no webhook, then the same statuses are counted as with one', () => {
      fc.assert(
        fc.property(batches, (commands) => {
          const without = journalOf(withoutWebhooks, [[create()], ...commands]);
          const withWebhooks = journalOf(recordingAll, [[create()], ...commands]);

          expect(without.webhookStatuses, 'no webhook event recorded').to.deep.equal([]);
          expect(without.counted).to.deep.equal(withWebhooks.counted);
        }),
        { numRuns: 200 },
      );
    });
  });
});
