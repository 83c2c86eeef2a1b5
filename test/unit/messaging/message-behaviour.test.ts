import { expect } from 'chai';
import fc from 'fast-check';
import { CARRIER_STATUSES, type CarrierStatus } from '../../../src/carriers/carrier-outcomes.js';
import { decide, type BehaviourContext, type Decision, type Effect } from '../../../src/libraries/actors/behaviour.js';
import { createManualClock, createSequentialIds, toIsoUtc, uuidV4, type IdGenerator } from '../../../src/libraries/clock/clock.js';
import { ERROR_CATALOGUE } from '../../../src/libraries/errors/error-catalogue.js';
import {
  applyMessageEvents,
  createMessageBehaviour,
  messageHostPolicy,
  type CarrierReceipt,
  type MessageCommand,
  type MessageEvent,
  type MessageRecipient,
  type MessageReplies,
  type MessageSpec,
  type MessageState,
} from '../../../src/messaging/message-behaviour.js';
import { eventsOf, type WebhookOutboxPayload } from '../../../src/webhooks/webhook-jobs.js';
import { messageStatusView, type MessageStatusView } from '../../../src/messaging/message-view.js';
import { fromUnits, mustParseMoney } from '../../../src/pricing/money.js';
import type { WebhookEvent } from '../../../src/webhooks/event-envelope.js';

const T0 = Date.UTC(2025, 5, 2, 9, 0, 0);
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;
const MESSAGE_ID = 'msg-1';
const MERCHANT = 'merchant-1';
const KEY_ID = 'key-1';
const CALLBACK = 'https://merchant.example/sms-events';
const TEXT = 'Bonjour, ' + 'votre rendez-vous de demain est confirmé. '.repeat(4);
const PRICE = mustParseMoney('0.015');
const UUID_V4 = /^[0-9a-f]{8}-[0-9a-f]{4}-4[0-9a-f]{3}-[89ab][0-9a-f]{3}-[0-9a-f]{12}$/;

const RECIPIENTS: readonly MessageRecipient[] = [
  { index: 0, phone: '+243810000001', price: PRICE, carrier: 'vodacom-cd' },
  { index: 1, phone: '+243970000002', price: PRICE, carrier: 'airtel-cd' },
  { index: 2, phone: '+243890000003', price: PRICE, carrier: 'orange-cd' },
];

/** 3 recipients × 2 segments at 0.015: 6 messages, 0.09 per dispatch. */
function immediateSpec(overrides: Partial<MessageSpec> = {}): MessageSpec {
  return {
    messageId: MESSAGE_ID,
    merchantId: MERCHANT,
    keyId: KEY_ID,
    text: TEXT,
    senderId: 'ACME',
    encoding: 'GSM-7',
    segments: 2,
    callbackUrl: CALLBACK,
    currency: 'USD',
    sendingType: 'immediate',
    recipients: RECIPIENTS,
    occurrences: [],
    recurrence: null,
    totalMessages: 6,
    totalCost: fromUnits(900),
    costPerOccurrence: fromUnits(900),
    ...overrides,
  };
}

const OCCURRENCE_0 = T0 + DAY;
const OCCURRENCE_1 = T0 + 2 * DAY;
const OCCURRENCE_2 = T0 + 3 * DAY;

function scheduledSpec(): MessageSpec {
  return immediateSpec({
    sendingType: 'scheduled',
    occurrences: [OCCURRENCE_0, OCCURRENCE_1],
    totalMessages: 12,
    totalCost: fromUnits(1800),
  });
}

function recurringSpec(): MessageSpec {
  return immediateSpec({
    sendingType: 'recurring',
    occurrences: [OCCURRENCE_0, OCCURRENCE_1, OCCURRENCE_2],
    recurrence: { startDate: '2025-06-03', endDate: '2025-06-05', frequency: 'daily', interval: 1, times: ['10:00'] },
    totalMessages: 18,
    totalCost: fromUnits(2700),
  });
}

const behaviour = createMessageBehaviour();
const apply = (state: MessageState, event: MessageEvent): MessageState => behaviour.apply(state, event);

/**
 * Runs commands the way the actor wrapper does: decide with `{ now, newId, shard: 3 }`, then fold the events
 * into the state. Keeps the journal and every effect, in order.
 */
function createStory(options: { newId?: IdGenerator; start?: number } = {}) {
  const clock = createManualClock(options.start ?? T0);
  const newId = options.newId ?? createSequentialIds('evt');
  const journal: MessageEvent[] = [];
  const effects: Effect[] = [];
  const retired: string[] = [];
  let state = behaviour.initialState(MESSAGE_ID);

  function run<K extends MessageCommand['type']>(
    command: Extract<MessageCommand, { type: K }>,
  ): Decision<MessageState, MessageEvent, MessageReplies[K]> {
    const context: BehaviourContext = { now: clock.now(), newId, shard: 3 };
    const decision = decide<MessageState, MessageCommand, MessageEvent, MessageReplies, K>(behaviour, state, command, context);
    state = decision.events.reduce(apply, state);
    journal.push(...decision.events);
    effects.push(...(decision.effects ?? []));
    retired.push(...(decision.retire ?? []));
    return decision;
  }

  return {
    clock,
    journal,
    effects,
    retired,
    get state(): MessageState {
      return state;
    },
    create: (spec: MessageSpec) => run<'create'>({ type: 'create', spec }),
    dispatch: (occurrence: number) => run<'dispatch_occurrence'>({ type: 'dispatch_occurrence', occurrence }),
    dispatchDue: () => run<'dispatch_due'>({ type: 'dispatch_due' }),
    receipt: (receipt: CarrierReceipt) => run<'apply_receipt'>({ type: 'apply_receipt', receipt }),
    receipts: (receipts: readonly CarrierReceipt[]) => run<'apply_receipts'>({ type: 'apply_receipts', receipts }),
    status: (merchantId: string) => run<'status'>({ type: 'status', merchantId }),
    receiptTimeout: (occurrence: number) => run<'receipt_timeout'>({ type: 'receipt_timeout', occurrence }),
  };
}

type Story = ReturnType<typeof createStory>;

