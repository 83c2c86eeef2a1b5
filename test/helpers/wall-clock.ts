/**
 * Moves this process's wall clock (`Date`) forward, for the suites where Agenda times real jobs.
 *
 * `scheduled_dates` and `recurring_schedule.times` have minute precision, so an occurrence is always on a minute
 * boundary, and Agenda reads the time from `Date` (it takes no clock). Rather than wait up to a minute of real time
 * for the next boundary, a suite moves the whole process (Agenda, the gateway's system clock, the relay, the
 * simulator) to a few seconds before one. Time then runs on at its real pace: Agenda genuinely waits for the
 * instant. Timers (`setTimeout`, Agenda's poll interval) are untouched; the database's own `now()` is not used by
 * Agenda nor by the gateway (outside the unused shard leases). Child processes get the same offset through
 * `WALL_CLOCK_OFFSET_MS` (wall-clock-from-env.ts, imported first by schedule-node.ts).
 */
const RealDate = globalThis.Date;
let offsetMs = 0;
let installed = false;

class ShiftedDate extends RealDate {
  constructor(...args: ConstructorParameters<DateConstructor> | []) {
    if (args.length === 0) super(RealDate.now() + offsetMs);
    else super(...args);
  }

  static override now(): number {
    return RealDate.now() + offsetMs;
  }
}

/** Replaces the global `Date` (idempotent); `offset` is where the clock starts relative to the real time. */
export function installWallClock(offset = 0): void {
  offsetMs = offset;
  if (installed) return;
  installed = true;
  globalThis.Date = ShiftedDate as DateConstructor;
}

export function uninstallWallClock(): void {
  if (!installed) return;
  installed = false;
  offsetMs = 0;
  globalThis.Date = RealDate;
}

/** How far the process's clock is ahead of the real time. */
export function wallClockOffset(): number {
  return offsetMs;
}

const MINUTE = 60_000;

/**
 * Jumps forward to `leadMs` before the next minute boundary that is at least `leadMs` away; returns the boundary
 * (an instant a scheduled date can name). Never moves backward.
 */
export function jumpBeforeNextMinute(leadMs: number): number {
  if (!installed) throw new Error('installWallClock() first');
  const now = RealDate.now() + offsetMs;
  const boundary = Math.ceil((now + leadMs + 1) / MINUTE) * MINUTE;
  offsetMs += boundary - leadMs - now;
  return boundary;
}

/** Jumps forward by `ms`. */
export function jumpForward(ms: number): void {
  if (!installed) throw new Error('installWallClock() first');
  offsetMs += ms;
}
