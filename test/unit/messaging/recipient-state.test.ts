import { expect } from 'chai';
import fc from 'fast-check';
import {
  CARRIER_OUTCOMES,
  CARRIER_STATUSES,
  RECIPIENT_STATUSES,
  type CarrierStatus,
  type RecipientStatus,
} from '../../../src/carriers/carrier-outcomes.js';
import { ERROR_CATALOGUE } from '../../../src/libraries/errors/error-catalogue.js';
import {
  aggregateStatus,
  applySignal,
  countRecipients,
  INITIAL_RECIPIENT_STATE,
  type AggregateStatus,
  type RecipientEventType,
  type RecipientSignal,
  type RecipientState,
} from '../../../src/messaging/recipient-state.js';

const T0 = Date.UTC(2025, 5, 1, 8, 0, 0);
const MINUTE = 60_000;
const DAY = 24 * 60 * MINUTE;

function report(status: CarrierStatus, at: number, errorCode?: string | null, errorMessage?: string | null): RecipientSignal {
  return { type: 'carrier_report', status, at, errorCode, errorMessage };
}

/** Applies the signals in turn and collects every emitted event. */
function applyAll(signals: readonly RecipientSignal[], from: RecipientState = INITIAL_RECIPIENT_STATE) {
  let state = from;
  const events: RecipientEventType[] = [];
  for (const signal of signals) {
    const result = applySignal(state, signal);
    state = result.state;
    events.push(...result.events);
  }
  return { state, events };
}

/** A recipient brought to `status` by in-order carrier reports (one minute apart from T0). */
function recipientAt(status: RecipientStatus): RecipientState {
  const path: Record<RecipientStatus, readonly CarrierStatus[]> = {
    pending: [],
    processing: ['processing'],
    sent: ['processing', 'accepted'],
    delivered: ['processing', 'accepted', 'delivered'],
    failed: ['processing', 'accepted', 'undelivered'],
  };
  return applyAll(path[status].map((s, i) => report(s, T0 + i * MINUTE))).state;
}

const TERMINAL_CARRIER_STATUSES = CARRIER_STATUSES.filter(
  (s) => CARRIER_OUTCOMES[s].status === 'delivered' || CARRIER_OUTCOMES[s].status === 'failed',
);

