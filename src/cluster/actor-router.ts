import type { ActorHost, ActorRef, ActorRuntime } from '../libraries/actors/actor-runtime.js';
import type { ApiKeyCommand, ApiKeyReplies } from '../api-keys/api-key-behaviour.js';
import type { MessageCommand, MessageReplies } from '../messaging/message-behaviour.js';
import type { WalletCommand, WalletReplies } from '../wallets/wallet-behaviour.js';
import { apiKeyHostPolicy, createApiKeyBehaviour } from '../api-keys/api-key-behaviour.js';
import { createMessageBehaviour, messageHostPolicy, recipientTransitions } from '../messaging/message-behaviour.js';
import { createWalletBehaviour } from '../wallets/wallet-behaviour.js';
import type { RateLimitPolicy } from '../api-keys/rate-limiter.js';
import type { RecipientStatus } from '../carriers/carrier-outcomes.js';
import type { ActorHostOptions } from '../libraries/actors/actor-runtime.js';
import { shardOf } from './shards.js';
import { createWebhookPresence, withWebhookPresence, type WebhookPresence } from '../webhooks/webhook-presence.js';

export type WalletRef = ActorRef<WalletCommand, WalletReplies>;
export type ApiKeyRef = ActorRef<ApiKeyCommand, ApiKeyReplies>;
export type MessageRef = ActorRef<MessageCommand, MessageReplies>;

/**
 * The one way to reach an actor. Every address carries the merchant, whose shard decides where the actor lives:
 * here (local) or on the node that owns the shard (cluster).
 */
export interface ActorRouter {
  wallet(merchantId: string): WalletRef;
  apiKey(merchantId: string, keyId: string): ApiKeyRef;
  message(merchantId: string, messageId: string): MessageRef;
  shardOf(merchantId: string): number;
}

export interface DomainHosts {
  readonly wallets: ActorHost<WalletCommand, WalletReplies>;
  readonly apiKeys: ActorHost<ApiKeyCommand, ApiKeyReplies>;
  readonly messages: ActorHost<MessageCommand, MessageReplies>;
  /** What this node's key actors know of their webhooks; the messages record events by it. */
  readonly keyWebhooks: WebhookPresence;
}

export interface DomainHostOptions {
  readonly host: ActorHostOptions;
  readonly ratePolicy: RateLimitPolicy;
  readonly idempotencyTtlMs: number;
  /** A recipient entered `status`: once per status, counted from each message record once it is durable (metrics). */
  readonly onRecipientTransition?: (status: Exclude<RecipientStatus, 'pending'>) => void;
}

export function createDomainHosts(runtime: ActorRuntime, options: DomainHostOptions): DomainHosts {
  const keyWebhooks = createWebhookPresence();
  const onTransition = options.onRecipientTransition;
  const messageBehaviour = createMessageBehaviour();
  // the messages learn from this node's key actors whether a key may have a webhook, as an input of each command
  const messagePolicy = messageHostPolicy(keyWebhooks);
  return {
    wallets: runtime.host(createWalletBehaviour({ idempotencyTtlMs: options.idempotencyTtlMs }), options.host),
    apiKeys: runtime.host(withWebhookPresence(createApiKeyBehaviour(options.ratePolicy), keyWebhooks), options.host, apiKeyHostPolicy),
    messages: onTransition
      ? runtime.host(messageBehaviour, options.host, messagePolicy, ({ before, events }) => {
          for (const status of recipientTransitions(before, events)) onTransition(status);
        })
      : runtime.host(messageBehaviour, options.host, messagePolicy),
    keyWebhooks,
  };
}

/** Every actor lives in this process. */
export function createLocalActorRouter(hosts: DomainHosts, shards: number): ActorRouter {
  const shard = (merchantId: string) => shardOf(merchantId, shards);
  return {
    wallet: (merchantId) => hosts.wallets.ref(merchantId, shard(merchantId)),
    apiKey: (merchantId, keyId) => hosts.apiKeys.ref(keyId, shard(merchantId)),
    message: (merchantId, messageId) => hosts.messages.ref(messageId, shard(merchantId)),
    shardOf: shard,
  };
}
