import { PostgresBackend } from '@agendajs/postgres-backend';
import { expect } from 'chai';
import type { Gateway } from '../../../src/gateway.js';
import type { Clock } from '../../../src/libraries/clock/clock.js';
import type { Config, DeepPartial } from '../../../src/libraries/config/config.js';
import type { MessageEvent } from '../../../src/messaging/message-behaviour.js';
import { dataOf, type ApiClient } from '../../helpers/api-helpers.js';
import { startApi, type ApiFixture } from '../../helpers/http-fixture.js';

/** Shared by the scheduling suites (test/integration/scheduling). */

const MANY = 1_000_000;
/** Rate limits are covered by the HTTP suites; here they would only get in the way. */
export const NO_RATE_LIMITS = { send: MANY, status: MANY, balance: MANY, calculate: MANY, management: MANY } as const;

/**
 * A node on `url` whose Agenda stores the occurrence jobs but never runs one during a test: no LISTEN/NOTIFY and a
 * poll an hour away (its first poll, at start, finds an empty table). The occurrence dates of these suites are in
 * the real past, so a running Agenda would fire at once; instead the test plays the job, asking the MessageActor
 * for `dispatch_due` with the injected (manual) clock, exactly as the job's handler does.
 */
export function startHeldApi(url: string, clock: Clock, config: DeepPartial<Config> = {}): Promise<ApiFixture> {
  return startApi(url, {
    clock,
    agendaBackend: new PostgresBackend({ connectionString: url, disableNotifications: true }),
    config: { ...config, rateLimits: NO_RATE_LIMITS, scheduling: { processEveryMs: 3_600_000, ...config.scheduling } },
  });
}

export interface RecipientData {
  readonly recipient_index: number;
  readonly phone: string;
  readonly status: string;
  readonly carrier_status: string | null;
  readonly error_code: string | null;
  readonly error_message: string | null;
  readonly updated_at: string | null;
  readonly sent_at: string | null;
  readonly delivered_at: string | null;
  readonly failed_at: string | null;
}

export interface ScheduleData {
  readonly type: 'scheduled' | 'recurring';
  readonly state: 'active' | 'paused' | 'cancelled' | 'completed';
  readonly next_occurrence_at: string | null;
  readonly occurrences_total: number;
  readonly occurrences_dispatched: number;
  readonly occurrences_remaining: number;
}

export interface OccurrenceData {
  readonly occurrence_index: number;
  readonly scheduled_at: string;
  readonly status: string;
  readonly delivered: number;
  readonly failed: number;
  readonly pending: number;
  readonly cancelled: number;
  readonly skipped: number;
}

export interface StatusData {
  readonly message_id: string;
  readonly status: string;
  readonly total_recipients: number;
  readonly delivered: number;
  readonly failed: number;
  readonly pending: number;
  readonly cancelled: number;
  readonly skipped: number;
  readonly recipients: readonly RecipientData[];
  readonly sending_type: string;
  readonly schedule: ScheduleData | null;
  readonly occurrences: readonly OccurrenceData[];
}

export async function statusOf(http: ApiClient, key: string, messageId: string): Promise<StatusData> {
  return dataOf<StatusData>(await http.status(key, messageId));
}

/** Money as integer 1/10 000 units, so sums are exact. */
export function units(amount: number): number {
  return Math.round(amount * 10_000);
}

export const iso = (ms: number): string => new Date(ms).toISOString();

/** Every event the MessageActor journaled, in order. */
export async function messageEvents(gateway: Pick<Gateway, 'persistence'>, messageId: string): Promise<MessageEvent[]> {
  const records = await gateway.persistence.journal.read(`message:${messageId}`, 0);
  return records.flatMap((record) => record.events as MessageEvent[]);
}

/** How many times each occurrence was journaled as dispatched, by occurrence index. */
export async function dispatchCounts(gateway: Pick<Gateway, 'persistence'>, messageId: string): Promise<Record<number, number>> {
  const counts: Record<number, number> = {};
  for (const event of await messageEvents(gateway, messageId)) {
    if (event.type === 'occurrence_dispatched') counts[event.occurrence] = (counts[event.occurrence] ?? 0) + 1;
  }
  return counts;
}

/** What the occurrence job does when Agenda runs it: the actor's answer (dispatched indexes, when to come back). */
export async function playJob(
  gateway: Gateway,
  merchantId: string,
  messageId: string,
): Promise<{ dispatched: readonly number[]; next: string | null }> {
  const reply = await gateway.router.message(merchantId, messageId).ask({ type: 'dispatch_due' });
  if (!reply.ok) throw new Error(`dispatch_due: ${reply.code}`);
  return { dispatched: reply.dispatched, next: reply.next === null ? null : iso(reply.next) };
}

/** The Agenda job registered for a message (the relay registers it right after the send). */
export async function jobOf(gateway: Gateway, messageId: string) {
  const scheduler = gateway.scheduler;
  if (!scheduler) throw new Error('this gateway has no scheduler');
  await gateway.relay.drain();
  const jobs = await scheduler.jobs({ messageId });
  expect(jobs, `the Agenda job of ${messageId}`).to.have.length(1);
  return jobs[0]!;
}

/**
 * Polls `probe` until it returns a value (not undefined) or the deadline passes. The deadline is on the monotonic
 * clock: suites that move the wall clock (test/helpers/wall-clock.ts) do not shorten it.
 */
export async function eventually<T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>, everyMs = 50): Promise<T> {
  const deadline = performance.now() + timeoutMs;
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (performance.now() > deadline) throw new Error(`timed out after ${timeoutMs} ms waiting for ${what}`);
    await new Promise((resolve) => setTimeout(resolve, everyMs));
  }
}
