import type { FieldIssue } from '../libraries/errors/app-error.js';
import { isInteger, isListOf, isNullableText, isOneOf, isRecord, isText } from '../libraries/validation/guards.js';
import { DATE_PATTERN, resolveLocalTime, TIME_PATTERN } from './local-time.js';

export const FREQUENCIES = ['daily', 'weekly', 'monthly', 'yearly'] as const;
export type Frequency = (typeof FREQUENCIES)[number];

export interface RecurrenceRule {
  readonly startDate: string;
  readonly endDate: string | null;
  readonly frequency: Frequency;
  readonly interval: number;
  readonly times: readonly string[];
}

/** A rule read back from storage (its dates and times are checked again when it is expanded). */
export function isRecurrenceRule(value: unknown): value is RecurrenceRule {
  return (
    isRecord(value) &&
    isText(value.startDate) &&
    isNullableText(value.endDate) &&
    isOneOf(FREQUENCIES, value.frequency) &&
    isInteger(value.interval) &&
    isListOf(value.times, isText)
  );
}

export interface ExpansionWindow {
  /** Occurrences must be strictly after this instant. */
  readonly now: number;
  /** Open-ended rules stop at this instant (inclusive). Ignored when the rule has an end date. */
  readonly horizonEnd: number;
  /** Stop after this many occurrences: the caller only needs to know the count passed its cap. */
  readonly limit: number;
}

export type RecurrenceResult =
  | { readonly ok: true; readonly instants: readonly number[]; readonly reachedLimit: boolean }
  | { readonly ok: false; readonly issues: readonly FieldIssue[] };

interface CivilDate {
  readonly year: number;
  readonly month: number; // 1-12
  readonly day: number;
}

const DAY_MS = 86_400_000;
const FIELD = 'recurring_schedule';

function parseCivil(text: string): CivilDate | null {
  if (!DATE_PATTERN.test(text)) return null;
  const [year, month, day] = text.split('-').map(Number) as [number, number, number];
  return civilIfExists(year, month, day);
}

/**
 * The date when it exists in the calendar (no 31 April, 29 February only in leap years). A day of month the month
 * lacks (at most 31) rolls over into the next month, so checking the month is enough.
 */
function civilIfExists(year: number, month: number, day: number): CivilDate | null {
  const probe = new Date(0);
  probe.setUTCFullYear(year, month - 1, day);
  return probe.getUTCMonth() === month - 1 ? { year, month, day } : null;
}

function dayNumber(date: CivilDate): number {
  const probe = new Date(0);
  probe.setUTCFullYear(date.year, date.month - 1, date.day);
  return Math.floor(probe.getTime() / DAY_MS);
}

function fromDayNumber(days: number): CivilDate {
  const probe = new Date(days * DAY_MS);
  return { year: probe.getUTCFullYear(), month: probe.getUTCMonth() + 1, day: probe.getUTCDate() };
}

function format(date: CivilDate): string {
  return `${String(date.year).padStart(4, '0')}-${String(date.month).padStart(2, '0')}-${String(date.day).padStart(2, '0')}`;
}

export function validateRule(rule: RecurrenceRule): { start: CivilDate; end: CivilDate | null; issues: FieldIssue[] } {
  const issues: FieldIssue[] = [];
  const start = parseCivil(rule.startDate);
  if (!start)
    issues.push({ field: `${FIELD}.start_date`, message: `"${rule.startDate}" is not a calendar date (YYYY-MM-DD)`, type: 'date.invalid' });
  let end: CivilDate | null = null;
  if (rule.endDate !== null) {
    end = parseCivil(rule.endDate);
    if (!end)
      issues.push({ field: `${FIELD}.end_date`, message: `"${rule.endDate}" is not a calendar date (YYYY-MM-DD)`, type: 'date.invalid' });
    else if (start && dayNumber(end) < dayNumber(start)) {
      issues.push({ field: `${FIELD}.end_date`, message: 'must not be before start_date', type: 'date.min' });
    }
  }
  const seen = new Set<string>();
  rule.times.forEach((time, index) => {
    if (!TIME_PATTERN.test(time)) {
      issues.push({ field: `${FIELD}.times[${index}]`, message: `"${time}" is not a valid 24-hour HH:mm time`, type: 'time.invalid' });
    } else if (seen.has(time)) {
      issues.push({ field: `${FIELD}.times[${index}]`, message: `"${time}" is listed twice`, type: 'array.unique' });
    }
    seen.add(time);
  });
  if (!Number.isInteger(rule.interval) || rule.interval < 1) {
    issues.push({ field: `${FIELD}.interval`, message: 'must be an integer of at least 1', type: 'number.min' });
  }
  return { start: start ?? { year: 1970, month: 1, day: 1 }, end, issues };
}

