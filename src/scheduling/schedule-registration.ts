import type { EffectOf } from '../libraries/actors/behaviour.js';
import { runEntryTasks, type TopicHandler } from '../libraries/persistence/outbox-relay.js';
import { isFiniteNumber, isRecord, isText } from '../libraries/validation/guards.js';

/** Outbox topic asking the scheduler to wake a message at its first occurrence. */
export const SCHEDULE_REGISTER_TOPIC = 'schedule.register';

/** Payload of a `schedule.register` outbox entry. */
export interface ScheduleRegistration {
  readonly merchantId: string;
  readonly messageId: string;
  readonly at: number;
}

export type ScheduleRegistrationEffect = EffectOf<typeof SCHEDULE_REGISTER_TOPIC, ScheduleRegistration>;

/** A `schedule.register` payload read back from the outbox. */
export function isScheduleRegistration(value: unknown): value is ScheduleRegistration {
  return isRecord(value) && isText(value.merchantId) && isText(value.messageId) && isFiniteNumber(value.at);
}

/** Scheduler job saves in flight at once while the relay registers a batch of schedules. */
export const SCHEDULE_REGISTRATIONS_IN_FLIGHT = 32;

/**
 * Outbox `schedule.register` → the scheduler. The registrations of a batch are saved concurrently (bounded): one at
 * a time, a burst of scheduled sends would reach the scheduler long after their 201s.
 */
export function createScheduleRegistrationRelay(
  scheduler: { register(registration: ScheduleRegistration): Promise<void> },
  onError: (error: unknown) => void,
): TopicHandler<ScheduleRegistration> {
  return {
    accepts: isScheduleRegistration,
    handle: (entries) =>
      runEntryTasks(entries, (entry) => [() => scheduler.register(entry.payload)], SCHEDULE_REGISTRATIONS_IN_FLIGHT, onError),
  };
}
