import { randomBytes } from 'node:crypto';
import type { ActorRouter } from '../cluster/actor-router.js';
import { NO_SCOPE, type RequestScope } from '../libraries/actors/request-deadline.js';
import type { Clock, IdGenerator } from '../libraries/clock/clock.js';
import { createExpiringCache } from '../libraries/clock/expiring-cache.js';
import type { GatewayEnvironment } from '../libraries/config/config.js';
import type { Directory } from '../libraries/persistence/directory-port.js';
import { checkKeyFormat, displayKey, generateApiKey, hashApiKey, type KeyStatus } from './api-key.js';
import type { SecretBox } from '../libraries/secrets/secret-box.js';
import {
  secretContext,
  type AuthenticationReply,
  type KeyView,
  type WebhookSettings,
  type WebhookSettingsInput,
} from './api-key-behaviour.js';
import { createFailureLimiter, createNegativeCache } from './authentication-guards.js';
import type { RateBucket } from './rate-limiter.js';

export type Authentication = AuthenticationReply;

/** A well-formed key of this environment found in the directory: whose it is, and the hash its actor checks. */
export interface IdentifiedKey {
  readonly merchantId: string;
  readonly keyId: string;
  readonly hash: string;
}

/** What the receiving node knows of a key before its actor is asked. */
export type Identification =
  | ({ readonly outcome: 'identified' } & IdentifiedKey)
  | { readonly outcome: 'unauthorized' }
  | { readonly outcome: 'rate_limited'; readonly retryAfterSeconds: number };

export interface ApiKeyUseCaseDependencies {
  readonly router: ActorRouter;
  readonly directory: Directory;
  readonly clock: Clock;
  readonly newKeyId: IdGenerator;
  readonly environment: GatewayEnvironment;
  /** How long a hash → key lookup is remembered (rotation and deletion are still enforced by the key's actor). */
  readonly lookupCacheMs: number;
  /** New keys' cleartext (the CSPRNG by default). */
  readonly generateKey?: (environment: GatewayEnvironment) => string;
  /** Seals webhook passwords and signing secrets before they are journaled. */
  readonly secrets: SecretBox;
  /** The guards against floods of unknown keys (see authentication-guards.ts). */
  readonly guards: { readonly negativeCacheMs: number; readonly failuresPerAddress: number; readonly failureWindowMs: number };
}

export interface IssuedKey {
  readonly keyId: string;
  /** Shown once; only its hash is stored. */
  readonly apiKey: string;
  readonly display: string;
}

