import type { ActorRouter } from '../../cluster/actor-router.js';
import { runEntryTasks, type TopicHandler } from '../../libraries/persistence/outbox-relay.js';
import { isMessageSpec, type MessageSpec } from '../../messaging/message-behaviour.js';
import { expireUnansweredRecipients, isReceiptDeadline, type ReceiptDeadline } from '../../messaging/receipt-deadlines.js';
import { isScheduleRegistration, type ScheduleRegistration } from '../../scheduling/schedule-registration.js';
import { applyWalletAdjustment, isWalletAdjustment, type WalletAdjustment } from '../../wallets/wallet-adjustments.js';
import type { OccurrenceScheduler } from './occurrence-scheduler.js';

/**
 * The outbox's background jobs: each topic's entries, carried out by the relay, handed to the area that knows what
 * they mean. A handler returns the ids of the entries done; the others stay pending for the next pass.
 */

/** A send charged but not yet created (the process died in between) is finished from its outbox entry. */
export function finishInterruptedSends(completeCreation: (spec: MessageSpec) => Promise<void>, graceMs: number): TopicHandler<MessageSpec> {
  return {
    graceMs,
    accepts: isMessageSpec,
    async handle(entries) {
      const done: string[] = [];
      for (const entry of entries) {
        await completeCreation(entry.payload);
        done.push(entry.id);
      }
      return done;
    },
  };
}

/** Refunds and settlements a message journaled, carried to its wallet (idempotent per refund id). */
export function adjustWallets(router: ActorRouter, graceMs: number): TopicHandler<WalletAdjustment> {
  return {
    graceMs,
    accepts: isWalletAdjustment,
    async handle(entries) {
      for (const entry of entries) await applyWalletAdjustment(router, entry.payload);
      return entries.map((entry) => entry.id);
    },
  };
}

/** A dispatched occurrence leaves its deadline in the outbox; when it is due, unanswered recipients fail with 1503. */
export function expireReceipts(router: ActorRouter, receiptTimeoutMs: number): TopicHandler<ReceiptDeadline> {
  return {
    graceMs: receiptTimeoutMs,
    accepts: isReceiptDeadline,
    async handle(entries) {
      for (const entry of entries) await expireUnansweredRecipients(router, entry.payload);
      return entries.map((entry) => entry.id);
    },
  };
}

/**
 * Scheduled sends registered with the scheduler, a batch's registrations saved concurrently (bounded): one at a
 * time, a burst of scheduled sends would reach the scheduler long after their 201s.
 */
export function registerSchedules(
  scheduler: Pick<OccurrenceScheduler, 'register'>,
  inFlight: number,
  onError: (error: unknown) => void,
): TopicHandler<ScheduleRegistration> {
  return {
    accepts: isScheduleRegistration,
    handle: (entries) => runEntryTasks(entries, (entry) => [() => scheduler.register(entry.payload)], inFlight, onError),
  };
}
