import { randomUUID } from 'node:crypto';
import type { IdGenerator } from '../libraries/clock/clock.js';

/** Fresh ids: UUID v4 for events, prefixed random ids for the rest. */
export interface IdGenerators {
  readonly eventId: IdGenerator;
  readonly messageId: IdGenerator;
  readonly keyId: IdGenerator;
  readonly merchantId: IdGenerator;
}

const compactUuid = () => randomUUID().replace(/-/g, '');
export const DEFAULT_IDS: IdGenerators = {
  eventId: () => randomUUID(),
  messageId: () => `msg_${compactUuid()}`,
  keyId: () => `key_${compactUuid().slice(0, 20)}`,
  merchantId: () => `mer_${compactUuid().slice(0, 20)}`,
};
