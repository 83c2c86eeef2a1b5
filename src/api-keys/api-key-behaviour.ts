import type { Behaviour, HostPolicy } from '../libraries/actors/behaviour.js';
import type { GatewayEnvironment } from '../libraries/config/config.js';
import { effectiveStatus, hashesEqual, judgeKey, type KeyStatus } from './api-key.js';
import type { StoredSecret } from '../libraries/secrets/secret-box.js';
import { decide as decideRate, EMPTY_RATE_STATE, type RateBucket, type RateLimitPolicy, type RateState } from './rate-limiter.js';

/**
 * ApiKeyActor (`apikey:<keyId>`): the key's status and webhook settings (journaled), its rate-limit windows
 * (in memory only: a restart forgets them, which errs on the merchant's side) and its 1302 suspension (journaled,
 * so it survives restarts). Authentication and rate limiting are one step here.
 */

/** A key's webhook as the merchant's operator gives it. */
export interface WebhookSettingsInput {
  readonly url: string;
  readonly username: string | null;
  readonly password: string | null;
}

/** A key's webhook as journaled: the password sealed (see SecretBox; clear in events written before sealing). */
export interface WebhookSettings {
  readonly url: string;
  readonly username: string | null;
  /** Write-only: opened for Basic auth at delivery, never shown. */
  readonly password: StoredSecret | null;
}

export interface ApiKeyState {
  readonly keyId: string;
  readonly created: boolean;
  readonly merchantId: string;
  readonly environment: GatewayEnvironment;
  readonly hash: string;
  readonly display: string;
  readonly status: KeyStatus;
  readonly expiresAt: number | null;
  readonly deletedAt: number | null;
  readonly createdAt: number | null;
  readonly webhook: WebhookSettings | null;
  /** Opt-in HMAC signing of webhook bodies (sealed). */
  readonly signingSecret: StoredSecret | null;
  /** Advances on every authenticated call (memory); journaled at most once a minute. */
  readonly lastUsedAt: number | null;
  readonly lastUsedJournaledAt: number | null;
  readonly rate: RateState;
}

export type ApiKeyEvent =
  | {
      readonly type: 'key_created';
      readonly merchantId: string;
      readonly environment: GatewayEnvironment;
      readonly hash: string;
      readonly display: string;
      readonly status: KeyStatus;
      readonly expiresAt: number | null;
      readonly at: number;
    }
  | { readonly type: 'status_changed'; readonly status: KeyStatus; readonly at: number }
  | { readonly type: 'expiry_set'; readonly expiresAt: number | null; readonly at: number }
  | { readonly type: 'key_rotated'; readonly hash: string; readonly display: string; readonly at: number }
  | { readonly type: 'key_deleted'; readonly at: number }
  | { readonly type: 'webhook_set'; readonly webhook: WebhookSettings | null; readonly at: number }
  | { readonly type: 'signing_secret_set'; readonly secret: StoredSecret | null; readonly at: number }
  | { readonly type: 'key_used'; readonly at: number }
  | { readonly type: 'key_suspended'; readonly until: number; readonly at: number };

export type ApiKeyCommand =
  | {
      readonly type: 'create';
      readonly merchantId: string;
      readonly environment: GatewayEnvironment;
      readonly hash: string;
      readonly display: string;
      readonly status: KeyStatus;
      readonly expiresAt: number | null;
    }
  | { readonly type: 'authenticate'; readonly hash: string; readonly bucket: RateBucket }
  | { readonly type: 'set_status'; readonly status: KeyStatus }
  | { readonly type: 'set_expiry'; readonly expiresAt: number | null }
  | { readonly type: 'rotate'; readonly hash: string; readonly display: string }
  | { readonly type: 'delete' }
  | { readonly type: 'set_webhook'; readonly webhook: WebhookSettings | null }
  | { readonly type: 'set_signing_secret'; readonly secret: StoredSecret | null }
  | { readonly type: 'describe' }
  | { readonly type: 'webhook_target' };

export type AuthenticationReply =
  | { readonly outcome: 'authenticated'; readonly merchantId: string; readonly keyId: string }
  | { readonly outcome: 'unauthorized' }
  | { readonly outcome: 'forbidden'; readonly status: Exclude<KeyStatus, 'allowed'> }
  | { readonly outcome: 'rate_limited'; readonly retryAfterSeconds: number }
  | { readonly outcome: 'suspended'; readonly retryAfterSeconds: number };