export function createApiKeyUseCases(deps: ApiKeyUseCaseDependencies) {
  const lookups = createExpiringCache<
    string,
    { readonly keyId: string; readonly merchantId: string; readonly environment: GatewayEnvironment }
  >({
    clock: deps.clock,
    ttlMs: deps.lookupCacheMs,
    max: 10_000,
  });

  const newApiKey = deps.generateKey ?? ((environment: GatewayEnvironment) => generateApiKey(environment));
  const unknownKeys = createNegativeCache({ clock: deps.clock, ttlMs: deps.guards.negativeCacheMs });
  const failures = createFailureLimiter({
    clock: deps.clock,
    limit: deps.guards.failuresPerAddress,
    windowMs: deps.guards.failureWindowMs,
  });

  function cachedLookup(hash: string) {
    return lookups.get(hash) ?? null;
  }

  async function resolve(hash: string) {
    const cached = cachedLookup(hash);
    if (cached) return cached;
    // an unknown key presented again within the TTL costs no lookup
    if (unknownKeys.has(hash)) return null;
    const record = await deps.directory.keyByHash(hash);
    if (!record || record.deletedAt !== null) {
      unknownKeys.remember(hash);
      return null;
    }
    const entry = { keyId: record.keyId, merchantId: record.merchantId, environment: record.environment };
    lookups.set(hash, entry);
    return entry;
  }

  /**
   * The authentication table's first half, on the node that received the request: the key's format, its
   * environment and the merchant it belongs to (a lookup remembered for `lookupCacheMs`). Malformed,
   * wrong-environment and unknown keys answer `unauthorized`. An address that has had its 401s for the window gets
   * `rate_limited` instead, without a lookup, unless this node found its key in the directory within the lookup
   * cache's time (a client with a working key behind the same address keeps working).
   */
  async function identify(header: string | undefined, clientAddress?: string): Promise<Identification> {
    const wellFormed = checkKeyFormat(header, deps.environment).ok && header !== undefined;
    const hash = wellFormed ? hashApiKey(header) : null;
    if (clientAddress !== undefined) {
      const verdict = failures.check(clientAddress);
      if (verdict.limited && (hash === null || !cachedLookup(hash)))
        return { outcome: 'rate_limited', retryAfterSeconds: verdict.retryAfterSeconds };
    }
    if (hash === null) return unauthorized(clientAddress);
    const key = await resolve(hash);
    if (!key || key.environment !== deps.environment) return unauthorized(clientAddress);
    return { outcome: 'identified', merchantId: key.merchantId, keyId: key.keyId, hash };
  }

  /**
   * The second half, by the key's actor (on the node owning the merchant's shard): the hash still current (not
   * rotated or deleted), the status, the expiry, then the rate bucket. Its buckets live in that one actor, so the
   * limits are exact whichever node received the request.
   */
  async function verify(key: IdentifiedKey, bucket: RateBucket, scope: RequestScope = NO_SCOPE): Promise<Authentication> {
    return deps.router.apiKey(key.merchantId, key.keyId).ask({ type: 'authenticate', hash: key.hash, bucket }, { scope });
  }

  /** An `unauthorized` answer from the key's actor counts against the address, as one found here does. */
  function unauthorized(clientAddress: string | undefined): { readonly outcome: 'unauthorized' } {
    if (clientAddress !== undefined) failures.recordFailure(clientAddress);
    return { outcome: 'unauthorized' };
  }

  /** Both halves in this process: the authentication table, then the key's rate bucket. */
  async function authenticate(header: string | undefined, bucket: RateBucket, clientAddress?: string): Promise<Authentication> {
    const identified = await identify(header, clientAddress);
    if (identified.outcome !== 'identified') return identified;
    const reply = await verify(identified, bucket);
    return reply.outcome === 'unauthorized' ? unauthorized(clientAddress) : reply;
  }

  async function issueKey(merchantId: string, options: { status?: KeyStatus; expiresAt?: number | null } = {}): Promise<IssuedKey> {
    const keyId = deps.newKeyId();
    const apiKey = newApiKey(deps.environment);
    const hash = hashApiKey(apiKey);
    const display = displayKey(apiKey);
    await deps.directory.registerKey({
      keyId,
      merchantId,
      environment: deps.environment,
      hash,
      display,
      createdAt: deps.clock.now(),
      deletedAt: null,
    });
    unknownKeys.forget(hash);
    await deps.router.apiKey(merchantId, keyId).ask({
      type: 'create',
      merchantId,
      environment: deps.environment,
      hash,
      display,
      status: options.status ?? 'allowed',
      expiresAt: options.expiresAt ?? null,
    });
    return { keyId, apiKey, display };
  }

  async function keyOwner(keyId: string): Promise<string | null> {
    return (await deps.directory.key(keyId))?.merchantId ?? null;
  }

  async function withKey<T>(keyId: string, action: (merchantId: string) => Promise<T>): Promise<T | null> {
    const merchantId = await keyOwner(keyId);
    return merchantId === null ? null : action(merchantId);
  }

  /** Regenerates the key: the old one stops working at once (no overlap window). */
  async function rotateKey(keyId: string): Promise<IssuedKey | null> {
    return withKey(keyId, async (merchantId) => {
      const apiKey = newApiKey(deps.environment);
      const hash = hashApiKey(apiKey);
      const display = displayKey(apiKey);
      const reply = await deps.router.apiKey(merchantId, keyId).ask({ type: 'rotate', hash, display });
      if (!reply.ok) return null;
      await deps.directory.replaceKeyHash(keyId, hash, display);
      unknownKeys.forget(hash);
      lookups.clear();
      return { keyId, apiKey, display };
    });
  }

  async function setStatus(keyId: string, status: KeyStatus) {
    return withKey(keyId, async (merchantId) => (await deps.router.apiKey(merchantId, keyId).ask({ type: 'set_status', status })).ok);
  }

  async function setExpiry(keyId: string, expiresAt: number | null) {
    return withKey(keyId, async (merchantId) => (await deps.router.apiKey(merchantId, keyId).ask({ type: 'set_expiry', expiresAt })).ok);
  }

  async function deleteKey(keyId: string) {
    return withKey(keyId, async (merchantId) => {
      const reply = await deps.router.apiKey(merchantId, keyId).ask({ type: 'delete' });
      await deps.directory.markKeyDeleted(keyId, deps.clock.now());
      lookups.clear();
      return reply.ok;
    });
  }

  /** The password is sealed here, before the key's actor journals it. */
  function sealedWebhook(keyId: string, webhook: WebhookSettingsInput | null): WebhookSettings | null {
    if (webhook === null) return null;
    return {
      ...webhook,
      password: webhook.password === null ? null : deps.secrets.seal(webhook.password, secretContext.webhookPassword(keyId)),
    };
  }

  async function setWebhook(keyId: string, webhook: WebhookSettingsInput | null) {
    return withKey(
      keyId,
      async (merchantId) =>
        (await deps.router.apiKey(merchantId, keyId).ask({ type: 'set_webhook', webhook: sealedWebhook(keyId, webhook) })).ok,
    );
  }

  /** Opt-in HMAC signing; returns the new secret (shown once; journaled sealed) or null when turned off. */
  async function setSigning(keyId: string, enabled: boolean): Promise<{ secret: string | null } | null> {
    return withKey(keyId, async (merchantId) => {
      const secret = enabled ? `whsec_${randomBytes(24).toString('base64url')}` : null;
      const sealed = secret === null ? null : deps.secrets.seal(secret, secretContext.signingSecret(keyId));
      const reply = await deps.router.apiKey(merchantId, keyId).ask({ type: 'set_signing_secret', secret: sealed });
      return reply.ok ? { secret } : null;
    });
  }

  /**
   * After a key rotation (or over secrets journaled in clear before sealing): every key's webhook password and
   * signing secret not sealed with the current key is journaled again, sealed with it, unchanged for the merchant.
   * Throws SecretUnreadableError when a secret opens with no configured key.
   */
  async function resealSecrets(): Promise<{ readonly keys: number; readonly resealed: number }> {
    let keys = 0;
    let resealed = 0;
    for (const merchant of await deps.directory.merchants()) {
      for (const record of await deps.directory.keys(merchant.id)) {
        if (record.deletedAt !== null) continue;
        keys += 1;
        const actor = deps.router.apiKey(merchant.id, record.keyId);
        const reply = await actor.ask({ type: 'webhook_target' });
        if (!reply.ok) continue;
        const { webhook, signingSecret } = reply.target;
        if (webhook?.password != null && !deps.secrets.isCurrent(webhook.password)) {
          const password = deps.secrets.open(webhook.password, secretContext.webhookPassword(record.keyId));
          if ((await actor.ask({ type: 'set_webhook', webhook: sealedWebhook(record.keyId, { ...webhook, password }) })).ok) resealed += 1;
        }
        if (signingSecret !== null && !deps.secrets.isCurrent(signingSecret)) {
          const context = secretContext.signingSecret(record.keyId);
          const secret = deps.secrets.seal(deps.secrets.open(signingSecret, context), context);
          if ((await actor.ask({ type: 'set_signing_secret', secret })).ok) resealed += 1;
        }
      }
    }
    return { keys, resealed };
  }

  async function listKeys(merchantId: string): Promise<KeyView[]> {
    const records = await deps.directory.keys(merchantId);
    const views: KeyView[] = [];
    for (const record of records) {
      const reply = await deps.router.apiKey(merchantId, record.keyId).ask({ type: 'describe' });
      if (reply.ok) views.push(reply.key);
    }
    return views;
  }

  return {
    identify,
    verify,
    unauthorized,
    authenticate,
    issueKey,
    rotateKey,
    setStatus,
    setExpiry,
    deleteKey,
    setWebhook,
    setSigning,
    resealSecrets,
    listKeys,
  };
}

export type ApiKeyUseCases = ReturnType<typeof createApiKeyUseCases>;
