/**
 * The message actor, by responsibility: its types (message/message-types.ts), its fold (message/message-evolve.ts),
 * the outbox entries it yields (message/message-effects.ts) and its decisions (message/message-decide.ts).
 */
export * from './message/message-types.js';
export { applyMessageEvent, applyMessageEvents, EMPTY_MESSAGE, isSettled, recipientTransitions } from './message/message-evolve.js';
export type { MessageEffect } from './message/message-effects.js';
export { createMessageBehaviour, messageHostPolicy, messageOwnerOf, withKeyWebhook } from './message/message-decide.js';
