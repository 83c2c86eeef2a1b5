import type { FieldIssue } from '../libraries/errors/app-error.js';
import { resolveLocalTime } from './local-time.js';

export interface ScheduledDateEntry {
  readonly date: string;
  readonly time: string;
}

export type ScheduledDatesResult =
  { readonly ok: true; readonly instants: readonly number[] } | { readonly ok: false; readonly issues: readonly FieldIssue[] };

/**
 * `scheduled_dates` → UTC instants in chronological order (occurrence_index follows that order).
 * Each entry must be strictly after `now`; a local time in a spring-forward gap is rejected; two entries naming
 * the same instant are rejected (the second is almost always a mistake, and sending twice costs twice).
 */
export function resolveScheduledDates(entries: readonly ScheduledDateEntry[], timezone: string, now: number): ScheduledDatesResult {
  const issues: FieldIssue[] = [];
  const seen = new Map<number, number>();
  const instants: number[] = [];
  entries.forEach((entry, index) => {
    const field = `scheduled_dates[${index}]`;
    const result = resolveLocalTime(entry.date, entry.time, timezone);
    if (!result.ok) {
      if (result.reason === 'invalid_time') {
        issues.push({ field: `${field}.time`, message: `"${entry.time}" is not a valid 24-hour HH:mm time`, type: 'time.invalid' });
      } else {
        issues.push({ field: `${field}.date`, message: `"${entry.date}" is not a calendar date (YYYY-MM-DD)`, type: 'date.invalid' });
      }
      return;
    }
    if (result.shiftedByGap) {
      issues.push({
        field: `${field}.time`,
        message: `${entry.date} ${entry.time} does not exist in ${timezone} (the clocks skip it)`,
        type: 'time.nonexistent',
      });
      return;
    }
    if (result.instant <= now) {
      issues.push({ field, message: `${entry.date} ${entry.time} (${timezone}) is not in the future`, type: 'date.past' });
      return;
    }
    const first = seen.get(result.instant);
    if (first !== undefined) {
      issues.push({ field, message: `names the same instant as scheduled_dates[${first}]`, type: 'array.unique' });
      return;
    }
    seen.set(result.instant, index);
    instants.push(result.instant);
  });
  if (issues.length > 0) return { ok: false, issues };
  return { ok: true, instants: instants.sort((a, b) => a - b) };
}
