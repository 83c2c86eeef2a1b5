import { expect } from 'chai';
import type { FieldIssue } from '../../../src/libraries/errors/app-error.js';
import {
  SEND_LIMITS,
  validateSendRequest,
  type SendValidationContext,
  type ValidSendRequest,
} from '../../../src/messaging/send-request.js';
import { hasWebhookUrlForm } from '../../../src/webhooks/url-guard.js';

const NOW = Date.parse('2026-06-01T10:00:00Z'); // 11:00 in Africa/Kinshasa (UTC+1, no DST)

const CONTEXT: SendValidationContext = {
  now: NOW,
  timezone: 'Africa/Kinshasa',
  defaultCountry: 'CD',
  horizonDays: 365,
  maxScheduledSms: 5000,
  allowHttpLocalhostCallbacks: false,
};

const PHONE = '+243812345678';
const OTHER_PHONE = '+243991234567';

function mustBeValid(body: unknown, context: SendValidationContext = CONTEXT): ValidSendRequest {
  const result = validateSendRequest(body, context);
  if (!result.ok) throw new Error(`expected a valid request, got ${JSON.stringify(result.issues)}`);
  return result.value;
}

function issuesOf(body: unknown, context: SendValidationContext = CONTEXT): readonly FieldIssue[] {
  const result = validateSendRequest(body, context);
  if (result.ok) throw new Error('expected issues, the request was valid');
  return result.issues;
}

/** `[field, type]` of each issue, the part of an issue a client branches on. */
function fieldsAndTypes(body: unknown, context: SendValidationContext = CONTEXT): [string, string][] {
  return issuesOf(body, context).map((i) => [i.field, i.type]);
}

function send(overrides: Record<string, unknown> = {}): Record<string, unknown> {
  return { to: [PHONE], message: 'Hello', ...overrides };
}

function addDays(date: string, days: number): string {
  return new Date(Date.parse(`${date}T00:00:00Z`) + days * 86_400_000).toISOString().slice(0, 10);
}

/** A daily schedule at 12:00 Kinshasa (11:00 UTC) from 2026-06-02 with exactly `occurrences` occurrences. */
function dailyFor(occurrences: number): Record<string, unknown> {
  return { start_date: '2026-06-02', end_date: addDays('2026-06-02', occurrences - 1), frequency: 'daily', interval: 1, times: ['12:00'] };
}

function recurring(recipients: number, message: string, schedule: Record<string, unknown>): Record<string, unknown> {
  return { to: Array.from({ length: recipients }, () => PHONE), message, sending_type: 'recurring', recurring_schedule: schedule };
}