/** What operators see of a key: never the hash, the cleartext or the webhook password. */
export interface KeyView {
  readonly keyId: string;
  readonly merchantId: string;
  readonly environment: GatewayEnvironment;
  readonly display: string;
  readonly status: KeyStatus;
  readonly expiresAt: number | null;
  readonly deleted: boolean;
  readonly createdAt: number | null;
  readonly lastUsedAt: number | null;
  readonly suspendedUntil: number | null;
  readonly webhookUrl: string | null;
  readonly webhookBasicAuthUsername: string | null;
  readonly webhookBasicAuthPasswordSet: boolean;
  readonly signing: boolean;
}

export interface WebhookTarget {
  readonly merchantId: string;
  readonly webhook: WebhookSettings | null;
  readonly signingSecret: StoredSecret | null;
}

/** The additional data a key's sealed secrets are bound to: they open only on their own key and field. */
export const secretContext = {
  webhookPassword: (keyId: string) => `apikey:${keyId}:webhook_password`,
  signingSecret: (keyId: string) => `apikey:${keyId}:signing_secret`,
} as const;

type NotFound = { readonly ok: false; readonly code: 'NOT_FOUND' };
type Done = { readonly ok: true };

export interface ApiKeyReplies {
  readonly create: { readonly ok: true; readonly created: boolean };
  readonly authenticate: AuthenticationReply;
  readonly set_status: Done | NotFound;
  readonly set_expiry: Done | NotFound;
  readonly rotate: Done | NotFound;
  readonly delete: Done | NotFound;
  readonly set_webhook: Done | NotFound;
  readonly set_signing_secret: Done | NotFound;
  readonly describe: { readonly ok: true; readonly key: KeyView } | NotFound;
  readonly webhook_target: { readonly ok: true; readonly target: WebhookTarget } | NotFound;
}

const LAST_USED_JOURNAL_INTERVAL_MS = 60_000;
const NOT_FOUND: NotFound = { ok: false, code: 'NOT_FOUND' };

export function keyView(state: ApiKeyState, now: number): KeyView {
  return {
    keyId: state.keyId,
    merchantId: state.merchantId,
    environment: state.environment,
    display: state.display,
    status: effectiveStatus(state, now),
    expiresAt: state.expiresAt,
    deleted: state.deletedAt !== null,
    createdAt: state.createdAt,
    lastUsedAt: state.lastUsedAt,
    suspendedUntil: state.rate.suspendedUntil !== null && state.rate.suspendedUntil > now ? state.rate.suspendedUntil : null,
    webhookUrl: state.webhook?.url ?? null,
    webhookBasicAuthUsername: state.webhook?.username ?? null,
    webhookBasicAuthPasswordSet: (state.webhook?.password ?? null) !== null,
    signing: state.signingSecret !== null,
  };
}

