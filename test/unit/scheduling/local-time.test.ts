import { expect } from 'chai';
import { DATE_PATTERN, isKnownTimezone, resolveLocalTime, TIME_PATTERN, type LocalTimeResult } from '../../../src/scheduling/local-time.js';

const KINSHASA = 'Africa/Kinshasa';
const PARIS = 'Europe/Paris';
const NEW_YORK = 'America/New_York';

/** The result as a plain, comparable value: the UTC ISO instant and the gap flag, or the failure reason. */
function describeResult(result: LocalTimeResult): { iso: string; shiftedByGap: boolean } | { reason: string } {
  return result.ok ? { iso: new Date(result.instant).toISOString(), shiftedByGap: result.shiftedByGap } : { reason: result.reason };
}

describe('scheduling: resolveLocalTime', () => {
  describe('in Africa/Kinshasa (the default zone, UTC+1 all year, no DST)', () => {
    const cases: readonly (readonly [string, string, string])[] = [
      ['2026-01-15', '10:00', '2026-01-15T09:00:00.000Z'],
      ['2026-07-15', '10:00', '2026-07-15T09:00:00.000Z'],
      ['2026-03-29', '02:30', '2026-03-29T01:30:00.000Z'],
      ['2026-10-25', '02:30', '2026-10-25T01:30:00.000Z'],
      ['2026-06-01', '00:00', '2026-05-31T23:00:00.000Z'],
      ['2026-12-31', '23:59', '2026-12-31T22:59:00.000Z'],
      ['2028-02-29', '12:00', '2028-02-29T11:00:00.000Z'],
    ];
    for (const [date, time, iso] of cases) {
      it(`when the local time is ${date} ${time}, then the instant is ${iso} and no gap shift is reported`, () => {
        expect(describeResult(resolveLocalTime(date, time, KINSHASA))).to.deep.equal({ iso, shiftedByGap: false });
      });
    }
  });

  describe('in Europe/Paris (spring forward 2026-03-29 02:00→03:00, fall back 2026-10-25 03:00→02:00)', () => {
    it('when the time is just before the spring-forward gap, then it is a winter (UTC+1) instant', () => {
      expect(describeResult(resolveLocalTime('2026-03-29', '01:59', PARIS))).to.deep.equal({
        iso: '2026-03-29T00:59:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the time is 02:00 (first minute of the gap), then moment shifts it to 03:00 CEST and the shift is reported', () => {
      expect(describeResult(resolveLocalTime('2026-03-29', '02:00', PARIS))).to.deep.equal({
        iso: '2026-03-29T01:00:00.000Z',
        shiftedByGap: true,
      });
    });

    it('when the time is 02:30 (inside the gap), then it is shifted forward by the gap length to 03:30 CEST and reported', () => {
      expect(describeResult(resolveLocalTime('2026-03-29', '02:30', PARIS))).to.deep.equal({
        iso: '2026-03-29T01:30:00.000Z',
        shiftedByGap: true,
      });
    });

    it('when the time is 02:59 (last minute of the gap), then it is shifted and reported', () => {
      expect(describeResult(resolveLocalTime('2026-03-29', '02:59', PARIS))).to.deep.equal({
        iso: '2026-03-29T01:59:00.000Z',
        shiftedByGap: true,
      });
    });

    it('when the time is 03:00 (first instant after the gap), then it exists and is a summer (UTC+2) instant', () => {
      expect(describeResult(resolveLocalTime('2026-03-29', '03:00', PARIS))).to.deep.equal({
        iso: '2026-03-29T01:00:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the time is in the fall-back hour (02:30 on 2026-10-25), then it resolves to the first occurrence (CEST)', () => {
      expect(describeResult(resolveLocalTime('2026-10-25', '02:30', PARIS))).to.deep.equal({
        iso: '2026-10-25T00:30:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the time is 02:00 on the fall-back day, then it is the first occurrence (00:00Z)', () => {
      expect(describeResult(resolveLocalTime('2026-10-25', '02:00', PARIS))).to.deep.equal({
        iso: '2026-10-25T00:00:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the time is 03:00 on the fall-back day (after the repeated hour), then it is a winter (UTC+1) instant', () => {
      expect(describeResult(resolveLocalTime('2026-10-25', '03:00', PARIS))).to.deep.equal({
        iso: '2026-10-25T02:00:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the same wall-clock time is taken in summer and in winter, then the offsets differ by one hour', () => {
      expect(describeResult(resolveLocalTime('2026-07-01', '12:00', PARIS))).to.deep.equal({
        iso: '2026-07-01T10:00:00.000Z',
        shiftedByGap: false,
      });
      expect(describeResult(resolveLocalTime('2026-12-01', '12:00', PARIS))).to.deep.equal({
        iso: '2026-12-01T11:00:00.000Z',
        shiftedByGap: false,
      });
    });
  });

  describe('in America/New_York (spring forward 2026-03-08, fall back 2026-11-01)', () => {
    it('when the time is 01:59 before the gap, then it is an EST (UTC−5) instant', () => {
      expect(describeResult(resolveLocalTime('2026-03-08', '01:59', NEW_YORK))).to.deep.equal({
        iso: '2026-03-08T06:59:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the time is 02:30 (inside the gap), then it is shifted to 03:30 EDT and reported', () => {
      expect(describeResult(resolveLocalTime('2026-03-08', '02:30', NEW_YORK))).to.deep.equal({
        iso: '2026-03-08T07:30:00.000Z',
        shiftedByGap: true,
      });
    });

    it('when the time is 03:00 after the gap, then it is an EDT (UTC−4) instant', () => {
      expect(describeResult(resolveLocalTime('2026-03-08', '03:00', NEW_YORK))).to.deep.equal({
        iso: '2026-03-08T07:00:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the time is 01:30 on 2026-11-01 (ambiguous), then it resolves to the first occurrence, 05:30Z', () => {
      expect(describeResult(resolveLocalTime('2026-11-01', '01:30', NEW_YORK))).to.deep.equal({
        iso: '2026-11-01T05:30:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the time is 02:00 on 2026-11-01 (after the repeated hour), then it is an EST instant, 07:00Z', () => {
      expect(describeResult(resolveLocalTime('2026-11-01', '02:00', NEW_YORK))).to.deep.equal({
        iso: '2026-11-01T07:00:00.000Z',
        shiftedByGap: false,
      });
    });
  });

  describe('input validation (strict YYYY-MM-DD and 24-hour HH:mm)', () => {
    const invalidDates = [
      '2026-02-30',
      '2025-02-29',
      '2026-04-31',
      '2026-13-01',
      '2026-00-10',
      '2026-01-00',
      '2026-1-05',
      '26-01-05',
      '2026/01/05',
      '2026-01-05T10:00',
      ' 2026-01-05',
      '',
    ];
    for (const date of invalidDates) {
      it(`when the date is "${date}", then it is rejected as invalid_date`, () => {
        expect(describeResult(resolveLocalTime(date, '10:00', KINSHASA))).to.deep.equal({ reason: 'invalid_date' });
      });
    }

    const invalidTimes = ['24:00', '7:00', '07:60', '07:5', '0700', '07:00:00', '7h00', '-1:00', ''];
    for (const time of invalidTimes) {
      it(`when the time is "${time}", then it is rejected as invalid_time`, () => {
        expect(describeResult(resolveLocalTime('2026-06-01', time, KINSHASA))).to.deep.equal({ reason: 'invalid_time' });
      });
    }

    it('when the date is 29 February of a leap year, then it is accepted', () => {
      expect(describeResult(resolveLocalTime('2028-02-29', '00:00', PARIS))).to.deep.equal({
        iso: '2028-02-28T23:00:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the time is at the limits 00:00 and 23:59, then both are accepted', () => {
      expect(describeResult(resolveLocalTime('2026-06-01', '00:00', NEW_YORK))).to.deep.equal({
        iso: '2026-06-01T04:00:00.000Z',
        shiftedByGap: false,
      });
      expect(describeResult(resolveLocalTime('2026-06-01', '23:59', NEW_YORK))).to.deep.equal({
        iso: '2026-06-02T03:59:00.000Z',
        shiftedByGap: false,
      });
    });

    it('when the patterns are used directly, then they accept exactly the strict forms', () => {
      expect(['2026-12-31', '0001-01-01'].map((d) => DATE_PATTERN.test(d))).to.deep.equal([true, true]);
      expect(['2026-12-32', '2026-12-31\n'].map((d) => DATE_PATTERN.test(d))).to.deep.equal([false, false]);
      expect(['00:00', '23:59', '19:05'].map((t) => TIME_PATTERN.test(t))).to.deep.equal([true, true, true]);
      expect(['24:00', '23:60', '7:00'].map((t) => TIME_PATTERN.test(t))).to.deep.equal([false, false, false]);
    });
  });

  describe('isKnownTimezone', () => {
    it('when the zone is an IANA name moment knows, then it is known', () => {
      expect([KINSHASA, PARIS, NEW_YORK, 'UTC'].map(isKnownTimezone)).to.deep.equal([true, true, true, true]);
    });

    it('when the zone is not an IANA name, then it is unknown', () => {
      expect(['Mars/Olympus_Mons', '', 'GMT+25'].map(isKnownTimezone)).to.deep.equal([false, false, false]);
    });
  });
});