/**
 * The k-th candidate day of the rule (RFC 5545 semantics): daily and weekly step by whole days; monthly keeps
 * start's day of month and yearly its month and day, and a period lacking that day is skipped (null), still
 * counting towards the interval.
 */
function candidateDay(rule: RecurrenceRule, start: CivilDate, k: number): CivilDate | null {
  const step = k * rule.interval;
  switch (rule.frequency) {
    case 'daily':
      return fromDayNumber(dayNumber(start) + step);
    case 'weekly':
      return fromDayNumber(dayNumber(start) + 7 * step);
    case 'monthly': {
      const monthIndex = start.month - 1 + step;
      return civilIfExists(start.year + Math.floor(monthIndex / 12), (monthIndex % 12) + 1, start.day);
    }
    case 'yearly':
      return civilIfExists(start.year + step, start.month, start.day);
  }
}

/** Days between candidates, for fast-forwarding a start date far in the past (monthly/yearly step little). */
function fixedStepDays(rule: RecurrenceRule): number | null {
  if (rule.frequency === 'daily') return rule.interval;
  if (rule.frequency === 'weekly') return 7 * rule.interval;
  return null;
}

/**
 * Every occurrence instant of the rule in `timezone`, strictly after `now`, inside [start_date, end_date] (or up to
 * the horizon when open-ended), in increasing order. A time in a spring-forward gap moves forward by the gap's
 * length; one in the fall-back hour takes its first occurrence; two times landing on one instant count once.
 */
export function expandRecurrence(rule: RecurrenceRule, timezone: string, window: ExpansionWindow): RecurrenceResult {
  const { start, end, issues } = validateRule(rule);
  if (issues.length > 0) return { ok: false, issues };

  const lastDay = end ? dayNumber(end) : Math.floor(window.horizonEnd / DAY_MS) + 1;
  const firstUsefulDay = Math.floor(window.now / DAY_MS) - 2;
  const step = fixedStepDays(rule);
  let k = step !== null ? Math.max(0, Math.floor((firstUsefulDay - dayNumber(start)) / step)) : 0;

  const collected = new Set<number>();
  for (; ; k++) {
    const day = candidateDay(rule, start, k);
    const periodStart = step !== null ? dayNumber(start) + k * step : day ? dayNumber(day) : null;
    if (periodStart !== null && periodStart > lastDay) break;
    if (!day) {
      if (rule.frequency === 'yearly' && start.year + k * rule.interval > 9999) break;
      if (rule.frequency === 'monthly' && start.year + Math.floor((start.month - 1 + k * rule.interval) / 12) > 9999) break;
      continue;
    }
    const dateText = format(day);
    // the instants are sorted at the end: a time moved past a spring-forward gap may overtake a later one
    for (const time of rule.times) {
      const resolved = resolveLocalTime(dateText, time, timezone);
      if (!resolved.ok) continue;
      const instant = resolved.instant;
      if (instant <= window.now) continue;
      if (!end && instant > window.horizonEnd) continue;
      collected.add(instant);
    }
    if (collected.size > window.limit) break;
  }
  const instants = [...collected].sort((a, b) => a - b);
  const reachedLimit = instants.length > window.limit;
  return { ok: true, instants: reachedLimit ? instants.slice(0, window.limit + 1) : instants, reachedLimit };
}