function receipt(recipient: number, status: CarrierStatus, at: number, extra: Partial<CarrierReceipt> = {}): CarrierReceipt {
  return { occurrence: 0, recipient, status, at, ...extra };
}

function webhookEvents(effects: readonly Effect[]): WebhookEvent[] {
  return effects.filter((e) => e.topic === 'webhook.event').flatMap((e) => eventsOf(e.payload as WebhookOutboxPayload));
}

type RecipientEvent = Exclude<WebhookEvent, { event_type: 'sms.queued' }>;

function recipientEvents(effects: readonly Effect[], recipient: number): RecipientEvent[] {
  return webhookEvents(effects).filter((e): e is RecipientEvent => e.event_type !== 'sms.queued' && e.data.recipient_index === recipient);
}

/** The webhook outbox entry the contract expects for `event`: its id is the event id. */
function webhookEntry(event: WebhookEvent): Effect {
  return {
    id: event.event_id,
    topic: 'webhook.event',
    payload: { merchantId: MERCHANT, keyId: KEY_ID, callbackUrl: CALLBACK, events: [event] },
  };
}

const iso = toIsoUtc;
const NOTHING_CHANGED = { ok: true, changed: false, events: [] } as const;
const NOT_FOUND = { ok: false, code: 'NOT_FOUND' } as const;

