import type { PayloadsByTopic } from './libraries/actors/behaviour.js';
import type { MessageEffect } from './messaging/message-behaviour.js';
import type { MessageCreateEffect } from './messaging/send-message-use-case.js';

/**
 * Every outbox entry the gateway writes, discriminated by topic: what messages yield (dispatches, receipt deadlines,
 * webhook events, wallet adjustments, schedule registrations) and the creation a charge leaves behind it.
 */
export type OutboxEffect = MessageEffect | MessageCreateEffect;

/** The payload of each outbox topic: the relay gives each topic's handler exactly its own. */
export type OutboxPayloads = PayloadsByTopic<OutboxEffect>;
