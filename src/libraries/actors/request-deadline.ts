import { AsyncLocalStorage } from 'node:async_hooks';
import { DeadlineExpiredError } from '../errors/internal-errors.js';

/**
 * The deadline of the request being served: an absolute time (ms since the epoch, on the injected clock) after
 * which none of its steps may start. Every actor ask made while it runs carries it (capped by the ask's own
 * timeout), whichever node the actor lives on. `null`: no request deadline (a step that must finish, or work
 * outside a request), so each ask only has its own.
 */
const current = new AsyncLocalStorage<{ readonly at: number | null }>();

/** Runs `work` under the deadline `at` (null lifts it: the work must finish once something was decided). */
export function withDeadline<T>(at: number | null, work: () => T): T {
  return current.run({ at }, work);
}

export function requestDeadline(): number | null {
  return current.getStore()?.at ?? null;
}

/** The deadline one ask carries: the request's, or sooner if the ask's own timeout ends first. */
export function askDeadline(now: number, askTimeoutMs: number): number {
  const request = requestDeadline();
  return request === null ? now + askTimeoutMs : Math.min(request, now + askTimeoutMs);
}

/** Refuses to start `step` once the request's deadline has passed. */
export function beforeDeadline(now: number, step: string): void {
  const at = requestDeadline();
  if (at !== null && now >= at) throw new DeadlineExpiredError(step);
}

/**
 * Finishes what must follow a decision already journaled (a charge's message, a cancel's refund), with the
 * request's deadline lifted: tried again with backoff until it succeeds or `boundMs` has passed. False when it gave
 * up: the rest is then left to the outbox entry journaled with the decision, which completes it.
 */
export async function finishDecided(
  clock: { now(): number },
  boundMs: number,
  step: () => Promise<void>,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Promise<boolean> {
  return withDeadline(null, async () => {
    const until = clock.now() + boundMs;
    for (let delayMs = 25; ; delayMs = Math.min(delayMs * 2, 1_000)) {
      try {
        await step();
        return true;
      } catch {
        if (clock.now() + delayMs >= until) return false;
        await sleep(delayMs);
      }
    }
  });
}

/**
 * A timer for "no answer within `ms`" that counts only time the process ran: one that fires late (the event loop
 * stalled, or the process was frozen with SIGSTOP) waits `ms` again, since the answer may be sitting unread in a
 * socket. Returns the cancel function.
 */
export function patientTimer(clock: { now(): number }, ms: number, onExpire: () => void): () => void {
  let timer: NodeJS.Timeout;
  const arm = () => {
    const due = clock.now() + ms;
    timer = setTimeout(() => {
      // late by more than the wait itself (and at least a second): the process did not run meanwhile
      if (clock.now() - due > Math.max(1_000, ms)) arm();
      else onExpire();
    }, ms);
  };
  arm();
  return () => {
    clearTimeout(timer);
  };
}
