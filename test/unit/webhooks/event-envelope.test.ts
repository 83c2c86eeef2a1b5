import { expect } from 'chai';
import fc from 'fast-check';
import {
  buildEvent,
  EVENT_TYPES,
  isWebhookEvent,
  recipientEventData,
  type DeliveredData,
  type EventType,
  type RecipientEventFacts,
  type SentData,
} from '../../../src/webhooks/event-envelope.js';

const ISO_UTC = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(\.\d{3})?Z$/;
const AT = Date.UTC(2025, 2, 30, 1, 30, 15, 250);
const AT_ISO = '2025-03-30T01:30:15.250Z';
const SCHEDULED = Date.UTC(2025, 3, 1, 7, 0, 0);
const SCHEDULED_ISO = '2025-04-01T07:00:00.000Z';
const EVENT_ID = '3b241101-e2bb-4255-8caf-4136c566a962';

type RecipientEventType = Exclude<EventType, 'sms.queued'>;

function facts(type: RecipientEventType, overrides: Partial<RecipientEventFacts> = {}): RecipientEventFacts {
  return {
    type,
    phone: '+243810000001',
    carrier: 'sandbox',
    recipientIndex: 2,
    occurrence: null,
    at: AT,
    segments: 3,
    errorCode: null,
    errorMessage: null,
    ...overrides,
  };
}

const sortedKeys = (value: object): string[] => Object.keys(value).sort();

// v1's event types and their data fields, plus the additive recipient_index.
const CONTRACT_KEYS: Readonly<Record<RecipientEventType, readonly string[]>> = {
  'sms.processing': ['recipient_phone', 'carrier'],
  'sms.sent': ['recipient_phone', 'carrier', 'sent_at'],
  'sms.delivered': ['recipient_phone', 'carrier', 'delivered_at', 'segments'],
  'sms.failed': ['recipient_phone', 'carrier', 'failed_at', 'error_code', 'error_message', 'retryable'],
};
const RECIPIENT_EVENT_TYPES = Object.keys(CONTRACT_KEYS) as RecipientEventType[];

