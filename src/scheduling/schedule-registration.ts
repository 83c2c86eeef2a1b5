import type { EffectOf } from '../libraries/actors/behaviour.js';
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
