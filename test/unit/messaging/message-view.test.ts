import { expect } from 'chai';
import fc from 'fast-check';
import { CARRIER_STATUSES, type CarrierStatus } from '../../../src/carriers/carrier-outcomes.js';
import { decide, type BehaviourContext, type Decision } from '../../../src/libraries/actors/behaviour.js';
import { createManualClock, createSequentialIds, toIsoUtc } from '../../../src/libraries/clock/clock.js';
import {
  createMessageBehaviour,
  type CarrierReceipt,
  type MessageCommand,
  type MessageEvent,
  type MessageRecipient,
  type MessageReplies,
  type MessageSpec,
  type MessageState,
} from '../../../src/messaging/message-behaviour.js';
import { messageStatusView, type MessageStatusView, type RecipientView } from '../../../src/messaging/message-view.js';
import { fromUnits, mustParseMoney } from '../../../src/pricing/money.js';

const T0 = Date.UTC(2025, 5, 2, 9, 0, 0);
const SECOND = 1000;
const MINUTE = 60 * SECOND;
const DAY = 24 * 60 * MINUTE;
const MESSAGE_ID = 'msg-1';
const MERCHANT = 'merchant-1';
const PRICE = mustParseMoney('0.015');
const iso = toIsoUtc;

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
    keyId: 'key-1',
    text: 'Bonjour, ' + 'votre rendez-vous de demain est confirmé. '.repeat(4),
    senderId: 'ACME',
    encoding: 'GSM-7',
    segments: 2,
    callbackUrl: null,
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

/** Runs commands the way the actor wrapper does: decide with `{ now, newId, shard: 3 }`, fold the events. */
function createStory() {
  const clock = createManualClock(T0);
  const newId = createSequentialIds('evt');
  let state = behaviour.initialState(MESSAGE_ID);

  function run<K extends MessageCommand['type']>(
    command: Extract<MessageCommand, { type: K }>,
  ): Decision<MessageState, MessageEvent, MessageReplies[K]> {
    const context: BehaviourContext = { now: clock.now(), newId, shard: 3 };
    const decision = decide<MessageState, MessageCommand, MessageEvent, MessageReplies, K>(behaviour, state, command, context);
    state = decision.events.reduce(apply, state);
    return decision;
  }

  return {
    clock,
    get state(): MessageState {
      return state;
    },
    get view(): MessageStatusView {
      return messageStatusView(state);
    },
    create: (spec: MessageSpec) => run<'create'>({ type: 'create', spec }),
    dispatch: (occurrence: number) => run<'dispatch_occurrence'>({ type: 'dispatch_occurrence', occurrence }),
    receipt: (receipt: CarrierReceipt) => run<'apply_receipt'>({ type: 'apply_receipt', receipt }),
    cancel: () => run<'cancel'>({ type: 'cancel', merchantId: MERCHANT }),
    pause: () => run<'pause'>({ type: 'pause', merchantId: MERCHANT }),
    resume: () => run<'resume'>({ type: 'resume', merchantId: MERCHANT }),
  };
}

function receipt(recipient: number, status: CarrierStatus, at: number, extra: Partial<CarrierReceipt> = {}): CarrierReceipt {
  return { occurrence: 0, recipient, status, at, ...extra };
}

/** A recipient nobody has heard about yet. */
function untouched(index: number, recipients: readonly MessageRecipient[] = RECIPIENTS): RecipientView {
  const r = recipients[index];
  return {
    recipient_index: index,
    phone: r?.phone ?? '',
    status: 'pending',
    carrier_status: null,
    segments: 2,
    carrier: r?.carrier ?? '',
    error_code: null,
    error_message: null,
    updated_at: null,
    sent_at: null,
    delivered_at: null,
    failed_at: null,
  };
}

/** Delivers every recipient of `occurrence` with one `delivered` receipt each. */
function deliverAll(story: ReturnType<typeof createStory>, occurrence: number, at: number): void {
  for (const r of RECIPIENTS) story.receipt({ occurrence, recipient: r.index, status: 'delivered', at });
}

