import { expect } from 'chai';
import fc from 'fast-check';
import { resolveScheduledDates, type ScheduledDateEntry, type ScheduledDatesResult } from '../../../src/scheduling/scheduled-dates.js';

const KINSHASA = 'Africa/Kinshasa';
const PARIS = 'Europe/Paris';
const NEW_YORK = 'America/New_York';

const NOW = Date.parse('2026-01-01T00:00:00.000Z');
const MINUTE = 60_000;
const DAY = 86_400_000;

const iso = (instant: number): string => new Date(instant).toISOString();

function instantsOf(result: ScheduledDatesResult): string[] {
  if (!result.ok) expect.fail(`expected the dates to be accepted, got ${JSON.stringify(result.issues)}`);
  return result.instants.map(iso);
}

function issuesOf(result: ScheduledDatesResult): { field: string; type: string }[] {
  if (result.ok) expect.fail(`expected issues, got instants ${result.instants.map(iso).join(', ')}`);
  return result.issues.map(({ field, type }) => ({ field, type }));
}

describe('scheduling: resolveScheduledDates', () => {
  describe('in Africa/Kinshasa (default zone, UTC+1)', () => {
    it('when one future entry is given, then its UTC instant is returned', () => {
      expect(instantsOf(resolveScheduledDates([{ date: '2026-06-01', time: '10:00' }], KINSHASA, NOW))).to.deep.equal([
        '2026-06-01T09:00:00.000Z',
      ]);
    });

    it('when entries are given out of order, then the instants come back in chronological order', () => {
      const entries: ScheduledDateEntry[] = [
        { date: '2026-06-02', time: '08:00' },
        { date: '2026-06-01', time: '23:59' },
        { date: '2026-06-01', time: '00:00' },
        { date: '2027-01-01', time: '12:00' },
        { date: '2026-06-02', time: '07:59' },
      ];
      expect(instantsOf(resolveScheduledDates(entries, KINSHASA, NOW))).to.deep.equal([
        '2026-05-31T23:00:00.000Z',
        '2026-06-01T22:59:00.000Z',
        '2026-06-02T06:59:00.000Z',
        '2026-06-02T07:00:00.000Z',
        '2027-01-01T11:00:00.000Z',
      ]);
    });

    it('when 20 distinct future entries are given in reverse order, then all 20 are accepted and sorted', () => {
      const entries: ScheduledDateEntry[] = [];
      for (let day = 20; day >= 1; day--) entries.push({ date: `2026-03-${String(day).padStart(2, '0')}`, time: '09:30' });
      const expected: string[] = [];
      for (let day = 1; day <= 20; day++) expected.push(`2026-03-${String(day).padStart(2, '0')}T08:30:00.000Z`);
      expect(instantsOf(resolveScheduledDates(entries, KINSHASA, NOW))).to.deep.equal(expected);
    });

    it('when no entry is given, then the result is an empty list (non-emptiness is enforced by the request shape)', () => {
      expect(instantsOf(resolveScheduledDates([], KINSHASA, NOW))).to.deep.equal([]);
    });
  });

  describe('strictly in the future', () => {
    const entry = { date: '2026-06-01', time: '10:00' };
    const instant = Date.parse('2026-06-01T09:00:00.000Z');

    it('when now is exactly the entry instant, then it is rejected as past', () => {
      expect(issuesOf(resolveScheduledDates([entry], KINSHASA, instant))).to.deep.equal([
        { field: 'scheduled_dates[0]', type: 'date.past' },
      ]);
    });

    it('when now is 1 ms before the entry instant, then it is accepted', () => {
      expect(instantsOf(resolveScheduledDates([entry], KINSHASA, instant - 1))).to.deep.equal(['2026-06-01T09:00:00.000Z']);
    });

    it('when now is 1 ms after the entry instant, then it is rejected as past', () => {
      expect(issuesOf(resolveScheduledDates([entry], KINSHASA, instant + 1))).to.deep.equal([
        { field: 'scheduled_dates[0]', type: 'date.past' },
      ]);
    });

    it('when the entry is a day in the past, then it is rejected as past with a message naming date, time and zone', () => {
      const result = resolveScheduledDates([{ date: '2025-12-31', time: '10:00' }], KINSHASA, NOW);
      if (result.ok) expect.fail('expected a past date to be rejected');
      expect(result.issues).to.deep.equal([
        { field: 'scheduled_dates[0]', message: '2025-12-31 10:00 (Africa/Kinshasa) is not in the future', type: 'date.past' },
      ]);
    });

    it('when the wall-clock time is the same but the zone differs, then "now" is compared with the zone’s instant', () => {
      // 2026-06-01 10:00 is 09:00Z in Kinshasa and 14:00Z in New York; now = 12:00Z lies between.
      const now = Date.parse('2026-06-01T12:00:00.000Z');
      expect(issuesOf(resolveScheduledDates([entry], KINSHASA, now))).to.deep.equal([{ field: 'scheduled_dates[0]', type: 'date.past' }]);
      expect(instantsOf(resolveScheduledDates([entry], NEW_YORK, now))).to.deep.equal(['2026-06-01T14:00:00.000Z']);
    });
  });

  describe('spring-forward gap (non-existent local time) is rejected', () => {
    const gapCases: readonly (readonly [string, string, string])[] = [
      [PARIS, '2026-03-29', '02:00'],
      [PARIS, '2026-03-29', '02:30'],
      [PARIS, '2026-03-29', '02:59'],
      [NEW_YORK, '2026-03-08', '02:00'],
      [NEW_YORK, '2026-03-08', '02:30'],
      [NEW_YORK, '2026-03-08', '02:59'],
    ];
    for (const [zone, date, time] of gapCases) {
      it(`when ${date} ${time} is given in ${zone}, then scheduled_dates[0].time is time.nonexistent`, () => {
        const result = resolveScheduledDates([{ date, time }], zone, NOW);
        if (result.ok) expect.fail('expected the gap time to be rejected');
        expect(result.issues).to.deep.equal([
          {
            field: 'scheduled_dates[0].time',
            message: `${date} ${time} does not exist in ${zone} (the clocks skip it)`,
            type: 'time.nonexistent',
          },
        ]);
      });
    }

    it('when the times just around the Paris gap are given, then they are accepted with their exact offsets', () => {
      const entries = [
        { date: '2026-03-29', time: '03:00' },
        { date: '2026-03-29', time: '01:59' },
      ];
      expect(instantsOf(resolveScheduledDates(entries, PARIS, NOW))).to.deep.equal([
        '2026-03-29T00:59:00.000Z',
        '2026-03-29T01:00:00.000Z',
      ]);
    });

    it('when the times just around the New York gap are given, then they are accepted with their exact offsets', () => {
      const entries = [
        { date: '2026-03-08', time: '03:00' },
        { date: '2026-03-08', time: '01:59' },
      ];
      expect(instantsOf(resolveScheduledDates(entries, NEW_YORK, NOW))).to.deep.equal([
        '2026-03-08T06:59:00.000Z',
        '2026-03-08T07:00:00.000Z',
      ]);
    });

    it('when 02:30 on the Paris spring-forward day is given in Kinshasa (no DST), then it exists', () => {
      expect(instantsOf(resolveScheduledDates([{ date: '2026-03-29', time: '02:30' }], KINSHASA, NOW))).to.deep.equal([
        '2026-03-29T01:30:00.000Z',
      ]);
    });

    it('when the gap entry sits among valid entries, then only its index is reported', () => {
      const entries = [
        { date: '2026-04-01', time: '10:00' },
        { date: '2026-03-29', time: '02:15' },
        { date: '2026-04-02', time: '10:00' },
      ];
      expect(issuesOf(resolveScheduledDates(entries, PARIS, NOW))).to.deep.equal([
        { field: 'scheduled_dates[1].time', type: 'time.nonexistent' },
      ]);
    });
  });

  describe('fall-back hour (ambiguous local time) takes the first occurrence', () => {
    it('when Paris 2026-10-25 02:30 is given, then it is 2026-10-25T00:30:00Z (CEST, the first one)', () => {
      expect(instantsOf(resolveScheduledDates([{ date: '2026-10-25', time: '02:30' }], PARIS, NOW))).to.deep.equal([
        '2026-10-25T00:30:00.000Z',
      ]);
    });

    it('when New York 2026-11-01 01:30 is given, then it is 2026-11-01T05:30:00Z (EDT, the first one)', () => {
      expect(instantsOf(resolveScheduledDates([{ date: '2026-11-01', time: '01:30' }], NEW_YORK, NOW))).to.deep.equal([
        '2026-11-01T05:30:00.000Z',
      ]);
    });

    it('when now lies between the two occurrences of the ambiguous time, then the entry is past (the first one counts)', () => {
      const now = Date.parse('2026-11-01T06:00:00.000Z'); // after 01:30 EDT (05:30Z), before 01:30 EST (06:30Z)
      expect(issuesOf(resolveScheduledDates([{ date: '2026-11-01', time: '01:30' }], NEW_YORK, now))).to.deep.equal([
        { field: 'scheduled_dates[0]', type: 'date.past' },
      ]);
    });
  });

  describe('invalid dates and times', () => {
    it('when the date is 2026-02-30, then scheduled_dates[0].date is date.invalid', () => {
      const result = resolveScheduledDates([{ date: '2026-02-30', time: '10:00' }], KINSHASA, NOW);
      if (result.ok) expect.fail('expected 2026-02-30 to be rejected');
      expect(result.issues).to.deep.equal([
        { field: 'scheduled_dates[0].date', message: '"2026-02-30" is not a calendar date (YYYY-MM-DD)', type: 'date.invalid' },
      ]);
    });

    it('when the time is 24:00, then scheduled_dates[0].time is time.invalid', () => {
      const result = resolveScheduledDates([{ date: '2026-06-01', time: '24:00' }], KINSHASA, NOW);
      if (result.ok) expect.fail('expected 24:00 to be rejected');
      expect(result.issues).to.deep.equal([
        { field: 'scheduled_dates[0].time', message: '"24:00" is not a valid 24-hour HH:mm time', type: 'time.invalid' },
      ]);
    });

    it('when the time is 7:00 (single-digit hour), then scheduled_dates[0].time is time.invalid', () => {
      expect(issuesOf(resolveScheduledDates([{ date: '2026-06-01', time: '7:00' }], KINSHASA, NOW))).to.deep.equal([
        { field: 'scheduled_dates[0].time', type: 'time.invalid' },
      ]);
    });

    const otherInvalidDates = ['2027-02-29', '2026-04-31', '2026-13-01', '2026-6-01', '01/06/2026'];
    for (const date of otherInvalidDates) {
      it(`when the date is "${date}", then it is date.invalid`, () => {
        expect(issuesOf(resolveScheduledDates([{ date, time: '10:00' }], KINSHASA, NOW))).to.deep.equal([
          { field: 'scheduled_dates[0].date', type: 'date.invalid' },
        ]);
      });
    }

    it('when the date is 29 February of a leap year, then it is accepted', () => {
      expect(instantsOf(resolveScheduledDates([{ date: '2028-02-29', time: '10:00' }], KINSHASA, NOW))).to.deep.equal([
        '2028-02-29T09:00:00.000Z',
      ]);
    });
  });

  describe('duplicates', () => {
    it('when the same entry appears twice, then the second is array.unique naming the first', () => {
      const entries = [
        { date: '2026-06-01', time: '10:00' },
        { date: '2026-06-02', time: '10:00' },
        { date: '2026-06-01', time: '10:00' },
      ];
      const result = resolveScheduledDates(entries, KINSHASA, NOW);
      if (result.ok) expect.fail('expected the duplicate to be rejected');
      expect(result.issues).to.deep.equal([
        { field: 'scheduled_dates[2]', message: 'names the same instant as scheduled_dates[0]', type: 'array.unique' },
      ]);
    });

    it('when an entry appears three times, then the second and third are both reported against the first', () => {
      const entry = { date: '2026-06-01', time: '10:00' };
      const result = resolveScheduledDates([entry, entry, entry], KINSHASA, NOW);
      if (result.ok) expect.fail('expected the duplicates to be rejected');
      expect(result.issues.map((i) => [i.field, i.message])).to.deep.equal([
        ['scheduled_dates[1]', 'names the same instant as scheduled_dates[0]'],
        ['scheduled_dates[2]', 'names the same instant as scheduled_dates[0]'],
      ]);
    });

    it('when the same wall-clock time is on different days, then both are kept', () => {
      const entries = [
        { date: '2026-10-26', time: '02:30' },
        { date: '2026-10-25', time: '02:30' },
      ];
      expect(instantsOf(resolveScheduledDates(entries, PARIS, NOW))).to.deep.equal([
        '2026-10-25T00:30:00.000Z',
        '2026-10-26T01:30:00.000Z',
      ]);
    });
  });

  describe('several problems at once', () => {
    it('when entries are invalid in different ways, then every issue is reported with its own index and no instants', () => {
      const entries = [
        { date: '2026-06-01', time: '10:00' },
        { date: '2026-02-30', time: '10:00' },
        { date: '2026-06-01', time: '7:00' },
        { date: '2025-06-01', time: '10:00' },
        { date: '2026-03-29', time: '02:30' },
        { date: '2026-06-01', time: '10:00' },
      ];
      expect(issuesOf(resolveScheduledDates(entries, PARIS, NOW))).to.deep.equal([
        { field: 'scheduled_dates[1].date', type: 'date.invalid' },
        { field: 'scheduled_dates[2].time', type: 'time.invalid' },
        { field: 'scheduled_dates[3]', type: 'date.past' },
        { field: 'scheduled_dates[4].time', type: 'time.nonexistent' },
        { field: 'scheduled_dates[5]', type: 'array.unique' },
      ]);
    });
  });

  describe('properties', () => {
    it('when up to 20 distinct future Kinshasa entries are given in any order, then the result is their UTC+1 instants, sorted', () => {
      // Kinshasa is UTC+1 with no DST, so an entry's instant is plain arithmetic: midnight UTC of the date + time − 1 h.
      const entryArb = fc.record({ dayOffset: fc.integer({ min: 1, max: 800 }), minuteOfDay: fc.integer({ min: 0, max: 1439 }) });
      fc.assert(
        fc.property(
          fc.uniqueArray(entryArb, { minLength: 1, maxLength: 20, selector: (e) => e.dayOffset * 1440 + e.minuteOfDay }),
          (raw) => {
            const entries = raw.map(({ dayOffset, minuteOfDay }) => {
              const date = new Date(NOW + dayOffset * DAY).toISOString().slice(0, 10);
              const time = `${String(Math.floor(minuteOfDay / 60)).padStart(2, '0')}:${String(minuteOfDay % 60).padStart(2, '0')}`;
              return { date, time };
            });
            const expected = raw
              .map(({ dayOffset, minuteOfDay }) => NOW + dayOffset * DAY + minuteOfDay * MINUTE - 60 * MINUTE)
              .sort((a, b) => a - b);
            const result = resolveScheduledDates(entries, KINSHASA, NOW);
            expect(result).to.deep.equal({ ok: true, instants: expected });
          },
        ),
      );
    });

    it('when now equals one entry’s instant, then that entry and every earlier one are past and every later one is accepted', () => {
      fc.assert(
        fc.property(fc.integer({ min: 1, max: 19 }), fc.integer({ min: 0, max: 19 }), (count, rawIndex) => {
          const pastIndex = rawIndex % (count + 1);
          const entries = Array.from({ length: count + 1 }, (_, i) => ({
            date: `2026-05-${String(i + 1).padStart(2, '0')}`,
            time: '08:00',
          }));
          const now = Date.parse(`2026-05-${String(pastIndex + 1).padStart(2, '0')}T07:00:00.000Z`);
          const result = resolveScheduledDates(entries, KINSHASA, now);
          const expectedPast = Array.from({ length: pastIndex + 1 }, (_, i) => ({ field: `scheduled_dates[${i}]`, type: 'date.past' }));
          expect(issuesOf(result)).to.deep.equal(expectedPast);
        }),
      );
    });
  });
});