describe('recipient state', () => {
  describe('initial state', () => {
    it('when a recipient is created, then it is pending with nothing set', () => {
      expect(INITIAL_RECIPIENT_STATE).to.deep.equal({
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
    });
  });

  describe("the contract's transitions", () => {
    it('when the connector picks the job up, then pending → processing with sms.processing', () => {
      const result = applySignal(recipientAt('pending'), report('processing', T0));

      expect(result.state.status).to.equal('processing');
      expect(result.state.carrierStatus).to.equal('processing');
      expect(result.events).to.deep.equal(['sms.processing']);
      expect(result.changed).to.equal(true);
    });

    it('when the message centre accepts, then processing → sent with sms.sent', () => {
      const result = applySignal(recipientAt('processing'), report('accepted', T0 + 5 * MINUTE));

      expect(result.state.status).to.equal('sent');
      expect(result.state.carrierStatus).to.equal('accepted');
      expect(result.events).to.deep.equal(['sms.sent']);
    });

    it('when the handset acknowledges, then sent → delivered with sms.delivered', () => {
      const result = applySignal(recipientAt('sent'), report('delivered', T0 + 5 * MINUTE));

      expect(result.state.status).to.equal('delivered');
      expect(result.state.carrierStatus).to.equal('delivered');
      expect(result.state.errorCode).to.equal(null);
      expect(result.events).to.deep.equal(['sms.delivered']);
    });

    it("keeps the message centre's own words as the carrier status when the connector gives them", () => {
      const result = applySignal(recipientAt('sent'), {
        type: 'carrier_report',
        status: 'undelivered',
        at: T0 + 5 * MINUTE,
        carrierStatus: 'smpp:UNDELIV err:001',
      });

      expect(result.state.status).to.equal('failed');
      expect(result.state.carrierStatus).to.equal('smpp:UNDELIV err:001');
      expect(result.state.errorCode).to.equal('1502');
    });

    it('when a negative acknowledgement arrives, then sent → failed with sms.failed and the carrier code', () => {
      const result = applySignal(recipientAt('sent'), report('undelivered', T0 + 5 * MINUTE, null, 'Absent subscriber'));

      expect(result.state.status).to.equal('failed');
      expect(result.state.carrierStatus).to.equal('undelivered');
      expect(result.state.errorCode).to.equal('1502');
      expect(result.state.errorMessage).to.equal('Absent subscriber');
      expect(result.events).to.deep.equal(['sms.failed']);
    });

    it('when the carrier fails with its own 15xx code, then failed keeps that code', () => {
      const result = applySignal(recipientAt('processing'), report('failed', T0 + MINUTE, '1521', 'Route closed'));

      expect(result.state.status).to.equal('failed');
      expect(result.state.errorCode).to.equal('1521');
      expect(result.state.errorMessage).to.equal('Route closed');
      expect(result.events).to.deep.equal(['sms.failed']);
    });

    it('when the gateway fails on a pending recipient, then pending → failed straight, with only sms.failed', () => {
      const result = applySignal(recipientAt('pending'), {
        type: 'gateway_failure',
        at: T0,
        errorCode: '1501',
        errorMessage: 'Connector down',
      });

      expect(result.state.status).to.equal('failed');
      expect(result.state.carrierStatus).to.equal(null);
      expect(result.state.errorCode).to.equal('1501');
      expect(result.state.errorMessage).to.equal('Connector down');
      expect(result.state.failedAt).to.equal(T0);
      expect(result.state.sentAt).to.equal(null);
      expect(result.events).to.deep.equal(['sms.failed']);
      expect(result.changed).to.equal(true);
    });

    for (const from of ['processing', 'sent'] as const) {
      it(`when the gateway fails on a ${from} recipient, then it → failed with only sms.failed`, () => {
        const result = applySignal(recipientAt(from), { type: 'gateway_failure', at: T0 + DAY, errorCode: '1501', errorMessage: 'Boom' });

        expect(result.state.status).to.equal('failed');
        expect(result.state.errorCode).to.equal('1501');
        expect(result.events).to.deep.equal(['sms.failed']);
      });
    }

    for (const from of ['pending', 'processing', 'sent'] as const) {
      it(`when no final receipt comes within 24 h of a ${from} recipient, then it → failed 1503 with sms.failed`, () => {
        const before = recipientAt(from);
        const at = T0 + DAY;

        const result = applySignal(before, { type: 'receipt_timeout', at });

        expect(result.state.status).to.equal('failed');
        expect(result.state.errorCode).to.equal('1503');
        expect(result.state.errorMessage).to.equal(ERROR_CATALOGUE.SMS_TIMEOUT.message);
        expect(result.state.failedAt).to.equal(at);
        expect(result.state.updatedAt).to.equal(at);
        expect(result.state.carrierStatus).to.equal(before.carrierStatus);
        expect(result.events).to.deep.equal(['sms.failed']);
        expect(result.changed).to.equal(true);
      });
    }

    it('when the message centre accepts and the network then reports enroute, then carrier_status updates with no event', () => {
      const sent = recipientAt('sent');
      const at = T0 + 10 * MINUTE;

      const result = applySignal(sent, report('enroute', at));

      expect(result.state.status).to.equal('sent');
      expect(result.state.carrierStatus).to.equal('enroute');
      expect(result.state.updatedAt).to.equal(at);
      expect(result.state.sentAt).to.equal(sent.sentAt);
      expect(result.events).to.deep.equal([]);
      expect(result.changed).to.equal(true);
    });
  });

  describe('after a terminal state nothing changes', () => {
    const laterSignals: readonly (readonly [string, RecipientSignal])[] = [
      ...CARRIER_STATUSES.map((s) => [`a "${s}" report`, report(s, T0 + DAY)] as const),
      ['a receipt timeout', { type: 'receipt_timeout', at: T0 + DAY }],
      ['a gateway failure', { type: 'gateway_failure', at: T0 + DAY, errorCode: '1501', errorMessage: 'late' }],
    ];
    for (const terminal of ['delivered', 'failed'] as const) {
      for (const [name, signal] of laterSignals) {
        it(`when a ${terminal} recipient gets ${name}, then the state is unchanged and no event is emitted`, () => {
          const before = recipientAt(terminal);

          const result = applySignal(before, signal);

          expect(result.state).to.equal(before);
          expect(result.events).to.deep.equal([]);
          expect(result.changed).to.equal(false);
        });
      }
    }

    it('when a recipient timed out and the delivery receipt arrives afterwards, then it stays failed 1503', () => {
      const { state, events } = applyAll([
        report('processing', T0),
        report('accepted', T0 + MINUTE),
        { type: 'receipt_timeout', at: T0 + DAY },
        report('delivered', T0 + DAY + MINUTE),
        { type: 'receipt_timeout', at: T0 + 2 * DAY },
      ]);

      expect(state.status).to.equal('failed');
      expect(state.errorCode).to.equal('1503');
      expect(state.failedAt).to.equal(T0 + DAY);
      expect(state.deliveredAt).to.equal(null);
      expect(events).to.deep.equal(['sms.processing', 'sms.sent', 'sms.failed']);
    });
  });

  describe('after a failure the gateway decided (timeout, gateway failure), late carrier reports change nothing', () => {
    it('when a recipient timed out while sent and "delivered" arrives, then the very same state comes back: carrier_status stays accepted', () => {
      const { state: timedOut } = applyAll([
        report('processing', T0),
        report('accepted', T0 + MINUTE),
        { type: 'receipt_timeout', at: T0 + DAY },
      ]);

      const result = applySignal(timedOut, report('delivered', T0 + DAY + MINUTE));

      expect(result.state).to.equal(timedOut);
      expect(result.state).to.include({
        status: 'failed',
        carrierStatus: 'accepted',
        carrierRank: 2,
        errorCode: '1503',
        updatedAt: T0 + DAY,
      });
      expect(result.events).to.deep.equal([]);
      expect(result.changed).to.equal(false);
    });

    it('when the gateway failed a pending recipient and "processing" arrives, then the very same state comes back: carrier_status stays null', () => {
      const failed = applySignal(INITIAL_RECIPIENT_STATE, {
        type: 'gateway_failure',
        at: T0,
        errorCode: '1501',
        errorMessage: 'Connector down',
      }).state;

      const result = applySignal(failed, report('processing', T0 + MINUTE));

      expect(result.state).to.equal(failed);
      expect(result.state).to.include({ status: 'failed', carrierStatus: null, carrierRank: 0, updatedAt: T0 });
      expect(result.events).to.deep.equal([]);
      expect(result.changed).to.equal(false);
    });
  });

  describe('the whole state after each kind of report', () => {
    it('when "processing" arrives, then only status, carrier fields and updated_at are set (no error fields)', () => {
      expect(applySignal(INITIAL_RECIPIENT_STATE, report('processing', T0)).state).to.deep.equal({
        status: 'processing',
        carrierStatus: 'processing',
        carrierRank: 1,
        errorCode: null,
        errorMessage: null,
        updatedAt: T0,
        sentAt: null,
        deliveredAt: null,
        failedAt: null,
      });
    });

    it('when "enroute" follows "accepted", then carrier_status and updated_at move and nothing else', () => {
      const { state } = applyAll([
        report('processing', T0),
        report('accepted', T0 + MINUTE),
        report('enroute', T0 + 2 * MINUTE, null, 'on its way'),
      ]);

      expect(state).to.deep.equal({
        status: 'sent',
        carrierStatus: 'enroute',
        carrierRank: 3,
        errorCode: null,
        errorMessage: null,
        updatedAt: T0 + 2 * MINUTE,
        sentAt: T0 + MINUTE,
        deliveredAt: null,
        failedAt: null,
      });
    });

    it('when "delivered" arrives with a message, then no error fields are set', () => {
      const { state } = applyAll([report('processing', T0), report('delivered', T0 + MINUTE, '1502', 'ignored')]);

      expect(state).to.deep.equal({
        status: 'delivered',
        carrierStatus: 'delivered',
        carrierRank: 4,
        errorCode: null,
        errorMessage: null,
        updatedAt: T0 + MINUTE,
        sentAt: T0 + MINUTE,
        deliveredAt: T0 + MINUTE,
        failedAt: null,
      });
    });

    it('when "expired" arrives without a message, then the catalogue message is used', () => {
      const { state } = applyAll([report('processing', T0), report('expired', T0 + MINUTE)]);

      expect(state).to.deep.equal({
        status: 'failed',
        carrierStatus: 'expired',
        carrierRank: 4,
        errorCode: '1505',
        errorMessage: ERROR_CATALOGUE.EXPIRED.message,
        updatedAt: T0 + MINUTE,
        sentAt: T0 + MINUTE,
        deliveredAt: null,
        failedAt: T0 + MINUTE,
      });
    });

    it('when the receipt times out on a processing recipient, then carrier fields stay and the timeout fields are set', () => {
      const processing = recipientAt('processing');

      expect(applySignal(processing, { type: 'receipt_timeout', at: T0 + DAY }).state).to.deep.equal({
        status: 'failed',
        carrierStatus: 'processing',
        carrierRank: 1,
        errorCode: '1503',
        errorMessage: ERROR_CATALOGUE.SMS_TIMEOUT.message,
        updatedAt: T0 + DAY,
        sentAt: null,
        deliveredAt: null,
        failedAt: T0 + DAY,
      });
    });
  });

  describe('duplicates and stale reports', () => {
    const stale: readonly (readonly [RecipientStatus, CarrierStatus])[] = [
      ['processing', 'processing'],
      ['sent', 'processing'],
      ['sent', 'accepted'],
    ];
    for (const [at, carrierStatus] of stale) {
      it(`when a ${at} recipient gets a "${carrierStatus}" report again, then nothing changes and nothing is emitted`, () => {
        const before = recipientAt(at);

        const result = applySignal(before, report(carrierStatus, T0 + DAY));

        expect(result.state).to.equal(before);
        expect(result.events).to.deep.equal([]);
        expect(result.changed).to.equal(false);
      });
    }

    it('when "accepted" arrives after "enroute", then it is stale: carrier_status stays enroute and no event', () => {
      const { state } = applyAll([report('processing', T0), report('enroute', T0 + MINUTE)]);

      const result = applySignal(state, report('accepted', T0 + 2 * MINUTE));

      expect(result.state).to.equal(state);
      expect(result.state.carrierStatus).to.equal('enroute');
      expect(result.events).to.deep.equal([]);
      expect(result.changed).to.equal(false);
    });

    it('when a pre-dispatch failure arrives before a late "accepted", then the failure is final and "accepted" emits nothing', () => {
      const { state, events } = applyAll([report('rejected', T0 + 2 * MINUTE), report('processing', T0), report('accepted', T0 + MINUTE)]);

      expect(state).to.include({ status: 'failed', carrierStatus: 'rejected', errorCode: '1504', sentAt: null });
      expect(events).to.deep.equal(['sms.processing', 'sms.failed']);
    });

    it('when "sent" evidence arrives after delivered, then it is ignored', () => {
      const { state, events } = applyAll([report('delivered', T0), report('accepted', T0 + MINUTE), report('enroute', T0 + 2 * MINUTE)]);

      expect(state.status).to.equal('delivered');
      expect(state.carrierStatus).to.equal('delivered');
      expect(events).to.deep.equal(['sms.processing', 'sms.sent', 'sms.delivered']);
    });
  });

  describe('timestamps', () => {
    it('when reports arrive in order, then sent_at is set on accepted and delivered_at on delivered', () => {
      const t1 = T0;
      const t2 = T0 + MINUTE;
      const t3 = T0 + 2 * MINUTE;
      const t4 = T0 + 3 * MINUTE;

      const afterProcessing = applySignal(INITIAL_RECIPIENT_STATE, report('processing', t1)).state;
      const afterAccepted = applySignal(afterProcessing, report('accepted', t2)).state;
      const afterEnroute = applySignal(afterAccepted, report('enroute', t3)).state;
      const afterDelivered = applySignal(afterEnroute, report('delivered', t4)).state;

      expect(afterProcessing).to.include({ updatedAt: t1, sentAt: null, deliveredAt: null, failedAt: null });
      expect(afterAccepted).to.include({ updatedAt: t2, sentAt: t2, deliveredAt: null, failedAt: null });
      expect(afterEnroute).to.include({ updatedAt: t3, sentAt: t2, deliveredAt: null, failedAt: null });
      expect(afterDelivered).to.include({ updatedAt: t4, sentAt: t2, deliveredAt: t4, failedAt: null });
    });

    it('when a failure report arrives after sent, then failed_at is set and sent_at is kept', () => {
      const { state } = applyAll([report('processing', T0), report('accepted', T0 + MINUTE), report('expired', T0 + 2 * MINUTE)]);

      expect(state).to.include({
        status: 'failed',
        sentAt: T0 + MINUTE,
        deliveredAt: null,
        failedAt: T0 + 2 * MINUTE,
        updatedAt: T0 + 2 * MINUTE,
      });
    });

    it('when delivered arrives first, then sent_at and delivered_at both take its time', () => {
      const at = T0 + 7 * MINUTE;

      const { state } = applyAll([report('delivered', at)]);

      expect(state).to.include({ status: 'delivered', sentAt: at, deliveredAt: at, failedAt: null, updatedAt: at });
    });

    it('when rejected before dispatch, then failed_at is set and sent_at stays unset', () => {
      const { state } = applyAll([report('processing', T0), report('rejected', T0 + MINUTE)]);

      expect(state).to.include({ status: 'failed', errorCode: '1504', sentAt: null, deliveredAt: null, failedAt: T0 + MINUTE });
    });

    it('when a stale report arrives, then updated_at does not move', () => {
      const { state } = applyAll([report('processing', T0), report('accepted', T0 + MINUTE), report('processing', T0 + 2 * MINUTE)]);

      expect(state.updatedAt).to.equal(T0 + MINUTE);
    });
  });

  describe('receipts in any order and with duplicates', () => {
    const PREFIX: readonly CarrierStatus[] = ['processing', 'accepted', 'enroute'];
    // rejected and failed end a dispatch the message centre never accepted (they do not imply `sent`), so a
    // realistic sequence has them after at most `processing`; the others can follow any prefix.
    const longestPrefixBefore = (terminal: CarrierStatus | null): number =>
      terminal === null || CARRIER_OUTCOMES[terminal].implies.includes('sent') ? PREFIX.length : 1;

    const connectorCode = fc.constantFrom<string | null>(null, '1501', '1502', '1521', '1401', 'x');
    const inOrderSequence = fc
      .record({
        terminal: fc.option(fc.constantFrom(...TERMINAL_CARRIER_STATUSES), { nil: null }),
        prefixLength: fc.nat({ max: PREFIX.length }),
        code: connectorCode,
      })
      .map(({ terminal, prefixLength, code }) => {
        const statuses = PREFIX.slice(0, Math.min(prefixLength, longestPrefixBefore(terminal)));
        const signals = statuses.map((s, i) => report(s, T0 + i * MINUTE));
        if (terminal !== null) signals.push(report(terminal, T0 + signals.length * MINUTE, code, 'carrier says no'));
        return signals;
      })
      .filter((signals) => signals.length > 0);

    /** The in-order sequence, with each receipt repeated 1–3 times, shuffled. */
    const scrambled = inOrderSequence.chain((inOrder) =>
      fc
        .tuple(...inOrder.map((signal) => fc.integer({ min: 1, max: 3 }).map((n) => Array.from({ length: n }, () => signal))))
        .map((groups) => groups.flat())
        .chain((delivered) => fc.shuffledSubarray(delivered, { minLength: delivered.length, maxLength: delivered.length }))
        .map((arrived) => ({ inOrder, arrived })),
    );

    it('when receipts arrive permuted and duplicated, then status, carrier_status, error_code and events equal the in-order case', () => {
      fc.assert(
        fc.property(scrambled, ({ inOrder, arrived }) => {
          const expected = applyAll(inOrder);
          const actual = applyAll(arrived);

          expect(actual.state.status).to.equal(expected.state.status);
          expect(actual.state.carrierStatus).to.equal(expected.state.carrierStatus);
          expect(actual.state.errorCode).to.equal(expected.state.errorCode);
          expect(actual.events).to.deep.equal(expected.events);
        }),
        { numRuns: 500 },
      );
    });

    it('when receipts arrive in any order, then each event type is emitted at most once and a terminal event comes last', () => {
      fc.assert(
        fc.property(scrambled, ({ arrived }) => {
          const { events } = applyAll(arrived);

          expect(new Set(events).size).to.equal(events.length);
          const terminalAt = events.findIndex((e) => e === 'sms.delivered' || e === 'sms.failed');
          if (terminalAt !== -1) expect(terminalAt).to.equal(events.length - 1);
        }),
        { numRuns: 300 },
      );
    });

    it('when the in-order sequence ends in each terminal status, then the in-order events are as the contract orders them', () => {
      const table: readonly (readonly [readonly CarrierStatus[], readonly RecipientEventType[]])[] = [
        [
          ['processing', 'accepted', 'enroute', 'delivered'],
          ['sms.processing', 'sms.sent', 'sms.delivered'],
        ],
        [
          ['processing', 'accepted', 'undelivered'],
          ['sms.processing', 'sms.sent', 'sms.failed'],
        ],
        [
          ['processing', 'rejected'],
          ['sms.processing', 'sms.failed'],
        ],
        [
          ['processing', 'failed'],
          ['sms.processing', 'sms.failed'],
        ],
        [
          ['processing', 'accepted', 'enroute'],
          ['sms.processing', 'sms.sent'],
        ],
      ];
      for (const [statuses, expected] of table) {
        const { events } = applyAll(statuses.map((s, i) => report(s, T0 + i * MINUTE)));
        expect(events, statuses.join(' → ')).to.deep.equal(expected);
      }
    });

    it('when many recipients each receive scrambled receipts, then delivered + failed + pending equals the total', () => {
      fc.assert(
        fc.property(
          fc.array(
            fc.oneof(
              scrambled.map((s) => s.arrived),
              fc.constant([]),
            ),
            { maxLength: 12 },
          ),
          (perRecipient) => {
            const statuses = perRecipient.map((signals) => applyAll(signals).state.status);

            const counters = countRecipients(statuses);

            expect(counters.delivered + counters.failed + counters.pending).to.equal(perRecipient.length);
            expect(counters.delivered).to.equal(statuses.filter((s) => s === 'delivered').length);
            expect(counters.failed).to.equal(statuses.filter((s) => s === 'failed').length);
          },
        ),
        { numRuns: 200 },
      );
    });
  });

  describe('aggregate status', () => {
    const table: readonly (readonly [readonly RecipientStatus[], AggregateStatus, string])[] = [
      [['pending'], 'pending', 'rule 1: one pending'],
      [['pending', 'pending'], 'pending', 'rule 1: all pending'],
      [['pending', 'processing'], 'pending', 'rule 1: a pending one and none terminal'],
      [['pending', 'sent'], 'pending', 'rule 1: a pending one and none terminal'],
      [['pending', 'delivered'], 'processing', 'rule 2: pending but one is terminal'],
      [['pending', 'failed'], 'processing', 'rule 2: pending but one is terminal'],
      [['processing'], 'processing', 'rule 2: mid-flight'],
      [['processing', 'sent'], 'processing', 'rule 2: not all handed off'],
      [['processing', 'delivered'], 'processing', 'rule 2: not all handed off'],
      [['processing', 'failed', 'sent'], 'processing', 'rule 2: not all handed off'],
      [['sent'], 'sent', 'rule 3: handed off'],
      [['sent', 'sent'], 'sent', 'rule 3: all handed off'],
      [['sent', 'delivered'], 'sent', 'rule 3: all handed off, one still open'],
      [['sent', 'failed'], 'sent', 'rule 3: all handed off, one still open'],
      [['delivered'], 'delivered', 'rule 4: every recipient delivered'],
      [['delivered', 'delivered'], 'delivered', 'rule 4: every recipient delivered'],
      [['failed'], 'failed', 'rule 5: every recipient failed'],
      [['failed', 'failed'], 'failed', 'rule 5: every recipient failed'],
      [['delivered', 'failed'], 'delivered', 'rule 6: a mix with one success'],
      [['failed', 'failed', 'delivered'], 'delivered', 'rule 6: a mix with one success'],
    ];
    for (const [statuses, expected, rule] of table) {
      it(`when recipients are [${statuses.join(', ')}], then the aggregate is ${expected} (${rule})`, () => {
        expect(aggregateStatus(statuses)).to.equal(expected);
      });
    }

    it('when there are no recipients, then the aggregate is pending', () => {
      expect(aggregateStatus([])).to.equal('pending');
    });

    it('when the order of recipients changes, then the aggregate does not', () => {
      fc.assert(
        fc.property(
          fc
            .array(fc.constantFrom(...RECIPIENT_STATUSES), { minLength: 1, maxLength: 8 })
            .chain((statuses) => fc.tuple(fc.constant(statuses), fc.shuffledSubarray(statuses, { minLength: statuses.length }))),
          ([statuses, shuffled]) => {
            expect(aggregateStatus(shuffled)).to.equal(aggregateStatus(statuses));
          },
        ),
      );
    });

    it('when any recipients are given, then the aggregate follows the rules read in order', () => {
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...RECIPIENT_STATUSES), { minLength: 1, maxLength: 8 }), (statuses) => {
          const terminal = statuses.filter((s) => s === 'delivered' || s === 'failed');
          let expected: AggregateStatus;
          if (terminal.length === statuses.length) expected = statuses.includes('delivered') ? 'delivered' : 'failed';
          else if (statuses.includes('pending') && terminal.length === 0) expected = 'pending';
          else if (statuses.every((s) => s !== 'pending' && s !== 'processing')) expected = 'sent';
          else expected = 'processing';

          expect(aggregateStatus(statuses)).to.equal(expected);
        }),
      );
    });
  });

  describe('counters', () => {
    it('when recipients are in every state, then each counter holds its exact split', () => {
      expect(countRecipients(['pending', 'processing', 'sent', 'delivered', 'delivered', 'failed'])).to.deep.equal({
        delivered: 2,
        failed: 1,
        pending: 3,
      });
    });

    it('when there are no recipients, then every counter is 0', () => {
      expect(countRecipients([])).to.deep.equal({ delivered: 0, failed: 0, pending: 0 });
    });

    it('when any recipients are counted, then delivered + failed + pending equals the total', () => {
      fc.assert(
        fc.property(fc.array(fc.constantFrom(...RECIPIENT_STATUSES), { maxLength: 50 }), (statuses) => {
          const { delivered, failed, pending } = countRecipients(statuses);

          expect(delivered + failed + pending).to.equal(statuses.length);
          expect(pending).to.equal(statuses.filter((s) => s === 'pending' || s === 'processing' || s === 'sent').length);
        }),
      );
    });
  });
});