describe('webhook event envelope', () => {
  describe('buildEvent', () => {
    it('when built, then the envelope has exactly the contract fields with the event_id passed through', () => {
      const data = recipientEventData(facts('sms.sent')) as SentData;

      const event = buildEvent('sms.sent', 'msg-42', data, EVENT_ID, AT);

      expect(sortedKeys(event)).to.deep.equal(['data', 'event_id', 'event_type', 'message_id', 'timestamp']);
      expect(event).to.deep.equal({ event_id: EVENT_ID, event_type: 'sms.sent', timestamp: AT_ISO, message_id: 'msg-42', data });
    });

    it('when built for sms.queued, then data holds exactly the contract fields', () => {
      const data = { total_recipients: 2, total_messages: 4, total_cost: 0.04, currency: 'USD', scheduled_at: null };

      const event = buildEvent('sms.queued', 'msg-1', data, EVENT_ID, AT);

      expect(sortedKeys(event.data)).to.deep.equal(['currency', 'scheduled_at', 'total_cost', 'total_messages', 'total_recipients']);
      expect(event.data).to.deep.equal(data);
      expect(event.event_type).to.equal('sms.queued');
    });

    it('when the same event is built again (a retry), then it carries the same event_id', () => {
      const data = recipientEventData(facts('sms.delivered')) as DeliveredData;

      const first = buildEvent('sms.delivered', 'msg-7', data, EVENT_ID, AT);
      const retry = buildEvent('sms.delivered', 'msg-7', data, EVENT_ID, AT);

      expect(retry.event_id).to.equal(first.event_id);
      expect(retry).to.deep.equal(first);
    });

    it('when any moment is given, then the timestamp is ISO 8601 UTC of that moment', () => {
      fc.assert(
        fc.property(fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }), (ms) => {
          const event = buildEvent('sms.processing', 'm', recipientEventData(facts('sms.processing')), EVENT_ID, ms);

          expect(event.timestamp).to.match(ISO_UTC);
          expect(Date.parse(event.timestamp)).to.equal(ms);
        }),
      );
    });

    it('when the event types are listed, then they are the contract five', () => {
      expect([...EVENT_TYPES]).to.deep.equal(['sms.queued', 'sms.processing', 'sms.sent', 'sms.delivered', 'sms.failed']);
    });
  });

  describe('recipientEventData', () => {
    for (const type of RECIPIENT_EVENT_TYPES) {
      it(`when ${type} is for an immediate send, then data keys are the contract fields plus recipient_index`, () => {
        const data = recipientEventData(facts(type));

        expect(sortedKeys(data)).to.deep.equal([...CONTRACT_KEYS[type], 'recipient_index'].sort());
      });

      it(`when ${type} is for an occurrence, then data keys also carry occurrence_index and scheduled_at`, () => {
        const data = recipientEventData(facts(type, { occurrence: { index: 4, scheduledAt: SCHEDULED } }));

        expect(sortedKeys(data)).to.deep.equal([...CONTRACT_KEYS[type], 'recipient_index', 'occurrence_index', 'scheduled_at'].sort());
        expect(data).to.include({ occurrence_index: 4, scheduled_at: SCHEDULED_ISO });
      });
    }

    it('when sms.processing, then it names the phone, the carrier and the recipient', () => {
      expect(recipientEventData(facts('sms.processing'))).to.deep.equal({
        recipient_phone: '+243810000001',
        carrier: 'sandbox',
        recipient_index: 2,
      });
    });

    it('when sms.sent, then sent_at is the moment in ISO 8601 UTC', () => {
      expect(recipientEventData(facts('sms.sent'))).to.deep.equal({
        recipient_phone: '+243810000001',
        carrier: 'sandbox',
        recipient_index: 2,
        sent_at: AT_ISO,
      });
    });

    it('when sms.delivered, then delivered_at and segments are given', () => {
      expect(recipientEventData(facts('sms.delivered', { segments: 2 }))).to.deep.equal({
        recipient_phone: '+243810000001',
        carrier: 'sandbox',
        recipient_index: 2,
        delivered_at: AT_ISO,
        segments: 2,
      });
    });

    it('when sms.failed, then failed_at, the code, its message and retryable are given', () => {
      const data = recipientEventData(facts('sms.failed', { errorCode: '1502', errorMessage: 'Number unreachable' }));

      expect(data).to.deep.equal({
        recipient_phone: '+243810000001',
        carrier: 'sandbox',
        recipient_index: 2,
        failed_at: AT_ISO,
        error_code: '1502',
        error_message: 'Number unreachable',
        retryable: true,
      });
    });

    it('when recipient index 0 of occurrence 0, then both indexes are present as 0', () => {
      const data = recipientEventData(facts('sms.sent', { recipientIndex: 0, occurrence: { index: 0, scheduledAt: SCHEDULED } }));

      expect(data).to.include({ recipient_index: 0, occurrence_index: 0, scheduled_at: SCHEDULED_ISO });
    });

    describe('retryable of sms.failed derives from the code', () => {
      const table: readonly (readonly [string, boolean])[] = [
        ['1501', false],
        ['1502', true],
        ['1503', true],
        ['1504', false],
        ['1505', true],
        ['1506', true],
        ['1507', false],
        ['1530', false],
      ];
      for (const [code, retryable] of table) {
        it(`when the error code is ${code}, then retryable is ${retryable}`, () => {
          const data = recipientEventData(facts('sms.failed', { errorCode: code, errorMessage: 'x' }));

          expect(data).to.include({ error_code: code, retryable });
        });
      }

      it('when no code is known, then the generic carrier failure 1501 is reported, not retryable', () => {
        const data = recipientEventData(facts('sms.failed', { errorCode: null, errorMessage: null }));

        expect(data).to.include({ error_code: '1501', retryable: false });
        expect(data).to.have.property('error_message').that.is.a('string');
      });
    });

    it('when any facts are given, then every timestamp in data is ISO 8601 UTC of its moment', () => {
      fc.assert(
        fc.property(
          fc.constantFrom(...RECIPIENT_EVENT_TYPES),
          fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }),
          fc.option(fc.record({ index: fc.nat(1000), scheduledAt: fc.integer({ min: 0, max: Date.UTC(9999, 11, 31) }) }), { nil: null }),
          (type, at, occurrence) => {
            const data: Record<string, unknown> = { ...recipientEventData(facts(type, { at, occurrence })) };

            for (const key of ['sent_at', 'delivered_at', 'failed_at']) {
              if (key in data) {
                expect(data[key]).to.be.a('string').and.to.match(ISO_UTC);
                expect(Date.parse(data[key] as string)).to.equal(at);
              }
            }
            if (occurrence) expect(Date.parse(data.scheduled_at as string)).to.equal(occurrence.scheduledAt);
            else expect(data).not.to.have.any.keys('occurrence_index', 'scheduled_at');
          },
        ),
      );
    });
  });

  describe('isWebhookEvent', () => {
    const RECIPIENT_DATA = { recipient_index: 0, recipient_phone: '+243810000001', carrier: 'vodacom-cd' };
    // One valid `data` per event type, and for each of its required fields values of the wrong kind.
    const VALID_DATA: Readonly<Record<EventType, Readonly<Record<string, unknown>>>> = {
      'sms.queued': { total_recipients: 2, total_messages: 4, total_cost: 0.04, currency: 'USD', scheduled_at: null },
      'sms.processing': RECIPIENT_DATA,
      'sms.sent': { ...RECIPIENT_DATA, sent_at: AT_ISO },
      'sms.delivered': { ...RECIPIENT_DATA, delivered_at: AT_ISO, segments: 1 },
      'sms.failed': { ...RECIPIENT_DATA, failed_at: AT_ISO, error_code: '1502', error_message: 'Number unreachable', retryable: true },
    };
    const NOT_TEXT = [42, null, true, {}];
    const NOT_FINITE_NUMBER = ['1', null, Number.NaN, Number.POSITIVE_INFINITY];
    const WRONG_VALUES: Readonly<Record<string, readonly unknown[]>> = {
      total_recipients: NOT_FINITE_NUMBER,
      total_messages: NOT_FINITE_NUMBER,
      total_cost: NOT_FINITE_NUMBER,
      currency: NOT_TEXT,
      scheduled_at: [0, false, {}],
      recipient_index: NOT_FINITE_NUMBER,
      recipient_phone: NOT_TEXT,
      carrier: NOT_TEXT,
      sent_at: NOT_TEXT,
      delivered_at: NOT_TEXT,
      segments: NOT_FINITE_NUMBER,
      failed_at: NOT_TEXT,
      error_code: [1502, null],
      error_message: NOT_TEXT,
      retryable: ['true', 1, null],
    };

    const envelope = (type: EventType, data: unknown = VALID_DATA[type]): Record<string, unknown> => ({
      event_id: EVENT_ID,
      event_type: type,
      timestamp: AT_ISO,
      message_id: 'msg-42',
      data,
    });
    const without = (record: Readonly<Record<string, unknown>>, field: string): Record<string, unknown> =>
      Object.fromEntries(Object.entries(record).filter(([key]) => key !== field));

    for (const type of EVENT_TYPES) {
      describe(type, () => {
        it('when the envelope and every data field are of their kind, then the event is accepted', () => {
          expect(isWebhookEvent(envelope(type))).to.equal(true);
        });

        for (const field of Object.keys(VALID_DATA[type])) {
          it(`when data lacks ${field}, then the event is refused`, () => {
            expect(isWebhookEvent(envelope(type, without(VALID_DATA[type], field)))).to.equal(false);
          });

          it(`when data's ${field} is of another kind, then the event is refused`, () => {
            const wrongValues = WRONG_VALUES[field] ?? [];
            expect(wrongValues, `the test names wrong values for ${field}`).not.to.be.empty;
            for (const wrong of wrongValues) {
              expect(isWebhookEvent(envelope(type, { ...VALID_DATA[type], [field]: wrong })), `${field}: ${String(wrong)}`).to.equal(false);
            }
          });
        }
      });
    }

    it('when sms.queued is scheduled, then its scheduled_at as text is accepted', () => {
      expect(isWebhookEvent(envelope('sms.queued', { ...VALID_DATA['sms.queued'], scheduled_at: SCHEDULED_ISO }))).to.equal(true);
    });

    it('when a recipient event names its occurrence (occurrence_index, scheduled_at), then it is accepted', () => {
      const data = { ...VALID_DATA['sms.sent'], occurrence_index: 3, scheduled_at: SCHEDULED_ISO };

      expect(isWebhookEvent(envelope('sms.sent', data))).to.equal(true);
    });

    it('when an event comes from buildEvent and recipientEventData, then it is accepted', () => {
      for (const type of RECIPIENT_EVENT_TYPES) {
        const data = recipientEventData(facts(type, { occurrence: { index: 1, scheduledAt: SCHEDULED } }));

        expect(isWebhookEvent(buildEvent(type, 'msg-42', data, EVENT_ID, AT)), type).to.equal(true);
      }
    });

    for (const field of ['event_id', 'timestamp', 'message_id']) {
      it(`when the envelope lacks ${field}, then the event is refused`, () => {
        expect(isWebhookEvent(without(envelope('sms.sent'), field))).to.equal(false);
      });

      it(`when the envelope's ${field} is not text, then the event is refused`, () => {
        expect(isWebhookEvent({ ...envelope('sms.sent'), [field]: 42 })).to.equal(false);
        expect(isWebhookEvent({ ...envelope('sms.sent'), [field]: null })).to.equal(false);
      });
    }

    it('when the event type is not one of the five (unknown, another case, missing), then the event is refused', () => {
      expect(isWebhookEvent({ ...envelope('sms.sent'), event_type: 'sms.bounced' })).to.equal(false);
      expect(isWebhookEvent({ ...envelope('sms.sent'), event_type: 'SMS.SENT' })).to.equal(false);
      expect(isWebhookEvent(without(envelope('sms.sent'), 'event_type'))).to.equal(false);
    });

    it('when data is not an object (missing, null, a list, text), then the event is refused', () => {
      expect(isWebhookEvent(without(envelope('sms.sent'), 'data'))).to.equal(false);
      expect(isWebhookEvent(envelope('sms.sent', null))).to.equal(false);
      expect(isWebhookEvent(envelope('sms.sent', [VALID_DATA['sms.sent']]))).to.equal(false);
      expect(isWebhookEvent(envelope('sms.sent', 'data'))).to.equal(false);
    });

    it("when data is another type's (sms.sent's data under sms.delivered), then the event is refused", () => {
      expect(isWebhookEvent(envelope('sms.delivered', VALID_DATA['sms.sent']))).to.equal(false);
      expect(isWebhookEvent(envelope('sms.processing', VALID_DATA['sms.queued']))).to.equal(false);
    });

    it('when the value is not an object at all (null, text, a list of events), then it is refused', () => {
      expect(isWebhookEvent(null)).to.equal(false);
      expect(isWebhookEvent(undefined)).to.equal(false);
      expect(isWebhookEvent(JSON.stringify(envelope('sms.sent')))).to.equal(false);
      expect(isWebhookEvent([envelope('sms.sent')])).to.equal(false);
    });
  });
});