export function createApiKeyBehaviour(policy: RateLimitPolicy): Behaviour<ApiKeyState, ApiKeyCommand, ApiKeyEvent, ApiKeyReplies> {
  function apply(state: ApiKeyState, event: ApiKeyEvent): ApiKeyState {
    switch (event.type) {
      case 'key_created':
        return {
          ...state,
          created: true,
          merchantId: event.merchantId,
          environment: event.environment,
          hash: event.hash,
          display: event.display,
          status: event.status,
          expiresAt: event.expiresAt,
          createdAt: event.at,
        };
      case 'status_changed':
        return { ...state, status: event.status };
      case 'expiry_set':
        return { ...state, expiresAt: event.expiresAt };
      case 'key_rotated':
        return { ...state, hash: event.hash, display: event.display };
      case 'key_deleted':
        return { ...state, deletedAt: event.at };
      case 'webhook_set':
        return { ...state, webhook: event.webhook };
      case 'signing_secret_set':
        return { ...state, signingSecret: event.secret };
      case 'key_used':
        return { ...state, lastUsedAt: Math.max(state.lastUsedAt ?? 0, event.at), lastUsedJournaledAt: event.at };
      case 'key_suspended':
        return { ...state, rate: { ...state.rate, rejections: [], suspendedUntil: event.until } };
    }
  }

  /** A command that changes a created, not deleted key by one event. */
  function change(state: ApiKeyState, event: ApiKeyEvent): { events: ApiKeyEvent[]; reply: Done | NotFound } {
    if (!state.created || state.deletedAt !== null) return { events: [], reply: NOT_FOUND };
    return { events: [event], reply: { ok: true } };
  }

  return {
    kind: 'apikey',
    initialState: (keyId) => ({
      keyId,
      created: false,
      merchantId: '',
      environment: 'sandbox',
      hash: '',
      display: '',
      status: 'pending_validation',
      expiresAt: null,
      deletedAt: null,
      createdAt: null,
      webhook: null,
      signingSecret: null,
      lastUsedAt: null,
      lastUsedJournaledAt: null,
      rate: EMPTY_RATE_STATE,
    }),
    apply,
    handlers: {
      create: (state, command, { now }) =>
        state.created
          ? { events: [], reply: { ok: true, created: false } }
          : {
              events: [
                {
                  type: 'key_created',
                  merchantId: command.merchantId,
                  environment: command.environment,
                  hash: command.hash,
                  display: command.display,
                  status: command.status,
                  expiresAt: command.expiresAt,
                  at: now,
                },
              ],
              reply: { ok: true, created: true },
            },

      authenticate: (state, command, { now }) => {
        // a rotated-away hash and a deleted key answer exactly like an unknown key
        if (!state.created || !hashesEqual(state.hash, command.hash)) return { events: [], reply: { outcome: 'unauthorized' } };
        const verdict = judgeKey(state, now);
        if (verdict.outcome === 'unauthorized') return { events: [], reply: { outcome: 'unauthorized' } };
        if (verdict.outcome === 'forbidden') return { events: [], reply: { outcome: 'forbidden', status: verdict.status } };
        const rate = decideRate(state.rate, command.bucket, now, policy);
        if (rate.outcome === 'suspended')
          return {
            events: [],
            state: { ...state, rate: rate.state },
            reply: { outcome: 'suspended', retryAfterSeconds: rate.retryAfterSeconds },
          };
        if (rate.outcome === 'limited') {
          const until = rate.state.suspendedUntil;
          const events: ApiKeyEvent[] = rate.suspendedNow && until !== null ? [{ type: 'key_suspended', until, at: now }] : [];
          return {
            events,
            state: { ...state, rate: rate.state },
            reply: { outcome: 'rate_limited', retryAfterSeconds: rate.retryAfterSeconds },
          };
        }
        const due = state.lastUsedJournaledAt === null || now - state.lastUsedJournaledAt >= LAST_USED_JOURNAL_INTERVAL_MS;
        return {
          events: due ? [{ type: 'key_used', at: now }] : [],
          state: { ...state, rate: rate.state, lastUsedAt: now },
          reply: { outcome: 'authenticated', merchantId: state.merchantId, keyId: state.keyId },
        };
      },

      set_status: (state, command, { now }) => change(state, { type: 'status_changed', status: command.status, at: now }),
      set_expiry: (state, command, { now }) => change(state, { type: 'expiry_set', expiresAt: command.expiresAt, at: now }),
      rotate: (state, command, { now }) => change(state, { type: 'key_rotated', hash: command.hash, display: command.display, at: now }),
      delete: (state, _command, { now }) => change(state, { type: 'key_deleted', at: now }),
      set_webhook: (state, command, { now }) => change(state, { type: 'webhook_set', webhook: command.webhook, at: now }),
      set_signing_secret: (state, command, { now }) => change(state, { type: 'signing_secret_set', secret: command.secret, at: now }),

      describe: (state, _command, { now }) => ({ events: [], reply: state.created ? { ok: true, key: keyView(state, now) } : NOT_FOUND }),

      webhook_target: (state) => ({
        events: [],
        reply: state.created
          ? { ok: true, target: { merchantId: state.merchantId, webhook: state.webhook, signingSecret: state.signingSecret } }
          : NOT_FOUND,
      }),
    },
  };
}

/** How a host runs keys: rate-limit windows are volatile, so a snapshot keeps only what events produced. */
export const apiKeyHostPolicy: HostPolicy<ApiKeyState, ApiKeyCommand, ApiKeyEvent> = {
  toSnapshot: (state) => ({
    ...state,
    lastUsedAt: state.lastUsedJournaledAt,
    rate: { ...EMPTY_RATE_STATE, suspendedUntil: state.rate.suspendedUntil },
  }),
};
