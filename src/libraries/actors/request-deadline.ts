import { DeadlineExpiredError } from '../errors/internal-errors.js';

/** How many times the work of one request crossed to another node (an ask or a forwarded request sent over NATS). */
export interface HopCount {
  hops: number;
}

/**
 * What the work of one request carries with it, passed explicitly from the request's entry (HTTP, a forwarded
 * operation) to every actor ask it makes, whichever node the actor lives on. Explicit rather than an
 * AsyncLocalStorage: an active one turns on Node's promise hooks for every promise of the process, which cost the
 * node about a tenth of its throughput (docs/performance.md).
 */
export interface RequestScope {
  /**
   * The request's deadline: an absolute time (ms since the epoch, on the injected clock) after which none of its
   * steps may start; each ask carries it, capped by the ask's own timeout. `null`: no request deadline (a step that
   * must finish, or work outside a request), so each ask only has its own.
   */
  readonly deadline: number | null;
  /** The request's count of remote hops (the HTTP layer opens one per request); absent: counted nowhere. */
  readonly hops?: HopCount;
  /**
   * The shard of the forwarded operation being served here: its asks for that shard do not wait for a new owner
   * once this node lost it (the forwarder goes there itself).
   */
  readonly forwardedShard?: number;
}

/** Work outside any request: no deadline but each ask's own, no hop count. */
export const NO_SCOPE: RequestScope = Object.freeze({ deadline: null });

/** The same request's scope with its deadline lifted: what follows a decision must finish. */
export function liftDeadline(scope: RequestScope): RequestScope {
  return scope.deadline === null ? scope : { ...scope, deadline: null };
}

/** The deadline one ask carries: the request's, or sooner if the ask's own timeout ends first. */
export function askDeadline(now: number, askTimeoutMs: number, requestDeadline: number | null = null): number {
  return requestDeadline === null ? now + askTimeoutMs : Math.min(requestDeadline, now + askTimeoutMs);
}

/** Refuses to start `step` once the request's deadline (`at`) has passed. */
export function beforeDeadline(at: number | null, now: number, step: string): void {
  if (at !== null && now >= at) throw new DeadlineExpiredError(step);
}

/** One remote hop by the work of `scope` (outside a request: counted nowhere). */
export function recordRemoteHop(scope: RequestScope): void {
  if (scope.hops) scope.hops.hops += 1;
}

/**
 * Finishes what must follow a decision already journaled (a charge's message, a cancel's refund): tried again with
 * backoff until it succeeds or `boundMs` has passed. `step` gets the request's scope with its deadline lifted: past
 * the decision the request finishes, and its hops still count. False when it gave up: the rest is then left to the
 * outbox entry journaled with the decision, which completes it.
 */
export async function finishDecided(
  clock: { now(): number },
  boundMs: number,
  scope: RequestScope,
  step: (decided: RequestScope) => Promise<void>,
  sleep: (ms: number) => Promise<void> = (ms) => new Promise((resolve) => setTimeout(resolve, ms)),
): Promise<boolean> {
  const decided = liftDeadline(scope);
  const until = clock.now() + boundMs;
  for (let delayMs = 25; ; delayMs = Math.min(delayMs * 2, 1_000)) {
    try {
      await step(decided);
      return true;
    } catch {
      if (clock.now() + delayMs >= until) return false;
      await sleep(delayMs);
    }
  }
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
