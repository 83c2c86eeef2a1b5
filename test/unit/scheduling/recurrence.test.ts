import { expect } from 'chai';
import fc from 'fast-check';
import {
  expandRecurrence,
  isRecurrenceRule,
  validateRule,
  type ExpansionWindow,
  type Frequency,
  type RecurrenceResult,
  type RecurrenceRule,
} from '../../../src/scheduling/recurrence.js';

const KINSHASA = 'Africa/Kinshasa';
const PARIS = 'Europe/Paris';
const NEW_YORK = 'America/New_York';
const ZONES = [KINSHASA, PARIS, NEW_YORK] as const;

const MINUTE = 60_000;
const HOUR = 3_600_000;
const DAY = 86_400_000;
const HORIZON_DAYS = 365;

const iso = (instant: number): string => new Date(instant).toISOString();

function rule(overrides: Partial<RecurrenceRule>): RecurrenceRule {
  return { startDate: '2026-05-01', endDate: null, frequency: 'daily', interval: 1, times: ['10:00'], ...overrides };
}

function window(now: string | number, limit = 5000): ExpansionWindow {
  const at = typeof now === 'string' ? Date.parse(now) : now;
  return { now: at, horizonEnd: at + HORIZON_DAYS * DAY, limit };
}

function instantsOf(result: RecurrenceResult): string[] {
  if (!result.ok) expect.fail(`expected the rule to expand, got ${JSON.stringify(result.issues)}`);
  return result.instants.map(iso);
}

function issuesOf(result: RecurrenceResult): { field: string; type: string }[] {
  if (result.ok) expect.fail(`expected issues, got ${result.instants.length} instants`);
  return result.issues.map(({ field, type }) => ({ field, type }));
}

// ---------------------------------------------------------------------------------------------------------------
// An independent reference, built on Intl (ICU time zone data) rather than moment, and on day-by-day filtering
// rather than stepping from candidate to candidate.
// ---------------------------------------------------------------------------------------------------------------

const formatters = new Map<string, Intl.DateTimeFormat>();

/** The zone's UTC offset in minutes at an instant. */
function offsetMinutes(zone: string, instant: number): number {
  let formatter = formatters.get(zone);
  if (!formatter) {
    formatter = new Intl.DateTimeFormat('en-US', {
      timeZone: zone,
      hourCycle: 'h23',
      year: 'numeric',
      month: '2-digit',
      day: '2-digit',
      hour: '2-digit',
      minute: '2-digit',
      second: '2-digit',
    });
    formatters.set(zone, formatter);
  }
  const parts = formatter.formatToParts(instant);
  const get = (type: Intl.DateTimeFormatPartTypes): number => Number(parts.find((part) => part.type === type)?.value);
  const wall = Date.UTC(get('year'), get('month') - 1, get('day'), get('hour'), get('minute'), get('second'));
  return Math.round((wall - Math.floor(instant / 1000) * 1000) / MINUTE);
}

/**
 * Local wall-clock → UTC as the API defines it (README "Interpretations", Scheduling): the first occurrence when
 * ambiguous, and a time inside a spring-forward gap moved forward by the gap's length (i.e. read with the offset
 * before the gap).
 */
function referenceInstant(zone: string, dayNumber: number, minuteOfDay: number): number {
  const naive = dayNumber * DAY + minuteOfDay * MINUTE;
  const before = offsetMinutes(zone, naive - 36 * HOUR);
  const after = offsetMinutes(zone, naive + 36 * HOUR);
  const candidates = [...new Set([before, after])]
    .map((offset) => naive - offset * MINUTE)
    .filter((u) => offsetMinutes(zone, u) === (naive - u) / MINUTE);
  if (candidates.length > 0) return Math.min(...candidates);
  return naive - before * MINUTE;
}

function dayNumberOf(date: string): number {
  return Date.parse(`${date}T00:00:00.000Z`) / DAY;
}

function minuteOfDay(time: string): number {
  const [hours, minutes] = time.split(':').map(Number) as [number, number];
  return hours * 60 + minutes;
}

function isEligibleDay(r: RecurrenceRule, startDay: number, day: number): boolean {
  const start = new Date(startDay * DAY);
  const current = new Date(day * DAY);
  switch (r.frequency) {
    case 'daily':
      return (day - startDay) % r.interval === 0;
    case 'weekly':
      return (day - startDay) % (7 * r.interval) === 0;
    case 'monthly': {
      const months = (current.getUTCFullYear() - start.getUTCFullYear()) * 12 + current.getUTCMonth() - start.getUTCMonth();
      return current.getUTCDate() === start.getUTCDate() && months % r.interval === 0;
    }
    case 'yearly':
      return (
        current.getUTCMonth() === start.getUTCMonth() &&
        current.getUTCDate() === start.getUTCDate() &&
        (current.getUTCFullYear() - start.getUTCFullYear()) % r.interval === 0
      );
  }
}

/** Every distinct occurrence instant of the rule strictly after now (and up to horizonEnd when open-ended), sorted. */
function referenceOccurrences(r: RecurrenceRule, zone: string, w: ExpansionWindow): number[] {
  const startDay = dayNumberOf(r.startDate);
  const lastDay = r.endDate !== null ? dayNumberOf(r.endDate) : Math.floor(w.horizonEnd / DAY) + 2;
  const found = new Set<number>();
  for (let day = startDay; day <= lastDay; day++) {
    if (!isEligibleDay(r, startDay, day)) continue;
    for (const time of r.times) {
      const instant = referenceInstant(zone, day, minuteOfDay(time));
      if (instant <= w.now) continue;
      if (r.endDate === null && instant > w.horizonEnd) continue;
      found.add(instant);
    }
  }
  return [...found].sort((a, b) => a - b);
}

