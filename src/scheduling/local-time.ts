import moment from 'moment-timezone';

export const DATE_PATTERN = /^\d{4}-(0[1-9]|1[0-2])-(0[1-9]|[12]\d|3[01])$/;
export const TIME_PATTERN = /^([01]\d|2[0-3]):[0-5]\d$/;

export type LocalTimeResult =
  | { readonly ok: true; readonly instant: number; readonly shiftedByGap: boolean }
  | { readonly ok: false; readonly reason: 'invalid_date' | 'invalid_time' };

export function isKnownTimezone(timezone: string): boolean {
  return moment.tz.zone(timezone) !== null;
}

/**
 * The UTC instant of a wall-clock date and time in a zone. moment.tz silently moves a time inside a
 * spring-forward gap past the gap; formatting the result back tells us that happened. A time in the fall-back
 * hour resolves to its first occurrence (moment's choice, checked by tests).
 */
export function resolveLocalTime(date: string, time: string, timezone: string): LocalTimeResult {
  if (!DATE_PATTERN.test(date)) return { ok: false, reason: 'invalid_date' };
  if (!TIME_PATTERN.test(time)) return { ok: false, reason: 'invalid_time' };
  const local = `${date} ${time}`;
  const resolved = moment.tz(local, 'YYYY-MM-DD HH:mm', true, timezone);
  if (!resolved.isValid()) return { ok: false, reason: 'invalid_date' };
  const shiftedByGap = resolved.format('YYYY-MM-DD HH:mm') !== local;
  return { ok: true, instant: resolved.valueOf(), shiftedByGap };
}