describe('message behaviour', () => {
  describe('create', () => {
    it('when an immediate send is created, then message_created and occurrence_dispatched 0 are journaled at now', () => {
      const story = createStory();
      const spec = immediateSpec();

      const decision = story.create(spec);

      expect(decision.events).to.deep.equal([
        { type: 'message_created', spec, at: T0 },
        { type: 'occurrence_dispatched', occurrence: 0, at: T0 },
      ]);
      expect(decision.reply).to.deep.equal({
        ok: true,
        created: true,
        receipt: { message_id: MESSAGE_ID, total_recipients: 3, total_messages: 6, total_cost: 0.09, currency: 'USD', status: 'pending' },
      });
    });

    it('when an immediate send is created, then one sms.queued webhook and one carrier dispatch to every recipient are in the outbox', () => {
      const story = createStory();

      const decision = story.create(immediateSpec());

      expect(decision.effects).to.deep.equal([
        {
          id: 'evt-1',
          topic: 'webhook.event',
          payload: {
            merchantId: MERCHANT,
            keyId: KEY_ID,
            callbackUrl: CALLBACK,
            events: [
              {
                event_id: 'evt-1',
                event_type: 'sms.queued',
                timestamp: '2025-06-02T09:00:00.000Z',
                message_id: MESSAGE_ID,
                data: { total_recipients: 3, total_messages: 6, total_cost: 0.09, currency: 'USD', scheduled_at: null },
              },
            ],
          },
        },
        {
          id: 'dispatch:msg-1:0',
          topic: 'carrier.dispatch',
          payload: {
            messageId: MESSAGE_ID,
            merchantId: MERCHANT,
            occurrence: 0,
            senderId: 'ACME',
            text: TEXT,
            encoding: 'GSM-7',
            segments: 2,
            recipients: [
              { index: 0, phone: '+243810000001', carrier: 'vodacom-cd' },
              { index: 1, phone: '+243970000002', carrier: 'airtel-cd' },
              { index: 2, phone: '+243890000003', carrier: 'orange-cd' },
            ],
          },
        },
        { id: 'timeout:msg-1:0', topic: 'receipt.timeout', payload: { merchantId: MERCHANT, messageId: MESSAGE_ID, occurrence: 0 } },
      ]);
    });

    it('when the event ids come from UUID v4, then sms.queued carries a UUID v4 event_id that is also the outbox id', () => {
      const story = createStory({ newId: uuidV4 });

      const [queued] = story.create(immediateSpec()).effects ?? [];

      const [event] = eventsOf(queued?.payload as WebhookOutboxPayload);
      expect(event?.event_id).to.match(UUID_V4);
      expect(queued?.id).to.equal(event?.event_id);
    });

    it('when the same message is created twice, then the second create journals nothing, emits nothing and returns the same receipt', () => {
      const story = createStory();
      const first = story.create(immediateSpec());
      const before = story.state;
      story.clock.advance(MINUTE);

      const second = story.create(immediateSpec({ totalCost: fromUnits(1), text: 'another body' }));

      expect(second.events).to.deep.equal([]);
      expect(second.effects ?? []).to.deep.equal([]);
      expect(second.reply).to.deep.equal({ ...first.reply, created: false });
      expect(story.state).to.equal(before);
    });

    it('when a scheduled send is created, then only message_created is journaled and sms.queued carries the first occurrence in UTC', () => {
      const story = createStory();

      const decision = story.create(scheduledSpec());

      expect(decision.events.map((e) => e.type)).to.deep.equal(['message_created']);
      expect(decision.effects?.map((e) => e.topic)).to.deep.equal(['webhook.event', 'schedule.register']);
      expect(webhookEvents(decision.effects ?? [])[0]?.data).to.deep.equal({
        total_recipients: 3,
        total_messages: 12,
        total_cost: 0.18,
        currency: 'USD',
        scheduled_at: '2025-06-03T09:00:00.000Z',
      });
      expect(story.state.schedule).to.equal('active');
      expect(story.state.occurrences.map((o) => o.status)).to.deep.equal(['scheduled', 'scheduled']);
    });

    it('when a recurring send is created, then sms.queued carries its first computed occurrence and nothing is dispatched', () => {
      const story = createStory();

      const decision = story.create(recurringSpec());

      expect(decision.effects?.filter((e) => e.topic === 'carrier.dispatch')).to.deep.equal([]);
      const queued = webhookEvents(decision.effects ?? [])[0];
      expect(queued?.event_type).to.equal('sms.queued');
      expect(queued?.data).to.have.property('scheduled_at', '2025-06-03T09:00:00.000Z');
      expect(decision.reply).to.have.nested.property('receipt.total_cost', 0.27);
    });
  });

  describe('dispatch_occurrence', () => {
    it('when a scheduled occurrence is due, then occurrence_dispatched is journaled and one carrier dispatch is in the outbox', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0);

      const decision = story.dispatch(0);

      expect(decision.reply).to.deep.equal({ ok: true, dispatched: true });
      expect(decision.events).to.deep.equal([{ type: 'occurrence_dispatched', occurrence: 0, at: OCCURRENCE_0 }]);
      expect(decision.effects?.map((e) => [e.id, e.topic])).to.deep.equal([
        ['dispatch:msg-1:0', 'carrier.dispatch'],
        ['timeout:msg-1:0', 'receipt.timeout'],
      ]);
      expect(decision.effects?.[0]?.payload).to.have.property('occurrence', 0);
      expect(story.state.schedule).to.equal('active');
    });

    it('when dispatch_due runs late, then it dispatches what is due and says how late the earliest of them was', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0 - SECOND);
      expect(story.dispatchDue().reply).to.deep.include({ ok: true, dispatched: [] }).and.to.not.have.property('lateMs', 0);
      story.clock.set(OCCURRENCE_0 + 3 * SECOND);

      const decision = story.dispatchDue();

      expect(decision.reply).to.deep.include({ ok: true, dispatched: [0], lateMs: 3 * SECOND });
      expect(decision.events).to.deep.equal([{ type: 'occurrence_dispatched', occurrence: 0, at: OCCURRENCE_0 + 3 * SECOND }]);
    });

    it('when an occurrence is triggered twice, then the second trigger journals nothing and dispatches nothing', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0);
      story.dispatch(0);
      const before = story.state;
      story.clock.advance(SECOND);

      const again = story.dispatch(0);

      expect(again.reply).to.deep.equal({ ok: true, dispatched: false });
      expect(again.events).to.deep.equal([]);
      expect(again.effects ?? []).to.deep.equal([]);
      expect(story.state).to.equal(before);
    });

    it('when the immediate occurrence is triggered again, then it is not dispatched a second time', () => {
      const story = createStory();
      story.create(immediateSpec());

      const again = story.dispatch(0);

      expect(again.reply).to.deep.equal({ ok: true, dispatched: false });
      expect(again.effects ?? []).to.deep.equal([]);
      expect(story.effects.filter((e) => e.topic === 'carrier.dispatch')).to.have.length(1);
    });

    it('when the occurrence index does not exist, then NOT_FOUND and nothing is journaled', () => {
      for (const occurrence of [2, 3, -1]) {
        const story = createStory();
        story.create(scheduledSpec());
        const before = story.state;

        const decision = story.dispatch(occurrence);

        expect(decision.reply, `occurrence ${occurrence}`).to.deep.equal(NOT_FOUND);
        expect(decision.events).to.deep.equal([]);
        expect(decision.effects ?? []).to.deep.equal([]);
        expect(story.state).to.equal(before);
      }
    });

    it('when the message was never created, then NOT_FOUND', () => {
      const story = createStory();

      const decision = story.dispatch(0);

      expect(decision.reply).to.deep.equal(NOT_FOUND);
      expect(decision.events).to.deep.equal([]);
    });

    it('when the last occurrence is dispatched, then the schedule becomes completed, not before', () => {
      const story = createStory();
      story.create(recurringSpec());

      const states = [0, 1, 2].map((occurrence) => {
        story.clock.set(recurringSpec().occurrences[occurrence] ?? 0);
        const decision = story.dispatch(occurrence);
        expect(decision.effects?.[0]?.id).to.equal(`dispatch:msg-1:${occurrence}`);
        return story.state.schedule;
      });

      expect(states).to.deep.equal(['active', 'active', 'completed']);
      expect(story.dispatch(2).reply).to.deep.equal({ ok: true, dispatched: false });
    });

    it('when an immediate send is created, then it has no schedule to complete', () => {
      const story = createStory();

      story.create(immediateSpec());

      expect(story.state.schedule).to.equal(null);
    });
  });

  describe('apply_receipt', () => {
    /** The full immediate lifecycle: recipient 0 delivered, 1 undelivered (1502), 2 still enroute. */
    function immediateLifecycle(): { story: Story; replies: MessageReplies['apply_receipt'][] } {
      const story = createStory();
      story.create(immediateSpec());
      const arrivals: CarrierReceipt[] = [
        receipt(0, 'processing', T0 + MINUTE),
        receipt(1, 'processing', T0 + MINUTE),
        receipt(2, 'processing', T0 + MINUTE),
        receipt(0, 'accepted', T0 + 2 * MINUTE),
        receipt(1, 'accepted', T0 + 2 * MINUTE),
        receipt(2, 'accepted', T0 + 2 * MINUTE),
        receipt(2, 'enroute', T0 + 3 * MINUTE),
        receipt(0, 'delivered', T0 + 4 * MINUTE),
        receipt(1, 'undelivered', T0 + 5 * MINUTE, { errorMessage: 'Handset unreachable' }),
      ];
      const replies = arrivals.map((r) => {
        // the receipt reaches the actor 5 s after the carrier stamped it
        story.clock.set(r.at + 5 * SECOND);
        return story.receipt(r).reply;
      });
      return { story, replies };
    }

    it('when three recipients end delivered, undelivered and enroute, then each gets exactly its events, in order', () => {
      const { story, replies } = immediateLifecycle();

      expect(replies.map((r) => (r.ok ? r.events : r.code))).to.deep.equal([
        ['sms.processing'],
        ['sms.processing'],
        ['sms.processing'],
        ['sms.sent'],
        ['sms.sent'],
        ['sms.sent'],
        [],
        ['sms.delivered'],
        ['sms.failed'],
      ]);
      const perRecipient = [0, 1, 2].map((i) => recipientEvents(story.effects, i).map((e) => e.event_type));
      expect(perRecipient).to.deep.equal([
        ['sms.processing', 'sms.sent', 'sms.delivered'],
        ['sms.processing', 'sms.sent', 'sms.failed'],
        ['sms.processing', 'sms.sent'],
      ]);
    });

    it('when three recipients end delivered, undelivered and enroute, then every webhook envelope is exactly the contract one', () => {
      const { story } = immediateLifecycle();
      const at = (minutes: number): string => iso(T0 + minutes * MINUTE);
      const emitted = (minutes: number): string => iso(T0 + minutes * MINUTE + 5 * SECOND);
      const phone = (i: number): string => RECIPIENTS[i]?.phone ?? '';
      const carrier = (i: number): string => RECIPIENTS[i]?.carrier ?? '';
      const base = (i: number) => ({ recipient_phone: phone(i), carrier: carrier(i), recipient_index: i });
      const envelope = (n: number, event_type: string, minutes: number, data: object) => ({
        event_id: `evt-${n}`,
        event_type,
        timestamp: emitted(minutes),
        message_id: MESSAGE_ID,
        data,
      });

      const recipientEffects = story.effects.filter((e) => e.topic === 'webhook.event').slice(1);

      const expected = [
        envelope(2, 'sms.processing', 1, base(0)),
        envelope(3, 'sms.processing', 1, base(1)),
        envelope(4, 'sms.processing', 1, base(2)),
        envelope(5, 'sms.sent', 2, { ...base(0), sent_at: at(2) }),
        envelope(6, 'sms.sent', 2, { ...base(1), sent_at: at(2) }),
        envelope(7, 'sms.sent', 2, { ...base(2), sent_at: at(2) }),
        envelope(8, 'sms.delivered', 4, { ...base(0), delivered_at: at(4), segments: 2 }),
        envelope(9, 'sms.failed', 5, {
          ...base(1),
          failed_at: at(5),
          error_code: '1502',
          error_message: 'Handset unreachable',
          retryable: true,
        }),
      ] as WebhookEvent[];
      expect(recipientEffects).to.deep.equal(expected.map(webhookEntry));
    });

    it('when three recipients end delivered, undelivered and enroute, then the journal holds one recipient_signal per changing receipt', () => {
      const { story } = immediateLifecycle();

      expect(story.journal.map((e) => e.type)).to.deep.equal([
        'message_created',
        'occurrence_dispatched',
        ...Array.from({ length: 9 }, () => 'recipient_signal'),
      ]);
      expect(story.journal.at(-1)).to.deep.equal({
        type: 'recipient_signal',
        occurrence: 0,
        recipient: 1,
        signal: {
          type: 'carrier_report',
          status: 'undelivered',
          at: T0 + 5 * MINUTE,
          errorCode: null,
          errorMessage: 'Handset unreachable',
        },
        at: T0 + 5 * MINUTE + 5 * SECOND,
      });
    });

    it('when the event ids come from UUID v4, then every recipient event has its own UUID v4 event_id, and their one outbox entry the first one', () => {
      const story = createStory({ newId: uuidV4 });
      story.create(immediateSpec());

      const decision = story.receipt(receipt(0, 'delivered', T0 + MINUTE));

      const ids = webhookEvents(decision.effects ?? []).map((e) => e.event_id);
      expect(ids).to.have.length(3);
      for (const id of ids) expect(id).to.match(UUID_V4);
      expect(new Set(ids).size).to.equal(3);
      expect(decision.effects?.map((e) => e.id)).to.deep.equal(ids.slice(0, 1));
    });

    it('when delivered arrives first, then processing, sent and delivered are emitted at once with the carrier time', () => {
      const story = createStory();
      story.create(immediateSpec());
      story.clock.set(T0 + 10 * MINUTE);

      const decision = story.receipt(receipt(2, 'delivered', T0 + 7 * MINUTE));

      expect(webhookEvents(decision.effects ?? []).map((e) => [e.event_type, e.timestamp, e.data])).to.deep.equal([
        ['sms.processing', iso(T0 + 10 * MINUTE), { recipient_phone: '+243890000003', carrier: 'orange-cd', recipient_index: 2 }],
        [
          'sms.sent',
          iso(T0 + 10 * MINUTE),
          { recipient_phone: '+243890000003', carrier: 'orange-cd', recipient_index: 2, sent_at: iso(T0 + 7 * MINUTE) },
        ],
        [
          'sms.delivered',
          iso(T0 + 10 * MINUTE),
          { recipient_phone: '+243890000003', carrier: 'orange-cd', recipient_index: 2, delivered_at: iso(T0 + 7 * MINUTE), segments: 2 },
        ],
      ]);
    });

    const failures: readonly (readonly [CarrierStatus, string | null, string, boolean])[] = [
      ['undelivered', null, '1502', true],
      ['rejected', null, '1504', false],
      ['expired', null, '1505', true],
      ['delivery_unknown', null, '1506', true],
      ['partially_delivered', null, '1507', false],
      ['failed', null, '1501', false],
      ['failed', '1521', '1521', false],
    ];
    for (const [status, reported, code, retryable] of failures) {
      it(`when the carrier reports ${status}${reported ? ` with ${reported}` : ''}, then sms.failed carries ${code}, its message and retryable ${retryable}`, () => {
        const story = createStory();
        story.create(immediateSpec());
        story.receipt(receipt(0, 'processing', T0 + MINUTE));

        const decision = story.receipt(receipt(0, status, T0 + 2 * MINUTE, { errorCode: reported }));

        const failed = webhookEvents(decision.effects ?? []).find((e) => e.event_type === 'sms.failed');
        const catalogueMessage =
          Object.values(ERROR_CATALOGUE).find((entry) => entry.code === code)?.message ?? 'The carrier reported a failure.';
        expect(failed?.data).to.deep.equal({
          recipient_phone: '+243810000001',
          carrier: 'vodacom-cd',
          recipient_index: 0,
          failed_at: iso(T0 + 2 * MINUTE),
          error_code: code,
          error_message: catalogueMessage,
          retryable,
        });
      });
    }

    it('when a scheduled occurrence gets receipts, then its events carry occurrence_index and scheduled_at', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0);
      story.dispatch(0);
      story.clock.set(OCCURRENCE_1);
      story.dispatch(1);
      story.clock.advance(MINUTE);

      const decision = story.receipt({ occurrence: 1, recipient: 1, status: 'accepted', at: OCCURRENCE_1 + 30 * SECOND });

      expect(webhookEvents(decision.effects ?? []).map((e) => [e.event_type, e.data])).to.deep.equal([
        [
          'sms.processing',
          {
            recipient_phone: '+243970000002',
            carrier: 'airtel-cd',
            recipient_index: 1,
            occurrence_index: 1,
            scheduled_at: '2025-06-04T09:00:00.000Z',
          },
        ],
        [
          'sms.sent',
          {
            recipient_phone: '+243970000002',
            carrier: 'airtel-cd',
            recipient_index: 1,
            occurrence_index: 1,
            scheduled_at: '2025-06-04T09:00:00.000Z',
            sent_at: iso(OCCURRENCE_1 + 30 * SECOND),
          },
        ],
      ]);
      // the other occurrence's recipient is untouched
      expect(story.state.occurrences[0]?.recipients?.[1]?.status).to.equal('pending');
    });

    it('when an immediate send gets receipts, then its events carry neither occurrence_index nor scheduled_at', () => {
      const story = createStory();
      story.create(immediateSpec());

      const decision = story.receipt(receipt(0, 'delivered', T0 + MINUTE));

      for (const event of webhookEvents(decision.effects ?? [])) {
        expect(event.data).not.to.have.property('occurrence_index');
        expect(event.data).not.to.have.property('scheduled_at');
      }
    });

    it('when a receipt repeats, then nothing is journaled, nothing is emitted and the state is unchanged', () => {
      const story = createStory();
      story.create(immediateSpec());
      story.receipt(receipt(0, 'accepted', T0 + MINUTE));
      const before = story.state;
      story.clock.advance(MINUTE);

      const decision = story.receipt(receipt(0, 'accepted', T0 + MINUTE));

      expect(decision.reply).to.deep.equal(NOTHING_CHANGED);
      expect(decision.events).to.deep.equal([]);
      expect(decision.effects ?? []).to.deep.equal([]);
      expect(story.state).to.equal(before);
    });

    it('when a stale receipt arrives after a terminal one, then nothing is journaled or emitted', () => {
      const stale: readonly CarrierStatus[] = ['processing', 'accepted', 'enroute', 'delivered', 'undelivered', 'failed'];
      for (const status of stale) {
        const story = createStory();
        story.create(immediateSpec());
        story.receipt(receipt(0, 'delivered', T0 + 2 * MINUTE));
        const before = story.state;

        const decision = story.receipt(receipt(0, status, T0 + 3 * MINUTE));

        expect(decision.reply, status).to.deep.equal(NOTHING_CHANGED);
        expect(decision.events, status).to.deep.equal([]);
        expect(decision.effects ?? [], status).to.deep.equal([]);
        expect(story.state, status).to.equal(before);
      }
    });

    it('when accepted arrives after enroute, then it is stale and emits nothing', () => {
      const story = createStory();
      story.create(immediateSpec());
      story.receipt(receipt(0, 'enroute', T0 + 3 * MINUTE));

      const decision = story.receipt(receipt(0, 'accepted', T0 + 2 * MINUTE));

      expect(decision.reply).to.deep.equal(NOTHING_CHANGED);
      expect(story.state.occurrences[0]?.recipients?.[0]?.carrierStatus).to.equal('enroute');
    });

    it('when a receipt names an undispatched occurrence, an unknown occurrence or an unknown recipient, then NOT_FOUND and nothing is journaled', () => {
      const cases: readonly (readonly [string, () => MessageSpec, CarrierReceipt])[] = [
        ['undispatched occurrence of a schedule', scheduledSpec, { occurrence: 0, recipient: 0, status: 'delivered', at: T0 }],
        ['occurrence beyond the schedule', scheduledSpec, { occurrence: 2, recipient: 0, status: 'delivered', at: T0 }],
        ['second occurrence of an immediate send', immediateSpec, { occurrence: 1, recipient: 0, status: 'delivered', at: T0 }],
        ['recipient beyond the list', immediateSpec, { occurrence: 0, recipient: 3, status: 'delivered', at: T0 }],
        ['negative recipient', immediateSpec, { occurrence: 0, recipient: -1, status: 'delivered', at: T0 }],
      ];
      for (const [name, spec, r] of cases) {
        const story = createStory();
        story.create(spec());
        const before = story.state;
        const journaled = story.journal.length;

        const decision = story.receipt(r);

        expect(decision.reply, name).to.deep.equal(NOT_FOUND);
        expect(decision.events, name).to.deep.equal([]);
        expect(decision.effects ?? [], name).to.deep.equal([]);
        expect(story.journal, name).to.have.length(journaled);
        expect(story.state, name).to.equal(before);
      }
    });

    it('when the message was never created, then a receipt is NOT_FOUND', () => {
      const story = createStory();

      const decision = story.receipt(receipt(0, 'delivered', T0));

      expect(decision.reply).to.deep.equal(NOT_FOUND);
      expect(decision.events).to.deep.equal([]);
    });

    it('when the same number appears twice in to, then each entry is its own recipient with its own events', () => {
      const story = createStory();
      const phone = '+243810000001';
      story.create(
        immediateSpec({
          recipients: [
            { index: 0, phone, price: PRICE, carrier: 'vodacom-cd' },
            { index: 1, phone, price: PRICE, carrier: 'vodacom-cd' },
          ],
        }),
      );
      story.receipt(receipt(0, 'delivered', T0 + MINUTE));

      const decision = story.receipt(receipt(1, 'rejected', T0 + 2 * MINUTE));

      expect(
        webhookEvents(decision.effects ?? []).map((e) => [e.event_type, 'recipient_index' in e.data ? e.data.recipient_index : null]),
      ).to.deep.equal([
        ['sms.processing', 1],
        ['sms.failed', 1],
      ]);
      expect(story.state.occurrences[0]?.recipients?.map((r) => r.status)).to.deep.equal(['delivered', 'failed']);
    });

    describe('receipts in any order and with duplicates', () => {
      const PREFIX: readonly CarrierStatus[] = ['processing', 'accepted', 'enroute'];
      const TERMINALS: readonly CarrierStatus[] = ['delivered', 'undelivered', 'expired', 'delivery_unknown', 'partially_delivered'];

      /** A realistic sequence for one recipient: a prefix of processing, accepted, enroute, then maybe one terminal. */
      const recipientSequence = (recipient: number) =>
        fc
          .record({
            prefixLength: fc.nat({ max: PREFIX.length }),
            terminal: fc.option(fc.constantFrom(...TERMINALS), { nil: null }),
            errorMessage: fc.option(fc.constantFrom('Absent subscriber', 'Validity expired'), { nil: null }),
          })
          .map(({ prefixLength, terminal, errorMessage }) => {
            const statuses = [...PREFIX.slice(0, prefixLength), ...(terminal === null ? [] : [terminal])];
            return statuses.map((status, k) =>
              receipt(recipient, status, T0 + (k + 1) * MINUTE + recipient * SECOND, status === terminal ? { errorMessage } : {}),
            );
          });

      /** In-order arrival (by carrier time) and the same receipts each repeated 1–3 times and shuffled. */
      const scenario = fc
        .tuple(recipientSequence(0), recipientSequence(1), recipientSequence(2))
        .map((sequences) => sequences.flat().sort((a, b) => a.at - b.at))
        .chain((inOrder) =>
          fc
            .tuple(...inOrder.map((r) => fc.integer({ min: 1, max: 3 }).map((n) => Array.from({ length: n }, () => r))))
            .map((groups) => groups.flat())
            .chain((all) => fc.shuffledSubarray(all, { minLength: all.length, maxLength: all.length }))
            .map((arrived) => ({ inOrder, arrived })),
        );

      function deliver(arrivals: readonly CarrierReceipt[]) {
        const story = createStory();
        story.create(immediateSpec());
        let lastChange = T0;
        arrivals.forEach((r, i) => {
          story.clock.set(T0 + 10 * MINUTE + i * SECOND);
          const decision = story.receipt(r);
          // every recipient event the merge reports becomes exactly one webhook.event effect, in the same order
          expect(webhookEvents(decision.effects ?? []).map((e) => e.event_type)).to.deep.equal(
            decision.reply.ok ? decision.reply.events : [],
          );
          if (decision.events.length > 0) lastChange = story.clock.now();
        });
        const eventTypes = [0, 1, 2].map((i) => recipientEvents(story.effects, i).map((e) => e.event_type));
        return { view: messageStatusView(story.state), eventTypes, lastChange };
      }

      /** `sent_at` is when the first report proving the hand-off arrived: a later, stale `accepted` is ignored. */
      function firstHandOff(arrivals: readonly CarrierReceipt[], recipient: number): string | null {
        const first = arrivals.find((r) => r.recipient === recipient && r.status !== 'processing');
        return first ? iso(first.at) : null;
      }

      /** What does not depend on arrival order; `sent_at` and `updated_at` are checked on their own. */
      function orderFree(view: MessageStatusView) {
        return { ...view, updated_at: null, recipients: view.recipients.map((r) => ({ ...r, sent_at: null })) };
      }

      it('when receipts arrive permuted and duplicated, then the view and each recipient event-type sequence equal the in-order case', () => {
        fc.assert(
          fc.property(scenario, ({ inOrder, arrived }) => {
            const expected = deliver(inOrder);
            const actual = deliver(arrived);

            expect(actual.eventTypes).to.deep.equal(expected.eventTypes);
            expect(orderFree(actual.view)).to.deep.equal(orderFree(expected.view));
            expect(actual.view.recipients.map((r) => r.sent_at)).to.deep.equal([0, 1, 2].map((i) => firstHandOff(arrived, i)));
            expect(actual.view.updated_at).to.equal(iso(actual.lastChange));
          }),
          { numRuns: 300 },
        );
      });

      it('when receipts arrive in order, then sent_at is the accepted time, or the first later report when accepted is missing', () => {
        fc.assert(
          fc.property(scenario, ({ inOrder }) => {
            const { view } = deliver(inOrder);

            expect(view.recipients.map((r) => r.sent_at)).to.deep.equal([0, 1, 2].map((i) => firstHandOff(inOrder, i)));
          }),
          { numRuns: 100 },
        );
      });

      it('when receipts arrive in any order, then a recipient never gets an event after its terminal one', () => {
        fc.assert(
          fc.property(scenario, ({ arrived }) => {
            const { eventTypes } = deliver(arrived);

            for (const types of eventTypes) {
              expect(new Set(types).size).to.equal(types.length);
              const terminal = types.findIndex((t) => t === 'sms.delivered' || t === 'sms.failed');
              if (terminal !== -1) expect(terminal).to.equal(types.length - 1);
            }
          }),
          { numRuns: 200 },
        );
      });
    });
  });

  describe('status', () => {
    it('when the owner asks, then the reply holds the live state and nothing is journaled', () => {
      const story = createStory();
      story.create(immediateSpec());
      story.receipt(receipt(0, 'accepted', T0 + MINUTE));

      const decision = story.status(MERCHANT);

      expect(decision.reply).to.deep.equal({ ok: true, state: story.state });
      expect(decision.events).to.deep.equal([]);
      expect(decision.effects ?? []).to.deep.equal([]);
    });

    it('when another merchant asks, then NOT_FOUND', () => {
      const story = createStory();
      story.create(immediateSpec());

      expect(story.status('merchant-2').reply).to.deep.equal(NOT_FOUND);
    });

    it('when the message was never created, then NOT_FOUND even for an empty merchant id', () => {
      const story = createStory();

      expect(story.status(MERCHANT).reply).to.deep.equal(NOT_FOUND);
      expect(story.status('').reply).to.deep.equal(NOT_FOUND);
    });
  });

  describe('settled (the host may passivate it after a short idle)', () => {
    const settled = (story: Story): boolean => messageHostPolicy().settled?.(story.state) ?? false;

    it('when every recipient has its final status, then the message is settled, and not a receipt before', () => {
      const story = createStory();
      story.create(immediateSpec());
      expect(settled(story)).to.equal(false);
      story.receipt(receipt(0, 'delivered', T0 + MINUTE));
      story.receipt(receipt(1, 'undelivered', T0 + MINUTE));
      expect(settled(story), 'one recipient still waits').to.equal(false);
      story.receipt(receipt(2, 'accepted', T0 + MINUTE));
      expect(settled(story), 'accepted is not final').to.equal(false);
      story.receipt(receipt(2, 'delivered', T0 + 2 * MINUTE));
      expect(settled(story)).to.equal(true);
    });

    it('when occurrences are still to be dispatched, then it is not settled, even with the dispatched ones final', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0);
      story.dispatchDue();
      for (const recipient of [0, 1, 2]) story.receipt(receipt(recipient, 'delivered', OCCURRENCE_0 + MINUTE));
      expect(settled(story)).to.equal(false);
    });

    it('when the message was never created (a status read of an unknown id), then it is settled', () => {
      expect(settled(createStory())).to.equal(true);
    });
  });

  describe('owner (recorded with the creation, for status reads and receipts)', () => {
    const ownerOf = (events: readonly MessageEvent[]) => messageHostPolicy().ownerOf?.(events);

    it("when a record creates the message, then it establishes the spec's merchant as the owner of the message id", () => {
      const story = createStory();
      const created = story.create(immediateSpec());
      expect(ownerOf(created.events)).to.deep.equal({ id: MESSAGE_ID, owner: MERCHANT });
    });

    it('when a record creates nothing (a repeated create, a receipt, a status read), then it establishes no owner', () => {
      const story = createStory();
      story.create(immediateSpec());
      expect(ownerOf(story.create(immediateSpec()).events), 'a repeated create').to.equal(undefined);
      expect(ownerOf(story.receipt(receipt(0, 'delivered', T0 + MINUTE)).events), 'a receipt').to.equal(undefined);
      expect(ownerOf([]), 'no event').to.equal(undefined);
    });
  });

  describe('receipt deadlines (retired once nothing waits for them)', () => {
    it('when the receipt that makes the last recipient final arrives, then it retires the occurrence’s deadline, and no receipt before it does', () => {
      const story = createStory();
      story.create(immediateSpec());
      expect(
        story.effects.map((e) => e.id),
        'the deadline left with the dispatch',
      ).to.include('timeout:msg-1:0');
      const before = [receipt(0, 'delivered', T0 + MINUTE), receipt(1, 'undelivered', T0 + MINUTE), receipt(2, 'enroute', T0 + MINUTE)];
      for (const r of before) expect(story.receipt(r).retire ?? [], `${r.recipient} ${r.status}`).to.deep.equal([]);

      expect(story.receipt(receipt(2, 'delivered', T0 + 2 * MINUTE)).retire).to.deep.equal(['timeout:msg-1:0']);
      expect(story.receipt(receipt(2, 'delivered', T0 + 2 * MINUTE)).retire ?? [], 'a repeated receipt').to.deep.equal([]);
      expect(story.retired).to.deep.equal(['timeout:msg-1:0']);
    });

    it('when one occurrence of a schedule is final and the other is not, then only the final one’s deadline is retired', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_1);
      story.dispatchDue();
      const retire = story.receipts([
        ...[0, 1, 2].map((recipient) => receipt(recipient, 'delivered', OCCURRENCE_1)),
        receipt(0, 'delivered', OCCURRENCE_1, { occurrence: 1 }),
        receipt(1, 'rejected', OCCURRENCE_1, { occurrence: 1 }),
      ]).retire;

      expect(retire).to.deep.equal(['timeout:msg-1:0']);
      expect(story.receipts([receipt(2, 'undelivered', OCCURRENCE_1 + MINUTE, { occurrence: 1 })]).retire).to.deep.equal([
        'timeout:msg-1:1',
      ]);
    });

    it('when the deadline has already failed the late recipients, then nothing is left to retire', () => {
      const story = createStory();
      story.create(immediateSpec());
      story.receipt(receipt(0, 'delivered', T0 + MINUTE));
      story.clock.set(T0 + DAY);
      story.receiptTimeout(0);
      expect(story.receipt(receipt(1, 'delivered', T0 + DAY)).retire ?? [], 'a receipt after the timeout changes nothing').to.deep.equal(
        [],
      );
      expect(story.retired).to.deep.equal([]);
    });
  });

  describe('apply_receipts', () => {
    const arrival = fc.record({
      occurrence: fc.integer({ min: 0, max: 2 }),
      recipient: fc.integer({ min: 0, max: 3 }),
      status: fc.constantFrom(...CARRIER_STATUSES),
      at: fc.integer({ min: T0, max: T0 + DAY }),
      errorCode: fc.option(fc.constantFrom('1502', '1521'), { nil: undefined }),
    });

    it('when receipts arrive together, then state, journal, events and outcomes are those of the same receipts one by one', () => {
      fc.assert(
        fc.property(
          fc.constantFrom(immediateSpec, scheduledSpec),
          fc.array(arrival, { minLength: 1, maxLength: 30 }),
          (makeSpec, arrivals) => {
            const together = createStory();
            const oneByOne = createStory();
            for (const story of [together, oneByOne]) {
              story.create(makeSpec());
              story.clock.set(T0 + 3 * DAY);
              story.dispatchDue();
              story.clock.set(T0 + 4 * DAY);
            }

            const batch = together.receipts(arrivals);
            const singles = arrivals.map((r) => oneByOne.receipt(r).reply);
            expect(together.state.occurrences[0]?.recipients, 'dispatched before the receipts').to.not.equal(null);

            expect(batch.reply).to.deep.equal({ ok: true, outcomes: singles });
            expect(together.state).to.deep.equal(oneByOne.state);
            expect(together.journal).to.deep.equal(oneByOne.journal);
            expect(together.effects).to.deep.equal(oneByOne.effects);
            expect([...together.retired].sort(), 'the same receipt deadlines retired').to.deep.equal([...oneByOne.retired].sort());
            const final = together.state.occurrences.filter((o) =>
              o.recipients?.every((r) => r.status === 'delivered' || r.status === 'failed'),
            );
            expect([...together.retired].sort(), 'exactly the deadlines of the occurrences now final').to.deep.equal(
              final.map((o) => `timeout:${MESSAGE_ID}:${o.index}`).sort(),
            );
          },
        ),
        { numRuns: 200 },
      );
    });

    it('when a batch repeats receipts already applied, then it journals nothing and emits nothing', () => {
      const story = createStory();
      story.create(immediateSpec());
      story.dispatch(0);
      const arrivals = [receipt(0, 'processing', T0), receipt(0, 'delivered', T0 + MINUTE), receipt(1, 'rejected', T0 + MINUTE)];
      const first = story.receipts(arrivals);
      expect(first.events).to.have.length(3);
      expect(webhookEvents(first.effects ?? []).map((e) => e.event_type)).to.deep.equal([
        'sms.processing',
        'sms.sent',
        'sms.delivered',
        'sms.processing',
        'sms.failed',
      ]);

      const again = story.receipts(arrivals);

      expect(again.events).to.deep.equal([]);
      expect(again.effects ?? []).to.deep.equal([]);
      expect(again.reply).to.deep.equal({ ok: true, outcomes: arrivals.map(() => ({ ok: true, changed: false, events: [] })) });
    });

    it('when the message was never created, then NOT_FOUND for the whole batch', () => {
      const story = createStory();

      expect(story.receipts([receipt(0, 'delivered', T0)]).reply).to.deep.equal(NOT_FOUND);
    });
  });

  describe('recovery', () => {
    const command: fc.Arbitrary<MessageCommand> = fc.oneof(
      fc.record({ type: fc.constant('dispatch_occurrence' as const), occurrence: fc.integer({ min: -1, max: 3 }) }),
      fc.record({
        type: fc.constant('apply_receipt' as const),
        receipt: fc.record({
          occurrence: fc.integer({ min: 0, max: 2 }),
          recipient: fc.integer({ min: 0, max: 3 }),
          status: fc.constantFrom(...CARRIER_STATUSES),
          at: fc.integer({ min: T0, max: T0 + 3 * DAY }),
          errorCode: fc.option(fc.constantFrom('1501', '1521', '9999'), { nil: undefined }),
          errorMessage: fc.option(fc.constantFrom('carrier says no', ''), { nil: undefined }),
        }),
      }),
      fc.record({ type: fc.constant('status' as const), merchantId: fc.constantFrom(MERCHANT, 'merchant-2') }),
      fc.constant<MessageCommand>({ type: 'create', spec: immediateSpec() }),
    );
    const spec = fc.constantFrom(immediateSpec, scheduledSpec, recurringSpec);

    it('when the journaled events are folded from the initial state, then the result equals the live state', () => {
      fc.assert(
        fc.property(spec, fc.array(command, { maxLength: 40 }), (makeSpec, commands) => {
          const story = createStory();
          story.create(makeSpec());
          commands.forEach((c, i) => {
            story.clock.set(T0 + (i + 1) * MINUTE);
            if (c.type === 'create') story.create(c.spec);
            else if (c.type === 'dispatch_occurrence') story.dispatch(c.occurrence);
            else if (c.type === 'apply_receipt') story.receipt(c.receipt);
            else if (c.type === 'status') story.status(c.merchantId);
          });

          const recovered = story.journal.reduce(apply, behaviour.initialState(MESSAGE_ID));
          // the journal stores JSON: replaying what was serialised must give the same state
          const fromJson = (JSON.parse(JSON.stringify(story.journal)) as MessageEvent[]).reduce(apply, behaviour.initialState(MESSAGE_ID));

          expect(recovered).to.deep.equal(story.state);
          expect(fromJson).to.deep.equal(story.state);
        }),
        { numRuns: 300 },
      );
    });

    it('when the journal is folded a record at a time (applyAll), then the result equals folding it event by event', () => {
      fc.assert(
        fc.property(
          spec,
          fc.array(command, { maxLength: 40 }),
          fc.array(fc.integer({ min: 1, max: 12 }), { minLength: 1, maxLength: 10 }),
          (makeSpec, commands, sizes) => {
            const story = createStory();
            story.create(makeSpec());
            story.clock.set(T0 + 3 * DAY);
            story.dispatchDue();
            commands.forEach((c, i) => {
              story.clock.set(T0 + 3 * DAY + (i + 1) * MINUTE);
              if (c.type === 'dispatch_occurrence') story.dispatch(c.occurrence);
              else if (c.type === 'apply_receipt') story.receipt(c.receipt);
            });
            expect(messageHostPolicy().applyAll, 'the message behaviour folds records with it').to.equal(applyMessageEvents);
            let state = behaviour.initialState(MESSAGE_ID);
            for (let from = 0, i = 0; from < story.journal.length; from += sizes[i % sizes.length] ?? 1, i++) {
              state = applyMessageEvents(state, story.journal.slice(from, from + (sizes[i % sizes.length] ?? 1)));
            }

            expect(state).to.deep.equal(story.state);
          },
        ),
        { numRuns: 300 },
      );
    });

    it('when a command is refused or changes nothing, then it journals nothing and emits nothing', () => {
      fc.assert(
        fc.property(spec, fc.array(command, { maxLength: 40 }), (makeSpec, commands) => {
          const story = createStory();
          story.create(makeSpec());
          commands.forEach((c, i) => {
            story.clock.set(T0 + (i + 1) * MINUTE);
            const decision =
              c.type === 'create'
                ? story.create(c.spec)
                : c.type === 'dispatch_occurrence'
                  ? story.dispatch(c.occurrence)
                  : c.type === 'apply_receipt'
                    ? story.receipt(c.receipt)
                    : story.status(c.type === 'status' ? c.merchantId : '');
            const reply = decision.reply as { ok: boolean; changed?: boolean; dispatched?: boolean; created?: boolean };
            const noChange =
              !reply.ok || reply.changed === false || reply.dispatched === false || reply.created === false || c.type === 'status';
            if (noChange) {
              expect(decision.events).to.deep.equal([]);
              expect(decision.effects ?? []).to.deep.equal([]);
            } else {
              expect(decision.events).to.have.length.greaterThan(0);
            }
          });
        }),
        { numRuns: 200 },
      );
    });
  });
});