describe('scheduling: recurrence', () => {
  describe('the reference used by the property tests', () => {
    it('when converting the documented DST cases, then it agrees with the contract', () => {
      expect(iso(referenceInstant(PARIS, dayNumberOf('2026-03-29'), minuteOfDay('02:30')))).to.equal('2026-03-29T01:30:00.000Z');
      expect(iso(referenceInstant(PARIS, dayNumberOf('2026-10-25'), minuteOfDay('02:30')))).to.equal('2026-10-25T00:30:00.000Z');
      expect(iso(referenceInstant(NEW_YORK, dayNumberOf('2026-03-08'), minuteOfDay('02:30')))).to.equal('2026-03-08T07:30:00.000Z');
      expect(iso(referenceInstant(NEW_YORK, dayNumberOf('2026-11-01'), minuteOfDay('01:30')))).to.equal('2026-11-01T05:30:00.000Z');
      expect(iso(referenceInstant(KINSHASA, dayNumberOf('2026-03-29'), minuteOfDay('02:30')))).to.equal('2026-03-29T01:30:00.000Z');
    });
  });

  describe('daily', () => {
    it('when the rule is daily at one time in Kinshasa, then each day gives that time at UTC+1', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-05-01', endDate: '2026-05-04', times: ['10:00'] }),
        KINSHASA,
        window('2026-04-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '2026-05-01T09:00:00.000Z',
        '2026-05-02T09:00:00.000Z',
        '2026-05-03T09:00:00.000Z',
        '2026-05-04T09:00:00.000Z',
      ]);
    });

    it('when the rule is daily with interval 2 and several unsorted times, then every other day gives every time, in order', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-05-01', endDate: '2026-05-06', interval: 2, times: ['18:00', '08:00', '12:30'] }),
        KINSHASA,
        window('2026-04-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '2026-05-01T07:00:00.000Z',
        '2026-05-01T11:30:00.000Z',
        '2026-05-01T17:00:00.000Z',
        '2026-05-03T07:00:00.000Z',
        '2026-05-03T11:30:00.000Z',
        '2026-05-03T17:00:00.000Z',
        '2026-05-05T07:00:00.000Z',
        '2026-05-05T11:30:00.000Z',
        '2026-05-05T17:00:00.000Z',
      ]);
    });

    it('when the expansion succeeds, then reachedLimit is false and ok is true', () => {
      const result = expandRecurrence(rule({ startDate: '2026-05-01', endDate: '2026-05-01' }), KINSHASA, window('2026-04-01T00:00:00Z'));
      expect(result).to.deep.equal({ ok: true, instants: [Date.parse('2026-05-01T09:00:00Z')], reachedLimit: false });
    });
  });

  describe('weekly', () => {
    it('when the rule is weekly with interval 3, then it repeats every third week on start_date’s weekday', () => {
      // 2026-04-01 is a Wednesday.
      const result = expandRecurrence(
        rule({ startDate: '2026-04-01', endDate: '2026-06-30', frequency: 'weekly', interval: 3, times: ['09:00'] }),
        KINSHASA,
        window('2026-03-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '2026-04-01T08:00:00.000Z',
        '2026-04-22T08:00:00.000Z',
        '2026-05-13T08:00:00.000Z',
        '2026-06-03T08:00:00.000Z',
        '2026-06-24T08:00:00.000Z',
      ]);
      const weekdays = instantsOf(result).map((text) => new Date(text).getUTCDay());
      expect(weekdays).to.deep.equal([3, 3, 3, 3, 3]);
    });

    it('when a weekly rule crosses the New York spring-forward, then the local time is kept and the UTC offset changes', () => {
      // 2026-03-01 and 2026-03-15 are Sundays.
      const result = expandRecurrence(
        rule({ startDate: '2026-03-01', endDate: '2026-03-15', frequency: 'weekly', interval: 1, times: ['09:00'] }),
        NEW_YORK,
        window('2026-02-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-03-01T14:00:00.000Z', '2026-03-08T13:00:00.000Z', '2026-03-15T13:00:00.000Z']);
    });
  });

  describe('monthly', () => {
    it('when the rule is monthly on the 31st, then months without a 31st are skipped', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-01-31', endDate: '2026-12-31', frequency: 'monthly', times: ['10:00'] }),
        KINSHASA,
        window('2026-01-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '2026-01-31T09:00:00.000Z',
        '2026-03-31T09:00:00.000Z',
        '2026-05-31T09:00:00.000Z',
        '2026-07-31T09:00:00.000Z',
        '2026-08-31T09:00:00.000Z',
        '2026-10-31T09:00:00.000Z',
        '2026-12-31T09:00:00.000Z',
      ]);
    });

    it('when the rule is monthly on the 30th, then only February is skipped', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-01-30', endDate: '2026-04-30', frequency: 'monthly', times: ['10:00'] }),
        KINSHASA,
        window('2026-01-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-01-30T09:00:00.000Z', '2026-03-30T09:00:00.000Z', '2026-04-30T09:00:00.000Z']);
    });

    it('when the rule is monthly with interval 2, then it repeats every second month on the same day', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-01-15', endDate: '2026-12-31', frequency: 'monthly', interval: 2, times: ['10:00'] }),
        KINSHASA,
        window('2026-01-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '2026-01-15T09:00:00.000Z',
        '2026-03-15T09:00:00.000Z',
        '2026-05-15T09:00:00.000Z',
        '2026-07-15T09:00:00.000Z',
        '2026-09-15T09:00:00.000Z',
        '2026-11-15T09:00:00.000Z',
      ]);
    });

    it('when monthly with interval 2 on the 31st lands on short months, then they are skipped but still count towards the interval', () => {
      // Aug, Oct, Dec 2026, then Feb/Apr/Jun 2027 lack a 31st, then Aug and Oct 2027.
      const result = expandRecurrence(
        rule({ startDate: '2026-08-31', endDate: '2027-10-31', frequency: 'monthly', interval: 2, times: ['10:00'] }),
        KINSHASA,
        window('2026-08-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '2026-08-31T09:00:00.000Z',
        '2026-10-31T09:00:00.000Z',
        '2026-12-31T09:00:00.000Z',
        '2027-08-31T09:00:00.000Z',
        '2027-10-31T09:00:00.000Z',
      ]);
    });
  });

  describe('yearly', () => {
    it('when the rule is yearly on 29 February, then it occurs only in leap years', () => {
      const result = expandRecurrence(
        rule({ startDate: '2024-02-29', endDate: '2033-12-31', frequency: 'yearly', times: ['10:00'] }),
        KINSHASA,
        window('2024-01-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2024-02-29T09:00:00.000Z', '2028-02-29T09:00:00.000Z', '2032-02-29T09:00:00.000Z']);
    });

    it('when yearly on 29 February crosses 2100 (not a leap year), then 2100 is skipped', () => {
      const result = expandRecurrence(
        rule({ startDate: '2096-02-29', endDate: '2105-01-01', frequency: 'yearly', times: ['10:00'] }),
        KINSHASA,
        window('2096-01-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2096-02-29T09:00:00.000Z', '2104-02-29T09:00:00.000Z']);
    });

    it('when yearly on 29 February has interval 3, then only the years that are both on the interval and leap count', () => {
      const result = expandRecurrence(
        rule({ startDate: '2024-02-29', endDate: '2048-12-31', frequency: 'yearly', interval: 3, times: ['10:00'] }),
        KINSHASA,
        window('2024-01-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2024-02-29T09:00:00.000Z', '2036-02-29T09:00:00.000Z', '2048-02-29T09:00:00.000Z']);
    });

    it('when yearly on an ordinary day with interval 2, then every second year on that day counts', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-07-14', endDate: '2031-07-14', frequency: 'yearly', interval: 2, times: ['10:00'] }),
        PARIS,
        window('2026-01-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-07-14T08:00:00.000Z', '2028-07-14T08:00:00.000Z', '2030-07-14T08:00:00.000Z']);
    });
  });

  describe('end_date', () => {
    it('when end_date is given, then it is inclusive up to its last minute', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-05-01', endDate: '2026-05-03', times: ['23:59'] }),
        KINSHASA,
        window('2026-04-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-05-01T22:59:00.000Z', '2026-05-02T22:59:00.000Z', '2026-05-03T22:59:00.000Z']);
    });

    it('when end_date equals start_date, then that single day counts', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-05-01', endDate: '2026-05-01', times: ['00:00', '23:59'] }),
        KINSHASA,
        window('2026-04-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-04-30T23:00:00.000Z', '2026-05-01T22:59:00.000Z']);
    });

    it('when end_date is before start_date, then recurring_schedule.end_date is date.min', () => {
      const result = expandRecurrence(rule({ startDate: '2026-05-02', endDate: '2026-05-01' }), KINSHASA, window('2026-04-01T00:00:00Z'));
      if (result.ok) expect.fail('expected end_date before start_date to be rejected');
      expect(result.issues).to.deep.equal([
        { field: 'recurring_schedule.end_date', message: 'must not be before start_date', type: 'date.min' },
      ]);
    });

    it('when end_date is set, then occurrences beyond the 365-day horizon still count (the horizon applies to open-ended rules only)', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-01-15', endDate: '2027-06-15', frequency: 'monthly', times: ['10:00'] }),
        KINSHASA,
        window('2026-01-01T00:00:00Z'),
      );
      const instants = instantsOf(result);
      expect(instants).to.have.length(18);
      expect(instants.at(-1)).to.equal('2027-06-15T09:00:00.000Z');
    });

    it('when end_date is in the past, then the rule expands to no occurrence (the caller reports schedule.empty)', () => {
      const result = expandRecurrence(rule({ startDate: '2026-01-01', endDate: '2026-01-31' }), KINSHASA, window('2026-02-01T00:00:00Z'));
      expect(result).to.deep.equal({ ok: true, instants: [], reachedLimit: false });
    });
  });

  describe('open-ended (end_date null) over a 365-day horizon', () => {
    it('when daily at 10:00 Kinshasa starting now, then now itself is excluded and an occurrence exactly at the horizon is included', () => {
      // now = 2026-01-01 10:00 local (09:00Z); horizonEnd = 2027-01-01 10:00 local.
      const result = expandRecurrence(rule({ startDate: '2026-01-01', endDate: null }), KINSHASA, window('2026-01-01T09:00:00Z'));
      const instants = instantsOf(result);
      expect(instants).to.have.length(365);
      expect(instants[0]).to.equal('2026-01-02T09:00:00.000Z');
      expect(instants.at(-1)).to.equal('2027-01-01T09:00:00.000Z');
    });

    it('when daily at 10:00 with now 1 ms earlier, then the first day counts and the horizon day (1 ms past horizonEnd) drops out', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-01-01', endDate: null }),
        KINSHASA,
        window(Date.parse('2026-01-01T09:00:00Z') - 1),
      );
      const instants = instantsOf(result);
      expect(instants).to.have.length(365);
      expect(instants[0]).to.equal('2026-01-01T09:00:00.000Z');
      expect(instants.at(-1)).to.equal('2026-12-31T09:00:00.000Z');
    });

    it('when weekly with two times over the horizon, then 52 weeks × 2 times are counted', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-01-05', endDate: null, frequency: 'weekly', times: ['08:00', '17:00'] }),
        KINSHASA,
        window('2026-01-01T00:00:00Z'),
      );
      const instants = instantsOf(result);
      expect(instants).to.have.length(104);
      expect(instants.slice(0, 2)).to.deep.equal(['2026-01-05T07:00:00.000Z', '2026-01-05T16:00:00.000Z']);
      expect(instants.slice(-2)).to.deep.equal(['2026-12-28T07:00:00.000Z', '2026-12-28T16:00:00.000Z']);
    });

    it('when monthly on the 31st open-ended, then the 7 months with a 31st inside the horizon count', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-03-31', endDate: null, frequency: 'monthly', times: ['10:00'] }),
        KINSHASA,
        window('2026-03-27T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '2026-03-31T09:00:00.000Z',
        '2026-05-31T09:00:00.000Z',
        '2026-07-31T09:00:00.000Z',
        '2026-08-31T09:00:00.000Z',
        '2026-10-31T09:00:00.000Z',
        '2026-12-31T09:00:00.000Z',
        '2027-01-31T09:00:00.000Z',
      ]);
    });

    it('when yearly open-ended, then only the one occurrence inside the horizon counts', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-06-01', endDate: null, frequency: 'yearly' }),
        KINSHASA,
        window('2026-01-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-06-01T09:00:00.000Z']);
    });
  });

  describe('past start_date', () => {
    it('when start_date is in the past, then only occurrences strictly after now count', () => {
      const result = expandRecurrence(rule({ startDate: '2026-01-01', endDate: '2026-01-10' }), KINSHASA, window('2026-01-05T12:00:00Z'));
      expect(instantsOf(result)).to.deep.equal([
        '2026-01-06T09:00:00.000Z',
        '2026-01-07T09:00:00.000Z',
        '2026-01-08T09:00:00.000Z',
        '2026-01-09T09:00:00.000Z',
        '2026-01-10T09:00:00.000Z',
      ]);
    });

    it('when now is exactly an occurrence, then that occurrence is excluded; 1 ms before, it is included', () => {
      const r = rule({ startDate: '2026-01-01', endDate: '2026-01-03' });
      const at = Date.parse('2026-01-02T09:00:00Z');
      expect(instantsOf(expandRecurrence(r, KINSHASA, window(at)))).to.deep.equal(['2026-01-03T09:00:00.000Z']);
      expect(instantsOf(expandRecurrence(r, KINSHASA, window(at - 1)))).to.deep.equal([
        '2026-01-02T09:00:00.000Z',
        '2026-01-03T09:00:00.000Z',
      ]);
    });

    it('when a past weekly interval-2 rule resumes after now, then the phase is kept from start_date', () => {
      // 2026-01-05 is a Monday; occurrences every 14 days: …, 02-02, 02-16, 03-02.
      const result = expandRecurrence(
        rule({ startDate: '2026-01-05', endDate: '2026-03-10', frequency: 'weekly', interval: 2 }),
        KINSHASA,
        window('2026-02-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-02-02T09:00:00.000Z', '2026-02-16T09:00:00.000Z', '2026-03-02T09:00:00.000Z']);
    });

    it('when start_date is 1900-01-01 daily open-ended, then it completes quickly with the next 365 days', function () {
      const result = expandRecurrence(rule({ startDate: '1900-01-01', endDate: null }), KINSHASA, window('2026-03-27T00:00:00Z'));
      const instants = instantsOf(result);
      expect(instants).to.have.length(365);
      expect(instants[0]).to.equal('2026-03-27T09:00:00.000Z');
      expect(instants.at(-1)).to.equal('2027-03-26T09:00:00.000Z');
    });

    it('when start_date is 1900-01-01 daily with interval 7, then the phase from 1900 is kept', function () {
      // 1900-01-01 was a Monday, so every 7th day from it is a Monday; 2026-03-30 is a Monday.
      const result = expandRecurrence(
        rule({ startDate: '1900-01-01', endDate: '2026-04-30', interval: 7 }),
        PARIS,
        window('2026-03-27T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '2026-03-30T08:00:00.000Z',
        '2026-04-06T08:00:00.000Z',
        '2026-04-13T08:00:00.000Z',
        '2026-04-20T08:00:00.000Z',
        '2026-04-27T08:00:00.000Z',
      ]);
    });

    it('when start_date is 1900-01-31 monthly open-ended, then it completes quickly with the months having a 31st', function () {
      const result = expandRecurrence(
        rule({ startDate: '1900-01-31', endDate: null, frequency: 'monthly', times: ['10:00', '11:00'] }),
        KINSHASA,
        window('2026-03-27T00:00:00Z'),
      );
      const instants = instantsOf(result);
      expect(instants).to.have.length(14);
      expect(instants.slice(0, 2)).to.deep.equal(['2026-03-31T09:00:00.000Z', '2026-03-31T10:00:00.000Z']);
      expect(instants.slice(-2)).to.deep.equal(['2027-01-31T09:00:00.000Z', '2027-01-31T10:00:00.000Z']);
    });

    it('when start_date is 1900-01-01 daily until 9999-12-31, then the limit stops the expansion quickly', function () {
      const result = expandRecurrence(
        rule({ startDate: '1900-01-01', endDate: '9999-12-31', times: ['10:00', '22:00'] }),
        KINSHASA,
        window('2026-03-27T00:00:00Z', 5000),
      );
      if (!result.ok) expect.fail('expected the rule to expand');
      expect(result.reachedLimit).to.equal(true);
      expect(result.instants).to.have.length(5001);
      expect(iso(result.instants[0]!)).to.equal('2026-03-27T09:00:00.000Z');
      // Two a day: instant #5000 is the first time of day 2500 after 2026-03-27.
      expect(iso(result.instants[5000]!)).to.equal('2033-01-29T09:00:00.000Z');
    });
  });

  describe('daylight saving time', () => {
    it('when a daily Paris occurrence falls in the spring-forward gap, then it moves forward one hour (02:30 → 03:30 local = 01:30Z)', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-03-28', endDate: '2026-03-30', times: ['02:30'] }),
        PARIS,
        window('2026-03-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z']);
    });

    it('when a daily New York occurrence falls in the spring-forward gap, then it moves forward one hour (02:30 → 03:30 EDT = 07:30Z)', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-03-07', endDate: '2026-03-09', times: ['02:30'] }),
        NEW_YORK,
        window('2026-03-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-03-07T07:30:00.000Z', '2026-03-08T07:30:00.000Z', '2026-03-09T06:30:00.000Z']);
    });

    it('when a gap time moves onto another listed time, then that instant counts once', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-03-29', endDate: '2026-03-29', times: ['02:30', '03:30'] }),
        PARIS,
        window('2026-03-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-03-29T01:30:00.000Z']);
    });

    it('when a daily Paris occurrence falls in the fall-back hour, then it takes the first occurrence (00:30Z)', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-10-24', endDate: '2026-10-26', times: ['02:30'] }),
        PARIS,
        window('2026-10-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-10-24T00:30:00.000Z', '2026-10-25T00:30:00.000Z', '2026-10-26T01:30:00.000Z']);
    });

    it('when a daily New York occurrence falls in the fall-back hour, then it takes the first occurrence (05:30Z)', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-10-31', endDate: '2026-11-02', times: ['01:30'] }),
        NEW_YORK,
        window('2026-10-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-10-31T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-02T06:30:00.000Z']);
    });

    it('when now lies between the two occurrences of the ambiguous hour, then that day’s occurrence is already past', () => {
      const result = expandRecurrence(
        rule({ startDate: '2026-10-31', endDate: '2026-11-02', times: ['01:30'] }),
        NEW_YORK,
        window('2026-11-01T06:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['2026-11-02T06:30:00.000Z']);
    });
  });

  describe('limit', () => {
    // Daily 2026-05-01..2026-05-04 at two times: 8 occurrences.
    const eight = rule({ startDate: '2026-05-01', endDate: '2026-05-04', times: ['08:00', '20:00'] });
    const all = [
      '2026-05-01T07:00:00.000Z',
      '2026-05-01T19:00:00.000Z',
      '2026-05-02T07:00:00.000Z',
      '2026-05-02T19:00:00.000Z',
      '2026-05-03T07:00:00.000Z',
      '2026-05-03T19:00:00.000Z',
      '2026-05-04T07:00:00.000Z',
      '2026-05-04T19:00:00.000Z',
    ];

    it('when the limit is one more than the occurrences (9), then all 8 are returned and reachedLimit is false', () => {
      const result = expandRecurrence(eight, KINSHASA, window('2026-04-01T00:00:00Z', 9));
      expect(result).to.deep.equal({ ok: true, instants: all.map((t) => Date.parse(t)), reachedLimit: false });
    });

    it('when the limit equals the occurrences (8), then all 8 are returned and reachedLimit is false', () => {
      const result = expandRecurrence(eight, KINSHASA, window('2026-04-01T00:00:00Z', 8));
      expect(result).to.deep.equal({ ok: true, instants: all.map((t) => Date.parse(t)), reachedLimit: false });
    });

    it('when the limit is one less than the occurrences (7), then reachedLimit is true and the first 8 are returned', () => {
      const result = expandRecurrence(eight, KINSHASA, window('2026-04-01T00:00:00Z', 7));
      expect(result).to.deep.equal({ ok: true, instants: all.map((t) => Date.parse(t)), reachedLimit: true });
    });

    it('when the limit is 2, then reachedLimit is true and exactly the first 3 instants are returned', () => {
      const result = expandRecurrence(eight, KINSHASA, window('2026-04-01T00:00:00Z', 2));
      expect(result).to.deep.equal({ ok: true, instants: all.slice(0, 3).map((t) => Date.parse(t)), reachedLimit: true });
    });

    it('when the limit is 0 and there is an occurrence, then reachedLimit is true', () => {
      const result = expandRecurrence(eight, KINSHASA, window('2026-04-01T00:00:00Z', 0));
      expect(result).to.deep.equal({ ok: true, instants: [Date.parse(all[0]!)], reachedLimit: true });
    });

    it('when only past occurrences exceed the limit, then they do not count towards it', () => {
      const result = expandRecurrence(eight, KINSHASA, window('2026-05-03T12:00:00Z', 3));
      expect(result).to.deep.equal({ ok: true, instants: all.slice(5).map((t) => Date.parse(t)), reachedLimit: false });
    });
  });

  describe('validation (validateRule and expandRecurrence issues)', () => {
    it('when two times are the same, then the second is recurring_schedule.times[i] array.unique', () => {
      const result = expandRecurrence(rule({ times: ['08:00', '12:00', '08:00'] }), KINSHASA, window('2026-04-01T00:00:00Z'));
      if (result.ok) expect.fail('expected duplicate times to be rejected');
      expect(result.issues).to.deep.equal([
        { field: 'recurring_schedule.times[2]', message: '"08:00" is listed twice', type: 'array.unique' },
      ]);
    });

    it('when a time is not HH:mm, then recurring_schedule.times[i] is time.invalid', () => {
      expect(
        issuesOf(expandRecurrence(rule({ times: ['08:00', '24:00', '7:00'] }), KINSHASA, window('2026-04-01T00:00:00Z'))),
      ).to.deep.equal([
        { field: 'recurring_schedule.times[1]', type: 'time.invalid' },
        { field: 'recurring_schedule.times[2]', type: 'time.invalid' },
      ]);
    });

    it('when start_date or end_date is not a calendar date, then each is date.invalid', () => {
      expect(
        issuesOf(expandRecurrence(rule({ startDate: '2026-02-30', endDate: '2027-02-29' }), KINSHASA, window('2026-01-01T00:00:00Z'))),
      ).to.deep.equal([
        { field: 'recurring_schedule.start_date', type: 'date.invalid' },
        { field: 'recurring_schedule.end_date', type: 'date.invalid' },
      ]);
    });

    const badIntervals = [0, -1, 1.5, Number.NaN];
    for (const interval of badIntervals) {
      it(`when interval is ${interval}, then recurring_schedule.interval is number.min`, () => {
        expect(issuesOf(expandRecurrence(rule({ interval }), KINSHASA, window('2026-04-01T00:00:00Z')))).to.deep.equal([
          { field: 'recurring_schedule.interval', type: 'number.min' },
        ]);
      });
    }

    it('when the rule is valid, then validateRule returns the parsed civil dates and no issues', () => {
      expect(validateRule(rule({ startDate: '2024-02-29', endDate: '2024-03-01' }))).to.deep.equal({
        start: { year: 2024, month: 2, day: 29 },
        end: { year: 2024, month: 3, day: 1 },
        issues: [],
      });
      expect(validateRule(rule({ startDate: '2026-05-01', endDate: null }))).to.deep.equal({
        start: { year: 2026, month: 5, day: 1 },
        end: null,
        issues: [],
      });
    });

    it('when start_date is not a calendar date, then validateRule reports it and still returns a civil start date', () => {
      const { start, end, issues } = validateRule(rule({ startDate: '2026-02-30', endDate: '2026-03-01' }));

      expect(issues.map((i) => i.type)).to.deep.equal(['date.invalid']);
      expect(start).to.have.all.keys('year', 'month', 'day');
      expect([start.year, start.month, start.day].every(Number.isInteger)).to.equal(true);
      expect(end).to.deep.equal({ year: 2026, month: 3, day: 1 });
    });

    it('when end_date is one day before start_date, then validateRule reports date.min; the same day is fine', () => {
      expect(validateRule(rule({ startDate: '2026-05-01', endDate: '2026-04-30' })).issues.map((i) => i.type)).to.deep.equal(['date.min']);
      expect(validateRule(rule({ startDate: '2026-05-01', endDate: '2026-05-01' })).issues).to.deep.equal([]);
    });
  });

  describe('issue messages (details[].message as a merchant reads it)', () => {
    it('when start_date and end_date are not calendar dates, then each message quotes the value', () => {
      expect(validateRule(rule({ startDate: '2026-02-30', endDate: '2026-13-01' })).issues).to.deep.equal([
        { field: 'recurring_schedule.start_date', message: '"2026-02-30" is not a calendar date (YYYY-MM-DD)', type: 'date.invalid' },
        { field: 'recurring_schedule.end_date', message: '"2026-13-01" is not a calendar date (YYYY-MM-DD)', type: 'date.invalid' },
      ]);
    });

    it('when a date names an existing day but is not written YYYY-MM-DD, then it is date.invalid', () => {
      expect(
        issuesOf(expandRecurrence(rule({ startDate: '2026-5-1', endDate: '2026-05-01T00:00' }), KINSHASA, window('2026-04-01T00:00:00Z'))),
      ).to.deep.equal([
        { field: 'recurring_schedule.start_date', type: 'date.invalid' },
        { field: 'recurring_schedule.end_date', type: 'date.invalid' },
      ]);
    });

    it('when a time is not HH:mm, then the message quotes it', () => {
      expect(validateRule(rule({ times: ['7:00'] })).issues).to.deep.equal([
        { field: 'recurring_schedule.times[0]', message: '"7:00" is not a valid 24-hour HH:mm time', type: 'time.invalid' },
      ]);
    });

    it('when interval is 0, then the message states the minimum', () => {
      expect(validateRule(rule({ interval: 0 })).issues).to.deep.equal([
        { field: 'recurring_schedule.interval', message: 'must be an integer of at least 1', type: 'number.min' },
      ]);
    });
  });

  describe('order of the instants', () => {
    it('when a time moved past the Paris spring-forward gap overtakes a later listed time, then the instants are still in order', () => {
      // 2026-03-29: 02:30 does not exist and becomes 03:30 CEST (01:30Z), which is after 03:15 CEST (01:15Z).
      const result = expandRecurrence(
        rule({ startDate: '2026-03-29', endDate: '2026-03-29', times: ['02:30', '03:15'] }),
        PARIS,
        window('2026-03-01T00:00:00Z'),
      );
      expect(result).to.deep.equal({
        ok: true,
        instants: [Date.parse('2026-03-29T01:15:00Z'), Date.parse('2026-03-29T01:30:00Z')],
        reachedLimit: false,
      });
    });
  });

  describe('a rule read back from storage (isRecurrenceRule)', () => {
    const stored = { startDate: '2026-05-01', endDate: '2026-06-01', frequency: 'weekly', interval: 2, times: ['08:00', '18:30'] };

    it('when every field has its type, then it is a rule (an open end included)', () => {
      expect(isRecurrenceRule(stored)).to.equal(true);
      expect(isRecurrenceRule({ ...stored, endDate: null })).to.equal(true);
      expect(isRecurrenceRule({ ...stored, times: [] })).to.equal(true);
    });

    const broken: [string, unknown][] = [
      ['not a record', null],
      ['an array', [stored]],
      ['a start date that is not text', { ...stored, startDate: 20260501 }],
      ['no start date', { ...stored, startDate: undefined }],
      ['an end date that is not text', { ...stored, endDate: 20260601 }],
      ['an unknown frequency', { ...stored, frequency: 'hourly' }],
      ['a fractional interval', { ...stored, interval: 1.5 }],
      ['an interval as text', { ...stored, interval: '2' }],
      ['times that are not a list', { ...stored, times: '08:00' }],
      ['a time that is not text', { ...stored, times: ['08:00', 1830] }],
    ];
    for (const [what, value] of broken) {
      it(`when the stored value has ${what}, then it is not a rule`, () => {
        expect(isRecurrenceRule(value)).to.equal(false);
      });
    }
  });

  describe('the last year a date can be written in (9999)', () => {
    it('when monthly on the 31st runs through 9999, then every month of 9999 having a 31st counts', () => {
      const result = expandRecurrence(
        rule({ startDate: '9999-01-31', endDate: '9999-12-31', frequency: 'monthly' }),
        KINSHASA,
        window('2026-06-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal([
        '9999-01-31T09:00:00.000Z',
        '9999-03-31T09:00:00.000Z',
        '9999-05-31T09:00:00.000Z',
        '9999-07-31T09:00:00.000Z',
        '9999-08-31T09:00:00.000Z',
        '9999-10-31T09:00:00.000Z',
        '9999-12-31T09:00:00.000Z',
      ]);
    });

    it('when yearly on 29 February starts in 9996, then 9997–9999 are skipped and nothing follows', () => {
      const result = expandRecurrence(
        rule({ startDate: '9996-02-29', endDate: '9999-12-31', frequency: 'yearly' }),
        KINSHASA,
        window('2026-06-01T00:00:00Z'),
      );
      expect(instantsOf(result)).to.deep.equal(['9996-02-29T09:00:00.000Z']);
    });

    it('when an open-ended daily rule runs past 9999-12-31, then the days that cannot be written are left out', () => {
      // the horizon reaches into year 10 000, whose dates have no YYYY-MM-DD form
      const result = expandRecurrence(rule({ startDate: '9999-12-30', endDate: null }), KINSHASA, window('9999-06-01T00:00:00Z'));

      expect(result).to.deep.equal({
        ok: true,
        instants: [Date.parse('9999-12-30T09:00:00Z'), Date.parse('9999-12-31T09:00:00Z')],
        reachedLimit: false,
      });
    });
  });

  describe('dates far in the past (the clock is given)', () => {
    it('when a monthly rule on the 31st lies before 1970, then the months lacking a 31st are skipped and the rule goes on', () => {
      const result = expandRecurrence(
        rule({ startDate: '1969-01-31', endDate: '1969-12-31', frequency: 'monthly' }),
        KINSHASA,
        window('1968-12-01T00:00:00Z'),
      );

      expect(instantsOf(result)).to.deep.equal([
        '1969-01-31T09:00:00.000Z',
        '1969-03-31T09:00:00.000Z',
        '1969-05-31T09:00:00.000Z',
        '1969-07-31T09:00:00.000Z',
        '1969-08-31T09:00:00.000Z',
        '1969-10-31T09:00:00.000Z',
        '1969-12-31T09:00:00.000Z',
      ]);
    });

    it('when the days lie before year 1000, then their dates are still written with four digits and expand', () => {
      const result = expandRecurrence(rule({ startDate: '0999-12-30', endDate: '1000-01-01' }), 'UTC', window('0999-12-01T00:00:00Z'));

      expect(instantsOf(result)).to.deep.equal(['0999-12-30T10:00:00.000Z', '0999-12-31T10:00:00.000Z', '1000-01-01T10:00:00.000Z']);
    });
  });

  describe('intervals far beyond what POST /send accepts (its cap is 1000)', () => {
    // The second period lies past year 9999 (and past the range of Date): the expansion must still end.
    const huge: [Frequency, number][] = [
      ['daily', 1e9],
      ['weekly', 1e8],
      ['monthly', 1e8],
      ['yearly', 1e6],
    ];
    for (const [frequency, interval] of huge) {
      for (const endDate of [null, '9999-12-31']) {
        it(`when ${frequency} has interval ${interval} and end_date ${String(endDate)}, then only start_date counts`, function () {
          const result = expandRecurrence(
            rule({ startDate: '2026-06-15', endDate, frequency, interval }),
            KINSHASA,
            window('2026-06-01T00:00:00Z'),
          );
          expect(result).to.deep.equal({ ok: true, instants: [Date.parse('2026-06-15T09:00:00Z')], reachedLimit: false });
        });
      }
    }
  });

  describe('properties', () => {
    const frequencyArb = fc.constantFrom<Frequency>('daily', 'weekly', 'monthly', 'yearly');
    const zoneArb = fc.constantFrom(...ZONES);
    // Times are biased towards the small hours, where the DST transitions of the three zones are.
    const timeArb = fc
      .oneof(fc.integer({ min: 0, max: 1439 }), fc.integer({ min: 0, max: 239 }))
      .map((m) => `${String(Math.floor(m / 60)).padStart(2, '0')}:${String(m % 60).padStart(2, '0')}`);
    const timesArb = fc.uniqueArray(timeArb, { minLength: 1, maxLength: 3 });
    // "now" is on a minute (so it can coincide with an occurrence), often a few days from a DST transition.
    const anchors = [
      '2026-03-27T00:00:00Z',
      '2026-03-06T00:00:00Z',
      '2026-10-23T00:00:00Z',
      '2026-10-30T00:00:00Z',
      '2025-12-31T00:00:00Z',
    ].map((t) => Date.parse(t));
    const nowArb = fc.oneof(
      fc
        .tuple(fc.constantFrom(...anchors), fc.integer({ min: -7 * 1440, max: 7 * 1440 }))
        .map(([anchor, minutes]) => anchor + minutes * MINUTE),
      fc.integer({ min: 0, max: 2 * 366 * 1440 }).map((minutes) => Date.parse('2025-06-01T00:00:00Z') + minutes * MINUTE),
    );
    const limitArb = fc.oneof(fc.integer({ min: 0, max: 30 }), fc.constant(5000));
    interface PropertyCase {
      readonly zone: string;
      readonly now: number;
      readonly frequency: Frequency;
      readonly interval: number;
      readonly times: readonly string[];
      readonly startOffsetDays: number;
      readonly endLengthDays: number | null;
      readonly limit: number;
    }
    const caseArb: fc.Arbitrary<PropertyCase> = fc.record({
      zone: zoneArb,
      now: nowArb,
      frequency: frequencyArb,
      interval: fc.integer({ min: 1, max: 5 }),
      times: timesArb,
      startOffsetDays: fc.integer({ min: -60, max: 30 }),
      endLengthDays: fc.option(fc.integer({ min: 0, max: 400 }), { nil: null }),
      limit: limitArb,
    });

    function build(c: PropertyCase): { r: RecurrenceRule; w: ExpansionWindow } {
      const startDay = Math.floor(c.now / DAY) + c.startOffsetDays;
      const toDate = (day: number): string => new Date(day * DAY).toISOString().slice(0, 10);
      const r: RecurrenceRule = {
        startDate: toDate(startDay),
        endDate: c.endLengthDays === null ? null : toDate(startDay + c.endLengthDays),
        frequency: c.frequency,
        interval: c.interval,
        times: c.times,
      };
      return { r, w: { now: c.now, horizonEnd: c.now + HORIZON_DAYS * DAY, limit: c.limit } };
    }

    it('when any rule is expanded, then occurrences are strictly increasing, after now, inside the window and within the limit', () => {
      fc.assert(
        fc.property(caseArb, (c) => {
          const { r, w } = build(c);
          const result = expandRecurrence(r, c.zone, w);
          if (!result.ok) expect.fail(`valid rule rejected: ${JSON.stringify(result.issues)}`);
          const { instants, reachedLimit } = result;
          for (let i = 1; i < instants.length; i++) expect(instants[i]!).to.be.greaterThan(instants[i - 1]!);
          const lower = referenceInstant(c.zone, dayNumberOf(r.startDate), 0);
          const upper = r.endDate === null ? w.horizonEnd : referenceInstant(c.zone, dayNumberOf(r.endDate), 23 * 60 + 59) + HOUR;
          for (const instant of instants) {
            expect(instant).to.be.greaterThan(w.now);
            expect(instant).to.be.at.least(lower);
            expect(instant).to.be.at.most(upper);
          }
          if (reachedLimit) expect(instants).to.have.length(w.limit + 1);
          else expect(instants.length).to.be.at.most(w.limit);
        }),
        { numRuns: 150 },
      );
    });

    it('when any rule is expanded, then it matches an independent day-by-day reference (Intl time zones), cut at limit + 1', () => {
      fc.assert(
        fc.property(caseArb, (c) => {
          const { r, w } = build(c);
          const result = expandRecurrence(r, c.zone, w);
          const expected = referenceOccurrences(r, c.zone, w);
          const reachedLimit = expected.length > w.limit;
          expect(result).to.deep.equal({ ok: true, instants: reachedLimit ? expected.slice(0, w.limit + 1) : expected, reachedLimit });
        }),
        { numRuns: 150 },
      );
    });

    it('when a daily rule is expanded in Kinshasa, then the count equals eligible days × times inside the window (arithmetic)', () => {
      fc.assert(
        fc.property(
          fc.record({
            now: nowArb,
            interval: fc.integer({ min: 1, max: 5 }),
            times: timesArb,
            startOffsetDays: fc.integer({ min: -60, max: 30 }),
            endLengthDays: fc.option(fc.integer({ min: 0, max: 400 }), { nil: null }),
          }),
          (c) => {
            const { r, w } = build({ ...c, zone: KINSHASA, frequency: 'daily', limit: 5000 });
            const startDay = Math.floor(c.now / DAY) + c.startOffsetDays;
            // Kinshasa is UTC+1 all year: local day d at minute m is d·DAY + m·MINUTE − 1 h.
            const upper = c.endLengthDays === null ? w.horizonEnd : Number.POSITIVE_INFINITY;
            const lastDay = c.endLengthDays === null ? Math.floor(w.horizonEnd / DAY) + 1 : startDay + c.endLengthDays;
            let expected = 0;
            for (let day = startDay; day <= lastDay; day += c.interval) {
              for (const time of c.times) {
                const instant = day * DAY + minuteOfDay(time) * MINUTE - HOUR;
                if (instant > w.now && instant <= upper) expected++;
              }
            }
            const result = expandRecurrence(r, KINSHASA, w);
            if (!result.ok) expect.fail('valid rule rejected');
            expect(result.reachedLimit).to.equal(false);
            expect(result.instants).to.have.length(expected);
          },
        ),
        { numRuns: 150 },
      );
    });

    it('when a daily rule covers whole days entirely in the future, then the count is exactly days × times in every zone', () => {
      // Times exactly one hour apart are excluded: a spring-forward gap would legitimately merge 02:xx with 03:xx.
      const separatedTimesArb = timesArb.filter((times) =>
        times.every((a) => times.every((b) => Math.abs(minuteOfDay(a) - minuteOfDay(b)) !== 60)),
      );
      fc.assert(
        fc.property(
          zoneArb,
          nowArb,
          fc.integer({ min: 1, max: 5 }),
          separatedTimesArb,
          fc.integer({ min: 1, max: 30 }),
          fc.integer({ min: 0, max: 200 }),
          (zone, now, interval, times, startInDays, length) => {
            const startDay = Math.floor(now / DAY) + startInDays + 1; // at least one whole day ahead in every zone
            const toDate = (day: number): string => new Date(day * DAY).toISOString().slice(0, 10);
            const r: RecurrenceRule = {
              startDate: toDate(startDay),
              endDate: toDate(startDay + length),
              frequency: 'daily',
              interval,
              times,
            };
            const result = expandRecurrence(r, zone, { now, horizonEnd: now + HORIZON_DAYS * DAY, limit: 5000 });
            if (!result.ok) expect.fail('valid rule rejected');
            const days = Math.floor(length / interval) + 1;
            expect(result.reachedLimit).to.equal(false);
            expect(result.instants).to.have.length(days * times.length);
          },
        ),
        { numRuns: 150 },
      );
    });
  });
});