describe('message status view', () => {
  describe('built once per state', () => {
    it('when the same state is viewed twice, then the view is the same object; after a receipt, a new view shows it', () => {
      const story = createStory();
      story.create(immediateSpec());
      const first = story.view;
      expect(story.view).to.equal(first);
      story.receipt(receipt(0, 'delivered', story.clock.now()));
      expect(story.view).to.not.equal(first);
      expect(story.view.delivered).to.equal(1);
      expect(first.delivered, 'the earlier view is unchanged').to.equal(0);
    });
  });

  describe('immediate send', () => {
    it('when an immediate send was just created, then it is pending with every recipient pending and no schedule', () => {
      const story = createStory();
      story.create(immediateSpec());

      expect(story.view).to.deep.equal({
        message_id: MESSAGE_ID,
        status: 'pending',
        total_recipients: 3,
        delivered: 0,
        failed: 0,
        pending: 3,
        cancelled: 0,
        skipped: 0,
        created_at: '2025-06-02T09:00:00.000Z',
        updated_at: '2025-06-02T09:00:00.000Z',
        recipients: [untouched(0), untouched(1), untouched(2)],
        sending_type: 'immediate',
        schedule: null,
        occurrences: [],
      });
    });

    it('when three recipients end delivered, undelivered (1502) and still sent, then the view is exactly the contract Message', () => {
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
      for (const r of arrivals) {
        story.clock.set(r.at + 5 * SECOND);
        story.receipt(r);
      }

      expect(story.view).to.deep.equal({
        message_id: MESSAGE_ID,
        status: 'sent',
        total_recipients: 3,
        delivered: 1,
        failed: 1,
        pending: 1,
        cancelled: 0,
        skipped: 0,
        created_at: '2025-06-02T09:00:00.000Z',
        updated_at: '2025-06-02T09:05:05.000Z',
        recipients: [
          {
            recipient_index: 0,
            phone: '+243810000001',
            status: 'delivered',
            carrier_status: 'delivered',
            segments: 2,
            carrier: 'vodacom-cd',
            error_code: null,
            error_message: null,
            updated_at: '2025-06-02T09:04:00.000Z',
            sent_at: '2025-06-02T09:02:00.000Z',
            delivered_at: '2025-06-02T09:04:00.000Z',
            failed_at: null,
          },
          {
            recipient_index: 1,
            phone: '+243970000002',
            status: 'failed',
            carrier_status: 'undelivered',
            segments: 2,
            carrier: 'airtel-cd',
            error_code: '1502',
            error_message: 'Handset unreachable',
            updated_at: '2025-06-02T09:05:00.000Z',
            sent_at: '2025-06-02T09:02:00.000Z',
            delivered_at: null,
            failed_at: '2025-06-02T09:05:00.000Z',
          },
          {
            recipient_index: 2,
            phone: '+243890000003',
            status: 'sent',
            carrier_status: 'enroute',
            segments: 2,
            carrier: 'orange-cd',
            error_code: null,
            error_message: null,
            updated_at: '2025-06-02T09:03:00.000Z',
            sent_at: '2025-06-02T09:02:00.000Z',
            delivered_at: null,
            failed_at: null,
          },
        ],
        sending_type: 'immediate',
        schedule: null,
        occurrences: [],
      });
    });

    it('when a receipt repeats later, then updated_at stays at the last state change', () => {
      const story = createStory();
      story.create(immediateSpec());
      story.clock.set(T0 + 2 * MINUTE);
      story.receipt(receipt(0, 'accepted', T0 + MINUTE));
      story.clock.set(T0 + 9 * MINUTE);

      story.receipt(receipt(0, 'accepted', T0 + MINUTE));

      expect(story.view.updated_at).to.equal(iso(T0 + 2 * MINUTE));
    });

    const aggregates: readonly (readonly [readonly (CarrierStatus | null)[], MessageStatusView['status'], number, number, number])[] = [
      [[null, null, null], 'pending', 0, 0, 3],
      [['accepted', 'accepted', 'enroute'], 'sent', 0, 0, 3],
      [['delivered', 'delivered', 'delivered'], 'delivered', 3, 0, 0],
      [['undelivered', 'rejected', 'expired'], 'failed', 0, 3, 0],
      [['delivered', 'undelivered', 'undelivered'], 'delivered', 1, 2, 0],
      [['delivered', 'failed', 'accepted'], 'sent', 1, 1, 1],
      [['processing', 'accepted', 'delivered'], 'processing', 1, 0, 2],
    ];
    for (const [reports, status, delivered, failed, pending] of aggregates) {
      it(`when the recipients report ${reports.map((r) => r ?? 'nothing').join(', ')}, then the aggregate is ${status} (${delivered}/${failed}/${pending})`, () => {
        const story = createStory();
        story.create(immediateSpec());
        reports.forEach((status, i) => {
          if (status !== null) story.receipt(receipt(i, status, T0 + MINUTE));
        });

        const view = story.view;

        expect([view.status, view.delivered, view.failed, view.pending]).to.deep.equal([status, delivered, failed, pending]);
      });
    }

    it('when the same number appears twice in to, then each entry is its own recipient with its own index and state', () => {
      const phone = '+243810000001';
      const twice: MessageRecipient[] = [
        { index: 0, phone, price: PRICE, carrier: 'vodacom-cd' },
        { index: 1, phone, price: PRICE, carrier: 'vodacom-cd' },
      ];
      const story = createStory();
      story.create(immediateSpec({ recipients: twice, totalMessages: 4, totalCost: fromUnits(600) }));
      story.receipt(receipt(1, 'undelivered', T0 + MINUTE));

      const view = story.view;

      expect(view.total_recipients).to.equal(2);
      expect(view.recipients.map((r) => [r.recipient_index, r.phone, r.status, r.error_code])).to.deep.equal([
        [0, phone, 'pending', null],
        [1, phone, 'failed', '1502'],
      ]);
      expect([view.delivered, view.failed, view.pending]).to.deep.equal([0, 1, 1]);
    });

    it('when the message was never created, then there is no view to build', () => {
      expect(() => messageStatusView(behaviour.initialState(MESSAGE_ID))).to.throw('never created');
    });
  });

  describe('scheduled and recurring sends', () => {
    it('when a scheduled send has not dispatched yet, then it shows scheduled, its schedule and every occurrence still to come', () => {
      const story = createStory();
      story.create(scheduledSpec());

      expect(story.view).to.deep.equal({
        message_id: MESSAGE_ID,
        status: 'scheduled',
        total_recipients: 3,
        delivered: 0,
        failed: 0,
        pending: 3,
        cancelled: 0,
        skipped: 0,
        created_at: '2025-06-02T09:00:00.000Z',
        updated_at: '2025-06-02T09:00:00.000Z',
        recipients: [untouched(0), untouched(1), untouched(2)],
        sending_type: 'scheduled',
        schedule: {
          type: 'scheduled',
          state: 'active',
          next_occurrence_at: '2025-06-03T09:00:00.000Z',
          occurrences_total: 2,
          occurrences_dispatched: 0,
          occurrences_remaining: 2,
        },
        occurrences: [
          {
            occurrence_index: 0,
            status: 'scheduled',
            scheduled_at: '2025-06-03T09:00:00.000Z',
            delivered: 0,
            failed: 0,
            pending: 3,
            cancelled: 0,
            skipped: 0,
          },
          {
            occurrence_index: 1,
            status: 'scheduled',
            scheduled_at: '2025-06-04T09:00:00.000Z',
            delivered: 0,
            failed: 0,
            pending: 3,
            cancelled: 0,
            skipped: 0,
          },
        ],
      });
    });

    it('when the first occurrence is dispatched, then the message leaves scheduled and the schedule points at the next one', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0);

      story.dispatch(0);

      const view = story.view;
      expect(view.status).to.equal('pending');
      expect(view.updated_at).to.equal('2025-06-03T09:00:00.000Z');
      expect(view.schedule).to.deep.equal({
        type: 'scheduled',
        state: 'active',
        next_occurrence_at: '2025-06-04T09:00:00.000Z',
        occurrences_total: 2,
        occurrences_dispatched: 1,
        occurrences_remaining: 1,
      });
      expect(view.occurrences.map((o) => [o.occurrence_index, o.status])).to.deep.equal([
        [0, 'pending'],
        [1, 'scheduled'],
      ]);
    });

    it('when a later occurrence is dispatched, then recipients and the aggregate reflect it, not the delivered earlier one', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0);
      story.dispatch(0);
      story.clock.set(OCCURRENCE_0 + MINUTE);
      deliverAll(story, 0, OCCURRENCE_0 + 30 * SECOND);
      expect(story.view.status).to.equal('delivered');
      story.clock.set(OCCURRENCE_1);

      story.dispatch(1);

      const view = story.view;
      expect(view.status).to.equal('pending');
      expect([view.delivered, view.failed, view.pending]).to.deep.equal([0, 0, 3]);
      expect(view.recipients).to.deep.equal([untouched(0), untouched(1), untouched(2)]);
      expect(view.occurrences).to.deep.equal([
        {
          occurrence_index: 0,
          status: 'delivered',
          scheduled_at: '2025-06-03T09:00:00.000Z',
          delivered: 3,
          failed: 0,
          pending: 0,
          cancelled: 0,
          skipped: 0,
        },
        {
          occurrence_index: 1,
          status: 'pending',
          scheduled_at: '2025-06-04T09:00:00.000Z',
          delivered: 0,
          failed: 0,
          pending: 3,
          cancelled: 0,
          skipped: 0,
        },
      ]);
      expect(view.schedule).to.deep.equal({
        type: 'scheduled',
        state: 'completed',
        next_occurrence_at: null,
        occurrences_total: 2,
        occurrences_dispatched: 2,
        occurrences_remaining: 0,
      });
    });

    it('when a late receipt of an earlier occurrence arrives, then it counts in that occurrence, not in the shown recipients', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0);
      story.dispatch(0);
      story.clock.set(OCCURRENCE_1);
      story.dispatch(1);
      story.receipt({ occurrence: 1, recipient: 0, status: 'delivered', at: OCCURRENCE_1 + SECOND });
      story.clock.set(OCCURRENCE_1 + MINUTE);

      story.receipt({ occurrence: 0, recipient: 2, status: 'expired', at: OCCURRENCE_0 + DAY - SECOND });

      const view = story.view;
      expect(view.recipients.map((r) => r.status)).to.deep.equal(['delivered', 'pending', 'pending']);
      expect(view.occurrences.map((o) => [o.status, o.delivered, o.failed, o.pending])).to.deep.equal([
        ['processing', 0, 1, 2],
        ['processing', 1, 0, 2],
      ]);
      expect(view.updated_at).to.equal(iso(OCCURRENCE_1 + MINUTE));
    });

    it('when a recurring send is in progress, then its schedule says recurring and counts dispatched and remaining occurrences', () => {
      const story = createStory();
      story.create(recurringSpec());
      story.clock.set(OCCURRENCE_0);
      story.dispatch(0);

      const view = story.view;

      expect(view.sending_type).to.equal('recurring');
      expect(view.schedule).to.deep.equal({
        type: 'recurring',
        state: 'active',
        next_occurrence_at: '2025-06-04T09:00:00.000Z',
        occurrences_total: 3,
        occurrences_dispatched: 1,
        occurrences_remaining: 2,
      });
      expect(view.occurrences.map((o) => o.status)).to.deep.equal(['pending', 'scheduled', 'scheduled']);
    });
  });

  describe('cancelled and skipped occurrences', () => {
    const counters = (c: { delivered: number; failed: number; pending: number; cancelled: number; skipped: number }) => [
      c.delivered,
      c.failed,
      c.pending,
      c.cancelled,
      c.skipped,
    ];

    it('when a schedule is cancelled before its first dispatch, then no recipient is pending: all are cancelled, for good', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(T0 + MINUTE);

      story.cancel();
      story.clock.set(OCCURRENCE_1 + 30 * DAY);

      const view = story.view;
      expect(view.status).to.equal('scheduled');
      expect(view.schedule?.state).to.equal('cancelled');
      expect(counters(view)).to.deep.equal([0, 0, 0, 3, 0]);
      expect(view.recipients.map((r) => r.status)).to.deep.equal(['cancelled', 'cancelled', 'cancelled']);
      expect(view.occurrences.map((o) => [o.status, ...counters(o)])).to.deep.equal([
        ['cancelled', 0, 0, 0, 3, 0],
        ['cancelled', 0, 0, 0, 3, 0],
      ]);
    });

    it('when a schedule is cancelled after one occurrence went, then recipients show that occurrence and the cancelled one counts nothing pending', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(OCCURRENCE_0);
      story.dispatch(0);
      deliverAll(story, 0, OCCURRENCE_0 + SECOND);
      story.clock.set(OCCURRENCE_0 + MINUTE);

      story.cancel();

      const view = story.view;
      expect(view.status).to.equal('delivered');
      expect(counters(view)).to.deep.equal([3, 0, 0, 0, 0]);
      expect(view.recipients.map((r) => r.status)).to.deep.equal(['delivered', 'delivered', 'delivered']);
      expect(view.occurrences.map((o) => [o.status, ...counters(o)])).to.deep.equal([
        ['delivered', 3, 0, 0, 0, 0],
        ['cancelled', 0, 0, 0, 3, 0],
      ]);
    });

    it('when an occurrence passes while paused and the schedule resumes, then it is skipped and not pending; the next one still is', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(T0 + MINUTE);
      story.pause();
      story.clock.set(OCCURRENCE_0 + MINUTE);

      story.resume();

      const view = story.view;
      expect(view.occurrences.map((o) => [o.status, ...counters(o)])).to.deep.equal([
        ['skipped', 0, 0, 0, 0, 3],
        ['scheduled', 0, 0, 3, 0, 0],
      ]);
      // the schedule may still send: its recipients wait for the next occurrence
      expect(counters(view)).to.deep.equal([0, 0, 3, 0, 0]);
      expect(view.recipients.map((r) => r.status)).to.deep.equal(['pending', 'pending', 'pending']);
    });

    it('when every occurrence passes while paused, then the schedule completes with all recipients skipped, none pending', () => {
      const story = createStory();
      story.create(scheduledSpec());
      story.clock.set(T0 + MINUTE);
      story.pause();
      story.clock.set(OCCURRENCE_1 + MINUTE);

      story.dispatch(1);

      const view = story.view;
      expect(view.schedule?.state).to.equal('completed');
      expect(counters(view)).to.deep.equal([0, 0, 0, 0, 3]);
      expect(view.recipients.map((r) => r.status)).to.deep.equal(['skipped', 'skipped', 'skipped']);
      expect(view.occurrences.map((o) => o.status)).to.deep.equal(['skipped', 'skipped']);
    });
  });

  describe('counters', () => {
    const anyReceipt = fc.record({
      occurrence: fc.integer({ min: 0, max: 1 }),
      recipient: fc.integer({ min: 0, max: 2 }),
      status: fc.constantFrom(...CARRIER_STATUSES),
      at: fc.integer({ min: T0, max: T0 + 3 * DAY }),
    });
    const step = fc.oneof(
      { weight: 1, arbitrary: fc.integer({ min: 0, max: 1 }).map((occurrence) => ({ dispatch: occurrence })) },
      { weight: 4, arbitrary: anyReceipt.map((r) => ({ receipt: r })) },
      { weight: 1, arbitrary: fc.constantFrom('cancel', 'pause', 'resume').map((manage) => ({ manage })) },
    );

    it('when any receipts, dispatches, cancels, pauses and resumes arrive, then delivered + failed + pending + cancelled + skipped = total_recipients and each counter matches recipients[] and occurrences[]', () => {
      fc.assert(
        fc.property(fc.constantFrom(immediateSpec, scheduledSpec), fc.array(step, { maxLength: 30 }), (makeSpec, steps) => {
          const story = createStory();
          story.create(makeSpec());
          steps.forEach((s, i) => {
            story.clock.set(T0 + (i + 1) * MINUTE);
            if ('dispatch' in s) story.dispatch(s.dispatch);
            else if ('receipt' in s) story.receipt(s.receipt);
            else story[s.manage]();

            const view = story.view;
            const count = (status: string): number => view.recipients.filter((r) => r.status === status).length;
            const split = (c: { delivered: number; failed: number; pending: number; cancelled: number; skipped: number }): number =>
              c.delivered + c.failed + c.pending + c.cancelled + c.skipped;
            expect(split(view)).to.equal(view.total_recipients);
            expect(view.total_recipients).to.equal(3);
            expect(view.delivered).to.equal(count('delivered'));
            expect(view.failed).to.equal(count('failed'));
            expect(view.cancelled).to.equal(count('cancelled'));
            expect(view.skipped).to.equal(count('skipped'));
            // nothing dispatched and nothing left to dispatch: nobody is pending
            const ended = view.occurrences.length > 0 && view.occurrences.every((o) => o.status === 'cancelled' || o.status === 'skipped');
            if (ended) expect(view.pending).to.equal(0);
            for (const o of view.occurrences) {
              expect(split(o)).to.equal(3);
              if (o.status === 'cancelled' || o.status === 'skipped') expect(o.pending).to.equal(0);
            }
          });
        }),
        { numRuns: 200 },
      );
    });
  });
});