describe('send request (POST /send body)', () => {
  it('when the request is a minimal immediate send, then it is accepted with its defaults', () => {
    const value = mustBeValid(send());
    expect(value.recipients).to.deep.equal([{ index: 0, phone: PHONE }]);
    expect(value.message).to.equal('Hello');
    expect(value.analysis).to.deep.include({ encoding: 'GSM-7', characters: 5, length: 5, segments: 1 });
    expect(value.senderId).to.equal(null);
    expect(value.sendingType).to.equal('immediate');
    expect(value.occurrences).to.deep.equal([]);
    expect(value.recurrence).to.equal(null);
    expect(value.callbackUrl).to.equal(null);
  });

  describe('to', () => {
    const counts: [number, [string, string][] | null][] = [
      [0, [['to', 'array.min']]],
      [1, null],
      [1000, null],
      [1001, [['to', 'array.max']]],
    ];
    for (const [count, expected] of counts) {
      it(`when to has ${count} entries, then it is ${expected ? 'rejected' : 'accepted'}`, () => {
        const body = send({ to: Array.from({ length: count }, () => PHONE) });
        if (expected) expect(fieldsAndTypes(body)).to.deep.equal(expected);
        else {
          const { recipients } = mustBeValid(body);
          expect(recipients).to.have.length(count);
          expect(recipients.at(-1)).to.deep.equal({ index: count - 1, phone: PHONE });
        }
      });
    }

    it('when to is missing, then it is required', () => {
      expect(fieldsAndTypes({ message: 'Hello' })).to.deep.equal([['to', 'any.required']]);
    });

    it('when an entry has 7 characters once spaces and dashes are removed, then it is too short', () => {
      expect(issuesOf(send({ to: ['12 34-56 7'] }))).to.deep.equal([
        { field: 'to[0]', message: 'must have at least 8 characters after removing spaces and dashes', type: 'string.min' },
      ]);
      expect(fieldsAndTypes(send({ to: ['1234567'] }))).to.deep.equal([['to[0]', 'string.min']]);
    });

    it('when an entry has exactly 8 characters once spaces and dashes are removed, then it is accepted', () => {
      expect(mustBeValid(send({ to: ['12345678'] })).recipients).to.deep.equal([{ index: 0, phone: '+24312345678' }]);
      expect(mustBeValid(send({ to: ['12 34-56 78'] })).recipients).to.deep.equal([{ index: 0, phone: '+24312345678' }]);
    });

    it('when an entry is long enough but not a possible number, then it is rejected at its index', () => {
      expect(issuesOf(send({ to: ['+2438123'] }))).to.deep.equal([
        { field: 'to[0]', message: 'is not a possible phone number', type: 'phone.invalid' },
      ]);
    });

    it('when entries use spaces, dashes or the national format, then they are normalised to E.164', () => {
      const { recipients } = mustBeValid(send({ to: ['+243 81-234-5678', '0812345678', '+33 6 12 34 56 78'] }));
      expect(recipients).to.deep.equal([
        { index: 0, phone: PHONE },
        { index: 1, phone: PHONE },
        { index: 2, phone: '+33612345678' },
      ]);
    });

    it('when several entries are bad, then each is reported with its own index', () => {
      expect(fieldsAndTypes(send({ to: [PHONE, '123', OTHER_PHONE, 'not a phone number', '', 42] }))).to.deep.equal([
        ['to[4]', 'string.empty'],
        ['to[5]', 'string.base'],
        ['to[1]', 'string.min'],
        ['to[3]', 'phone.invalid'],
      ]);
    });

    it('when an entry is longer than 64 characters, then it is rejected by the schema', () => {
      expect(fieldsAndTypes(send({ to: ['1'.repeat(SEND_LIMITS.maxRecipientEntryLength + 1)] }))).to.deep.equal([['to[0]', 'string.max']]);
    });

    it('when an entry has exactly 64 characters (spaces included), then it is normalised and accepted', () => {
      const padded = `${PHONE}${' '.repeat(SEND_LIMITS.maxRecipientEntryLength - PHONE.length)}`;
      expect(padded).to.have.length(64);
      expect(mustBeValid(send({ to: [padded] })).recipients).to.deep.equal([{ index: 0, phone: PHONE }]);
    });

    it('when a number appears twice, then both are kept, each with its own index', () => {
      expect(mustBeValid(send({ to: [PHONE, OTHER_PHONE, PHONE] })).recipients).to.deep.equal([
        { index: 0, phone: PHONE },
        { index: 1, phone: OTHER_PHONE },
        { index: 2, phone: PHONE },
      ]);
    });
  });

  describe('message', () => {
    const lengths: [string, string, number, string | null][] = [
      ['GSM', 'a', 0, 'string.empty'],
      ['GSM', 'a', 1, null],
      ['GSM', 'a', 1600, null],
      ['GSM', 'a', 1601, 'string.maxCharacters'],
      ['UCS-2', 'ж', 1, null],
      ['UCS-2', 'ж', 1600, null],
      ['UCS-2', 'ж', 1601, 'string.maxCharacters'],
      ['UCS-2 outside the BMP', '😀', 1600, null],
      ['UCS-2 outside the BMP', '😀', 1601, 'string.maxCharacters'],
      ['GSM extension', '€', 1600, null],
      ['GSM extension', '€', 1601, 'string.maxCharacters'],
    ];
    for (const [kind, char, count, error] of lengths) {
      it(`when a ${kind} message has ${count} characters, then it is ${error ? 'rejected' : 'accepted'}`, () => {
        const message = char.repeat(count);
        if (error) {
          const issues = issuesOf(send({ message }));
          expect(issues.map((i) => [i.field, i.type])).to.deep.equal([['message', error]]);
          if (count > 0) expect(issues[0]?.message).to.equal('must be at most 1600 characters');
        } else {
          const value = mustBeValid(send({ message }));
          expect(value.message).to.equal(message);
          expect(value.analysis.characters).to.equal(count);
          expect(value.analysis.encoding).to.equal(kind.startsWith('GSM') ? 'GSM-7' : 'UCS-2');
        }
      });
    }

    it('when a 1600-character message is accepted, then its segments are counted honestly, not capped at 10', () => {
      expect(mustBeValid(send({ message: 'a'.repeat(1600) })).analysis.segments).to.equal(11);
      expect(mustBeValid(send({ message: 'ж'.repeat(1600) })).analysis.segments).to.equal(24);
    });

    for (const [what, message] of [
      ['a lone high surrogate', 'Hi \uD83D'],
      ['a lone low surrogate', '\uDE00 there'],
      ['reversed surrogates', '\uDE00\uD83D'],
    ]) {
      it(`when the message holds ${what}, then it is rejected`, () => {
        expect(issuesOf(send({ message }))).to.deep.equal([
          { field: 'message', message: 'contains an unpaired UTF-16 surrogate', type: 'string.unpairedSurrogate' },
        ]);
      });
    }

    for (const message of ['\u0000', 'Hi\u0000there']) {
      it(`when the message holds U+0000 (${JSON.stringify(message)}), then it is rejected; U+0001 is text like any other`, () => {
        expect(issuesOf(send({ message }))).to.deep.equal([
          { field: 'message', message: 'must not contain the character U+0000 (NUL)', type: 'string.nul' },
        ]);
        expect(mustBeValid(send({ message: message.replace('\u0000', '\u0001') })).analysis.segments).to.equal(1);
      });
    }

    it('when the message is missing or not a string, then it is rejected', () => {
      expect(fieldsAndTypes({ to: [PHONE] })).to.deep.equal([['message', 'any.required']]);
      expect(fieldsAndTypes(send({ message: 42 }))).to.deep.equal([['message', 'string.base']]);
    });
  });

  describe('sender_id', () => {
    it('when it has 11 characters, then it is accepted', () => {
      expect(mustBeValid(send({ sender_id: 'ABCDEFGHIJK' })).senderId).to.equal('ABCDEFGHIJK');
    });

    it('when it has 12 characters, then it is rejected', () => {
      expect(fieldsAndTypes(send({ sender_id: 'ABCDEFGHIJKL' }))).to.deep.equal([['sender_id', 'string.max']]);
    });

    it('when it has 1 character, then it is accepted; when empty, rejected', () => {
      expect(mustBeValid(send({ sender_id: 'A' })).senderId).to.equal('A');
      expect(fieldsAndTypes(send({ sender_id: '' }))).to.deep.equal([['sender_id', 'string.empty']]);
    });

    it('when it uses letters, digits, space and - _ . &, then it is accepted', () => {
      expect(mustBeValid(send({ sender_id: 'A-b_C.d&E 9' })).senderId).to.equal('A-b_C.d&E 9');
    });

    for (const senderId of ['Shop!', 'a/b', 'x@y', 'Tab\there']) {
      it(`when it is ${JSON.stringify(senderId)}, then it is rejected`, () => {
        expect(issuesOf(send({ sender_id: senderId }))).to.deep.equal([
          { field: 'sender_id', message: 'may contain only letters, digits, space and - _ . &', type: 'string.pattern.base' },
        ]);
      });
    }

    it('when it is null, then there is no sender id', () => {
      expect(mustBeValid(send({ sender_id: null })).senderId).to.equal(null);
    });
  });

  describe('sending_type', () => {
    it('when it is absent or immediate, then the send is immediate', () => {
      expect(mustBeValid(send()).sendingType).to.equal('immediate');
      expect(mustBeValid(send({ sending_type: 'immediate' })).sendingType).to.equal('immediate');
    });

    for (const sendingType of ['IMMEDIATE', 'Scheduled', 'later', '', null, 1]) {
      it(`when it is ${JSON.stringify(sendingType)}, then it is rejected`, () => {
        const issues = issuesOf(send({ sending_type: sendingType }));
        expect(new Set(issues.map((i) => i.field))).to.deep.equal(new Set(['sending_type']));
        expect(issues[0]?.type).to.equal('any.only');
      });
    }
  });

  describe('an invalid sending_type with schedule fields', () => {
    it('when sending_type is invalid and scheduled_dates is given, then only sending_type is reported', () => {
      const body = send({ sending_type: 'later', scheduled_dates: [{ date: '2026-06-02', time: '09:00' }] });
      expect(fieldsAndTypes(body)).to.deep.equal([['sending_type', 'any.only']]);
    });

    it('when sending_type is invalid and recurring_schedule is given, then only sending_type is reported', () => {
      const body = send({ sending_type: 'IMMEDIATE', recurring_schedule: dailyFor(3) });
      expect(fieldsAndTypes(body)).to.deep.equal([['sending_type', 'any.only']]);
    });
  });

  describe('which schedule fields go with which sending_type (rules 1–3)', () => {
    const dates = [{ date: '2026-06-02', time: '09:00' }];
    const schedule = dailyFor(3);

    const cases: [string, Record<string, unknown>, FieldIssue][] = [
      [
        'immediate (default) with scheduled_dates',
        { scheduled_dates: dates },
        { field: 'scheduled_dates', message: 'is not allowed when sending_type is "immediate"', type: 'any.unknown' },
      ],
      [
        'immediate with scheduled_dates',
        { sending_type: 'immediate', scheduled_dates: dates },
        { field: 'scheduled_dates', message: 'is not allowed when sending_type is "immediate"', type: 'any.unknown' },
      ],
      [
        'immediate with recurring_schedule',
        { sending_type: 'immediate', recurring_schedule: schedule },
        { field: 'recurring_schedule', message: 'is not allowed when sending_type is "immediate"', type: 'any.unknown' },
      ],
      [
        'scheduled with recurring_schedule',
        { sending_type: 'scheduled', scheduled_dates: dates, recurring_schedule: schedule },
        { field: 'recurring_schedule', message: 'is not allowed when sending_type is "scheduled"', type: 'any.unknown' },
      ],
      [
        'recurring with scheduled_dates',
        { sending_type: 'recurring', scheduled_dates: dates, recurring_schedule: schedule },
        { field: 'scheduled_dates', message: 'is not allowed when sending_type is "recurring"', type: 'any.unknown' },
      ],
      [
        'scheduled without scheduled_dates',
        { sending_type: 'scheduled' },
        { field: 'scheduled_dates', message: 'is required when sending_type is "scheduled"', type: 'any.required' },
      ],
      [
        'scheduled with scheduled_dates null',
        { sending_type: 'scheduled', scheduled_dates: null },
        { field: 'scheduled_dates', message: 'is required when sending_type is "scheduled"', type: 'any.required' },
      ],
      [
        'recurring without recurring_schedule',
        { sending_type: 'recurring' },
        { field: 'recurring_schedule', message: 'is required when sending_type is "recurring"', type: 'any.required' },
      ],
    ];
    for (const [what, overrides, issue] of cases) {
      it(`when ${what}, then it is 1110 naming ${issue.field}`, () => {
        expect(issuesOf(send(overrides))).to.deep.equal([issue]);
      });
    }

    it('when immediate has both schedule fields, then both are named', () => {
      expect(fieldsAndTypes(send({ scheduled_dates: dates, recurring_schedule: schedule }))).to.deep.equal([
        ['scheduled_dates', 'any.unknown'],
        ['recurring_schedule', 'any.unknown'],
      ]);
    });

    it('when immediate has a past scheduled_dates entry, then only "not allowed" is reported (the dates are not resolved)', () => {
      expect(issuesOf(send({ scheduled_dates: [{ date: '2026-05-31', time: '09:00' }] }))).to.deep.equal([
        { field: 'scheduled_dates', message: 'is not allowed when sending_type is "immediate"', type: 'any.unknown' },
      ]);
    });

    it('when immediate has a recurring_schedule ending before it starts, then only "not allowed" is reported (it is not expanded)', () => {
      expect(issuesOf(send({ recurring_schedule: { ...dailyFor(1), end_date: '2026-06-01' } }))).to.deep.equal([
        { field: 'recurring_schedule', message: 'is not allowed when sending_type is "immediate"', type: 'any.unknown' },
      ]);
    });

    it('when another field is malformed and sending_type is absent, then scheduled_dates is still not allowed for "immediate"', () => {
      const body = send({ scheduled_dates: [{ date: '2026-06-02', time: '09:00' }], colour: 'blue' });
      expect(issuesOf(body)).to.have.deep.members([
        { field: 'colour', message: 'is not allowed', type: 'object.unknown' },
        { field: 'scheduled_dates', message: 'is not allowed when sending_type is "immediate"', type: 'any.unknown' },
      ]);
      expect(issuesOf(body)).to.have.length(2);
    });

    it('when immediate has the schedule fields set to null, then they count as absent', () => {
      expect(mustBeValid(send({ scheduled_dates: null, recurring_schedule: null })).sendingType).to.equal('immediate');
    });
  });

  describe('scheduled_dates', () => {
    const entry = (day: number, time = '09:00') => ({ date: addDays('2026-06-02', day), time });
    const scheduled = (entries: unknown[], context?: Partial<SendValidationContext>) =>
      validateSendRequest(send({ sending_type: 'scheduled', scheduled_dates: entries }), { ...CONTEXT, ...context });

    const counts: [number, [string, string][] | null][] = [
      [0, [['scheduled_dates', 'array.min']]],
      [1, null],
      [20, null],
      [21, [['scheduled_dates', 'array.max']]],
    ];
    for (const [count, expected] of counts) {
      it(`when there are ${count} entries, then they are ${expected ? 'rejected' : 'accepted'}`, () => {
        const result = scheduled(Array.from({ length: count }, (_, i) => entry(i)));
        if (expected) expect(result.ok ? [] : result.issues.map((i) => [i.field, i.type])).to.deep.equal(expected);
        else {
          expect(result.ok).to.equal(true);
          const occurrences = result.ok ? result.value.occurrences : [];
          expect(occurrences).to.have.length(count);
          expect(occurrences[0]).to.equal(Date.parse('2026-06-02T08:00:00Z'));
        }
      });
    }

    it('when the entries are out of order, then the occurrences are in chronological order (UTC instants)', () => {
      const value = mustBeValid(
        send({
          sending_type: 'scheduled',
          scheduled_dates: [
            { date: '2026-06-03', time: '08:00' },
            { date: '2026-06-02', time: '23:30' },
          ],
        }),
      );
      expect(value.sendingType).to.equal('scheduled');
      expect(value.occurrences).to.deep.equal([Date.parse('2026-06-02T22:30:00Z'), Date.parse('2026-06-03T07:00:00Z')]);
      expect(value.recurrence).to.equal(null);
    });

    it('when an entry is exactly now, then it is not in the future; one minute later, it is', () => {
      const atNow = scheduled([{ date: '2026-06-01', time: '11:00' }]);
      expect(atNow.ok ? [] : atNow.issues).to.deep.equal([
        { field: 'scheduled_dates[0]', message: '2026-06-01 11:00 (Africa/Kinshasa) is not in the future', type: 'date.past' },
      ]);
      const later = scheduled([{ date: '2026-06-01', time: '11:01' }]);
      expect(later.ok ? later.value.occurrences : null).to.deep.equal([NOW + 60_000]);
    });

    it('when an entry is in the past, then it is rejected at its index', () => {
      const result = scheduled([entry(0), { date: '2026-05-31', time: '23:59' }]);
      expect(result.ok ? [] : result.issues.map((i) => [i.field, i.type])).to.deep.equal([['scheduled_dates[1]', 'date.past']]);
    });

    it('when an entry falls in the spring-forward gap, then it is 1110 naming its time', () => {
      const result = scheduled([{ date: '2027-03-28', time: '02:30' }], { timezone: 'Europe/Paris' });
      expect(result.ok ? [] : result.issues).to.deep.equal([
        {
          field: 'scheduled_dates[0].time',
          message: '2027-03-28 02:30 does not exist in Europe/Paris (the clocks skip it)',
          type: 'time.nonexistent',
        },
      ]);
    });

    it('when an entry falls in the fall-back hour, then it takes the first occurrence', () => {
      const result = scheduled([{ date: '2026-10-25', time: '02:30' }], { timezone: 'Europe/Paris' });
      expect(result.ok ? result.value.occurrences : null).to.deep.equal([Date.parse('2026-10-25T00:30:00Z')]);
    });

    it('when an entry is malformed or not a calendar date, then the issue names its part', () => {
      const result = scheduled([{ date: '2026-06-02', time: '24:00' }, { date: '2026-02-30', time: '09:00' }, { date: '2026-06-02' }]);
      expect(result.ok ? [] : result.issues.map((i) => [i.field, i.type])).to.deep.equal([
        ['scheduled_dates[0].time', 'string.pattern.base'],
        ['scheduled_dates[2].time', 'any.required'],
      ]);
      const notADay = scheduled([{ date: '2026-02-30', time: '09:00' }]);
      expect(notADay.ok ? [] : notADay.issues.map((i) => [i.field, i.type])).to.deep.equal([['scheduled_dates[0].date', 'date.invalid']]);
    });

    it('when an entry is not written YYYY-MM-DD / HH:mm, then the message says which form is expected', () => {
      const result = scheduled([
        { date: '2026-6-2', time: '9:00' },
        { date: '12026-06-02', time: '09:00' },
      ]);
      expect(result.ok ? [] : result.issues).to.deep.equal([
        { field: 'scheduled_dates[0].date', message: 'must be a date YYYY-MM-DD', type: 'string.pattern.base' },
        { field: 'scheduled_dates[0].time', message: 'must be a 24-hour time HH:mm', type: 'string.pattern.base' },
        { field: 'scheduled_dates[1].date', message: 'must be a date YYYY-MM-DD', type: 'string.pattern.base' },
      ]);
    });

    it('when two entries name the same instant, then the second is rejected', () => {
      const result = scheduled([entry(0), entry(1), entry(0)]);
      expect(result.ok ? [] : result.issues).to.deep.equal([
        { field: 'scheduled_dates[2]', message: 'names the same instant as scheduled_dates[0]', type: 'array.unique' },
      ]);
    });
  });

  describe('recurring_schedule', () => {
    it('when the schedule is valid, then its rule and future occurrences come back', () => {
      const value = mustBeValid(
        send({
          sending_type: 'recurring',
          recurring_schedule: {
            start_date: '2026-06-02',
            end_date: '2026-06-03',
            frequency: 'daily',
            interval: 1,
            times: ['18:00', '08:00'],
          },
        }),
      );
      expect(value.sendingType).to.equal('recurring');
      expect(value.recurrence).to.deep.equal({
        startDate: '2026-06-02',
        endDate: '2026-06-03',
        frequency: 'daily',
        interval: 1,
        times: ['18:00', '08:00'],
      });
      expect(value.occurrences).to.deep.equal(
        ['2026-06-02T07:00:00Z', '2026-06-02T17:00:00Z', '2026-06-03T07:00:00Z', '2026-06-03T17:00:00Z'].map((t) => Date.parse(t)),
      );
    });

    it('when start_date is past, then only the future occurrences count', () => {
      const value = mustBeValid(
        send({
          sending_type: 'recurring',
          recurring_schedule: {
            start_date: '2026-05-01',
            end_date: '2026-06-02',
            frequency: 'daily',
            interval: 1,
            times: ['10:00', '12:00'],
          },
        }),
      );
      expect(value.occurrences).to.deep.equal(
        ['2026-06-01T11:00:00Z', '2026-06-02T09:00:00Z', '2026-06-02T11:00:00Z'].map((t) => Date.parse(t)),
      );
    });

    it('when end_date is null, then the occurrences stop at the 365-day horizon', () => {
      const value = mustBeValid(send({ sending_type: 'recurring', recurring_schedule: { ...dailyFor(1), end_date: null } }));
      expect(value.recurrence?.endDate).to.equal(null);
      expect(value.occurrences).to.have.length(364);
      expect(value.occurrences[0]).to.equal(Date.parse('2026-06-02T11:00:00Z'));
      expect(value.occurrences.at(-1)).to.equal(Date.parse('2027-05-31T11:00:00Z'));
    });

    it('when end_date is omitted, then it is open-ended like null', () => {
      const { end_date: _omitted, ...rest } = dailyFor(1);
      expect(mustBeValid(send({ sending_type: 'recurring', recurring_schedule: rest })).occurrences).to.have.length(364);
    });

    // the cap is on recipients × segments × occurrences (README "Interpretations", Scheduling)
    const TWO_SEGMENTS = 'a'.repeat(161);
    const caps: [number, string, number, boolean][] = [
      [1, 'Hello', 5000, true],
      [1, 'Hello', 5001, false],
      [2, 'Hello', 2500, true],
      [2, 'Hello', 2501, false],
      [1, TWO_SEGMENTS, 2500, true],
      [1, TWO_SEGMENTS, 2501, false],
      [3, 'Hello', 1666, true], // 4998
      [3, 'Hello', 1667, false], // 5001
      [10, TWO_SEGMENTS, 250, true], // 5000
      [10, TWO_SEGMENTS, 251, false], // 5020
    ];
    for (const [recipients, message, occurrences, ok] of caps) {
      const segments = message === TWO_SEGMENTS ? 2 : 1;
      const total = recipients * segments * occurrences;
      it(`when ${recipients} recipient(s) × ${segments} segment(s) × ${occurrences} occurrences = ${total} SMS, then it is ${ok ? 'accepted' : 'over the 5000 cap'}`, () => {
        const body = recurring(recipients, message, dailyFor(occurrences));
        if (ok) expect(mustBeValid(body).occurrences).to.have.length(occurrences);
        else
          expect(issuesOf(body)).to.deep.equal([
            {
              field: 'recurring_schedule',
              message: 'pre-computes more than 5000 SMS (recipients × segments × occurrences)',
              type: 'schedule.limit',
            },
          ]);
      });
    }

    it('when open-ended, then the cap counts the occurrences up to the horizon (13 × 364 fits, 14 × 364 does not)', () => {
      const openEnded = { ...dailyFor(1), end_date: null };
      expect(mustBeValid(recurring(13, 'Hello', openEnded)).occurrences).to.have.length(364);
      expect(fieldsAndTypes(recurring(14, 'Hello', openEnded))).to.deep.equal([['recurring_schedule', 'schedule.limit']]);
    });

    it('when one occurrence alone exceeds the cap (1000 recipients × 6 segments), then it is rejected', () => {
      expect(fieldsAndTypes(recurring(1000, 'a'.repeat(800), dailyFor(1)))).to.deep.equal([['recurring_schedule', 'schedule.limit']]);
    });

    it('when the context sets another cap, then that cap applies', () => {
      const context = { ...CONTEXT, maxScheduledSms: 10 };
      expect(mustBeValid(recurring(2, 'Hello', dailyFor(5)), context).occurrences).to.have.length(5);
      expect(issuesOf(recurring(2, 'Hello', dailyFor(6)), context)).to.deep.equal([
        {
          field: 'recurring_schedule',
          message: 'pre-computes more than 10 SMS (recipients × segments × occurrences)',
          type: 'schedule.limit',
        },
      ]);
    });

    it('when no occurrence is in the future, then it is rejected', () => {
      const allPast = { start_date: '2026-05-01', end_date: '2026-05-31', frequency: 'daily', interval: 1, times: ['12:00'] };
      const earlierToday = { start_date: '2026-06-01', end_date: '2026-06-01', frequency: 'daily', interval: 1, times: ['11:00'] };
      for (const schedule of [allPast, earlierToday]) {
        expect(issuesOf(recurring(1, 'Hello', schedule))).to.deep.equal([
          { field: 'recurring_schedule', message: 'has no occurrence in the future', type: 'schedule.empty' },
        ]);
      }
    });

    it('when end_date is before start_date, then it is rejected naming end_date', () => {
      expect(fieldsAndTypes(recurring(1, 'Hello', { ...dailyFor(1), end_date: '2026-06-01' }))).to.deep.equal([
        ['recurring_schedule.end_date', 'date.min'],
      ]);
    });

    it('when a part of the schedule is malformed, then the issue names that part', () => {
      const bad = { start_date: '2026-6-2', frequency: 'hourly', interval: 0, times: [] };
      expect(fieldsAndTypes(recurring(1, 'Hello', bad))).to.deep.equal([
        ['recurring_schedule.start_date', 'string.pattern.base'],
        ['recurring_schedule.frequency', 'any.only'],
        ['recurring_schedule.interval', 'number.min'],
        ['recurring_schedule.times', 'array.min'],
      ]);
    });
  });

  describe('recurring_schedule with other faults', () => {
    it('when a part of the schedule is not written YYYY-MM-DD / HH:mm, then the message says which form is expected', () => {
      const bad = { start_date: '2026-6-2', end_date: null, frequency: 'daily', interval: 1, times: ['8:00'] };
      expect(issuesOf(recurring(1, 'Hello', bad))).to.deep.equal([
        { field: 'recurring_schedule.start_date', message: 'must be a date YYYY-MM-DD', type: 'string.pattern.base' },
        { field: 'recurring_schedule.times[0]', message: 'must be a 24-hour time HH:mm', type: 'string.pattern.base' },
      ]);
    });

    it('when to is missing, then only to is reported (the cap counts one recipient)', () => {
      expect(fieldsAndTypes({ message: 'Hello', sending_type: 'recurring', recurring_schedule: dailyFor(3) })).to.deep.equal([
        ['to', 'any.required'],
      ]);
    });

    it('when the message is rejected, then the cap counts it as one segment: 500 occurrences of a 1601-character text report only the message', () => {
      // 1601 characters would be 11 segments: 11 × 500 = 5500 would be over the cap
      expect(fieldsAndTypes(recurring(1, 'a'.repeat(1601), dailyFor(500)))).to.deep.equal([['message', 'string.maxCharacters']]);
    });

    it('when the message is not a string, then the cap counts it as one segment', () => {
      expect(fieldsAndTypes(recurring(2, 42 as unknown as string, dailyFor(2501)))).to.deep.equal([
        ['message', 'string.base'],
        ['recurring_schedule', 'schedule.limit'],
      ]);
    });

    it('when another field is malformed, then a valid 2-segment message still counts 2 segments towards the cap', () => {
      const body = { ...recurring(1, 'a'.repeat(161), dailyFor(2501)), extra: 1 };
      expect(fieldsAndTypes(body)).to.have.deep.members([
        ['extra', 'object.unknown'],
        ['recurring_schedule', 'schedule.limit'],
      ]);
      const fits = { ...recurring(1, 'a'.repeat(161), dailyFor(2500)), extra: 1 };
      expect(fieldsAndTypes(fits)).to.deep.equal([['extra', 'object.unknown']]);
    });
  });

  describe('callback_url', () => {
    const https2048 = `https://example.com/${'a'.repeat(2048 - 'https://example.com/'.length)}`;

    it('when it is an absolute https URL of 2048 characters, then it is accepted', () => {
      expect(https2048).to.have.length(2048);
      expect(mustBeValid(send({ callback_url: https2048 })).callbackUrl).to.equal(https2048);
    });

    it('when it has 2049 characters, then it is rejected (once, for its length)', () => {
      expect(fieldsAndTypes(send({ callback_url: `${https2048}b` }))).to.deep.equal([['callback_url', 'string.max']]);
    });

    for (const url of [
      'http://example.com/hooks',
      'ftp://example.com/x',
      '/hooks/sms',
      'example.com/hooks',
      'https://user:secret@example.com/hooks',
      'http://localhost:3000/cb',
      'https:example.com/x',
      'https:/example.com',
      ' https://example.com ',
      'https:///path',
    ]) {
      it(`when it is ${url}, then it is rejected`, () => {
        expect(issuesOf(send({ callback_url: url }))).to.deep.equal([
          { field: 'callback_url', message: 'must be an absolute https:// URL', type: 'string.uri' },
        ]);
      });
    }

    it('when http://localhost callbacks are allowed (embedded mode), then localhost URLs pass and others still fail', () => {
      const context = { ...CONTEXT, allowHttpLocalhostCallbacks: true };
      for (const url of ['http://localhost:3000/cb', 'http://127.0.0.1:8080/x', 'http://[::1]/y', 'https://example.com/z']) {
        expect(mustBeValid(send({ callback_url: url }), context).callbackUrl, url).to.equal(url);
      }
      expect(issuesOf(send({ callback_url: 'http://example.com/cb' }), context)).to.deep.equal([
        { field: 'callback_url', message: 'must be an absolute https:// (or http://localhost) URL', type: 'string.uri' },
      ]);
    });

    it('when an http URL has 2049 characters, then only its length is reported', () => {
      const http2049 = `http://example.com/${'a'.repeat(2049 - 'http://example.com/'.length)}`;
      expect(issuesOf(send({ callback_url: http2049 }))).to.deep.equal([
        { field: 'callback_url', message: 'length must be less than or equal to 2048 characters long', type: 'string.max' },
      ]);
    });

    it('when an http URL has exactly 2048 characters, then it is rejected as not https', () => {
      const http2048 = `http://example.com/${'a'.repeat(2048 - 'http://example.com/'.length)}`;
      expect(issuesOf(send({ callback_url: http2048 }))).to.deep.equal([
        { field: 'callback_url', message: 'must be an absolute https:// URL', type: 'string.uri' },
      ]);
    });

    const notAsWritten = [
      ' https://example.com/hooks', // leading space (URL() would trim it)
      'https://example.com/hooks ', // trailing space
      'https://example.com/a b', // space inside
      'https://user@example.com/hooks', // user name only
      'https://:secret@example.com/hooks', // password only
      'https://[::1/hooks', // URL() throws: unterminated IPv6 address
      'https://example.com:99999/hooks', // URL() throws: port out of range
    ];
    for (const url of notAsWritten) {
      it(`when it is ${JSON.stringify(url)}, then it is rejected`, () => {
        expect(issuesOf(send({ callback_url: url }))).to.deep.equal([
          { field: 'callback_url', message: 'must be an absolute https:// URL', type: 'string.uri' },
        ]);
        expect(hasWebhookUrlForm(url, { allowHttpLocalhost: true })).to.equal(false);
      });
    }

    const notLocalhostAsWritten = [
      ' http://localhost:3000/cb',
      'http://localhost:3000/cb ',
      'http:localhost:3000/cb',
      'http:/localhost/cb',
      'http://user@localhost/cb',
      'http://[::1/cb',
    ];
    for (const url of notLocalhostAsWritten) {
      it(`when http://localhost callbacks are allowed and it is ${JSON.stringify(url)}, then it is rejected`, () => {
        expect(issuesOf(send({ callback_url: url }), { ...CONTEXT, allowHttpLocalhostCallbacks: true })).to.deep.equal([
          { field: 'callback_url', message: 'must be an absolute https:// (or http://localhost) URL', type: 'string.uri' },
        ]);
      });
    }

    it('when it is null, then there is no callback URL', () => {
      expect(mustBeValid(send({ callback_url: null })).callbackUrl).to.equal(null);
    });

    it('hasWebhookUrlForm applies the same rule', () => {
      expect(hasWebhookUrlForm('https://example.com', { allowHttpLocalhost: false })).to.equal(true);
      expect(hasWebhookUrlForm('http://localhost', { allowHttpLocalhost: false })).to.equal(false);
      expect(hasWebhookUrlForm('http://localhost', { allowHttpLocalhost: true })).to.equal(true);
      expect(hasWebhookUrlForm('not a url', { allowHttpLocalhost: true })).to.equal(false);
    });
  });

  describe('the body as a whole', () => {
    it('when the body has an unknown field, then it is rejected by name', () => {
      expect(issuesOf(send({ priority: 'high' }))).to.deep.equal([
        { field: 'priority', message: 'is not allowed', type: 'object.unknown' },
      ]);
    });

    for (const body of [null, 'to=+243812345678', [PHONE], 42]) {
      it(`when the body is ${JSON.stringify(body)}, then the single issue names the body`, () => {
        expect(issuesOf(body)).to.deep.equal([{ field: 'body', message: 'must be a JSON object', type: 'object.base' }]);
      });
    }

    it('when there is no body, then the body is required', () => {
      expect(issuesOf(undefined)).to.deep.equal([{ field: 'body', message: 'value is required', type: 'any.required' }]);
    });

    it('when many fields are wrong, then every issue is collected', () => {
      const issues = issuesOf({
        to: [PHONE, '123'],
        message: 'a'.repeat(1601),
        sender_id: 'ABCDEFGHIJKL',
        callback_url: 'http://example.com/cb',
        colour: 'blue',
      });
      expect(issues.map((i) => [i.field, i.type])).to.have.deep.members([
        ['to[1]', 'string.min'],
        ['message', 'string.maxCharacters'],
        ['sender_id', 'string.max'],
        ['callback_url', 'string.uri'],
        ['colour', 'object.unknown'],
      ]);
      expect(issues).to.have.length(5);
      for (const issue of issues) expect(Object.keys(issue).sort()).to.deep.equal(['field', 'message', 'type']);
    });

    it('when another field is malformed, then a past scheduled date is still reported', () => {
      const body = send({ sender_id: 'Shop!', sending_type: 'scheduled', scheduled_dates: [{ date: '2026-05-31', time: '09:00' }] });
      expect(fieldsAndTypes(body)).to.have.deep.members([
        ['sender_id', 'string.pattern.base'],
        ['scheduled_dates[0]', 'date.past'],
      ]);
    });

    it('when another field is malformed, then a recurring schedule over the cap is still reported', () => {
      const body = { ...recurring(2, 'Hello', dailyFor(2501)), extra: 1 };
      expect(fieldsAndTypes(body)).to.have.deep.members([
        ['extra', 'object.unknown'],
        ['recurring_schedule', 'schedule.limit'],
      ]);
    });
  });
});
