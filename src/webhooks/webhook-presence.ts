import type { ApiKeyCommand, ApiKeyEvent, ApiKeyReplies, ApiKeyState } from '../api-keys/api-key-behaviour.js';
import { applyEvents, type Behaviour, type BehaviourContext, type Decision, type Handlers } from '../libraries/actors/behaviour.js';

/**
 * Which API keys have a webhook endpoint, as the key actors living on this node know it. A message records its
 * webhook events (outbox entries the relay carries out) only when they can go somewhere: to the message's
 * callback_url, or to its key's webhook. Without this, every event of a merchant who reads `GET /status` instead of
 * taking webhooks is written, relayed to nowhere and deleted: a third of the database's work per message.
 *
 * Every change of a key goes through its actor on the node that owns the key's shard (the CLI reaches a running
 * node's actors), and that node is also where the key's messages live. So what the key actors here last saw is the
 * truth for this node's messages; a key none of them has seen is unknown, and unknown records the events (the relay
 * then asks the key, as it always did). A shard that leaves this node takes what was known of its keys with it.
 *
 * The messages do not read it themselves: their host's policy (messageHostPolicy) writes what it says of a message's
 * key into each command that can yield webhook events, so a message's decision stays a function of its state and
 * the command.
 */
export interface WebhookPresence {
  /** False only when the key is known to have no webhook now. */
  mayHaveWebhook(keyId: string): boolean;
  /** What a key's actor saw deciding a command: whether the key had a webhook before it or has one after. */
  note(keyId: string, shard: number, hasWebhook: boolean): void;
  /** The shard left this node: its keys are unknown again. */
  forgetShard(shard: number): void;
}

export function createWebhookPresence(): WebhookPresence {
  const known = new Map<string, { readonly shard: number; readonly hasWebhook: boolean }>();
  return {
    mayHaveWebhook: (keyId) => known.get(keyId)?.hasWebhook ?? true,
    note(keyId, shard, hasWebhook) {
      known.set(keyId, { shard, hasWebhook });
    },
    forgetShard(shard) {
      for (const [keyId, entry] of known) if (entry.shard === shard) known.delete(keyId);
    },
  };
}

const hasWebhook = (state: ApiKeyState): boolean => state.created && state.webhook !== null;

/**
 * The key behaviour, telling `presence` what each command saw. A key that had a webhook before the command or has
 * one after counts as having one: a webhook just set counts at once, one just cleared only from the key's next
 * command, once the clearing is journaled.
 */
export function withWebhookPresence(
  behaviour: Behaviour<ApiKeyState, ApiKeyCommand, ApiKeyEvent, ApiKeyReplies>,
  presence: Pick<WebhookPresence, 'note'>,
): Behaviour<ApiKeyState, ApiKeyCommand, ApiKeyEvent, ApiKeyReplies> {
  type AnyHandler = (state: ApiKeyState, command: ApiKeyCommand, context: BehaviourContext) => Decision<ApiKeyState, ApiKeyEvent, unknown>;
  const noting =
    (handler: AnyHandler): AnyHandler =>
    (state, command, context) => {
      const decision = handler(state, command, context);
      const after = applyEvents(behaviour, decision.state ?? state, decision.events);
      presence.note(state.keyId, context.shard, hasWebhook(state) || hasWebhook(after));
      return decision;
    };
  const handlers = Object.fromEntries(Object.entries(behaviour.handlers).map(([type, handler]) => [type, noting(handler as AnyHandler)]));
  return { ...behaviour, handlers: handlers as unknown as Handlers<ApiKeyState, ApiKeyCommand, ApiKeyEvent, ApiKeyReplies> };
}
