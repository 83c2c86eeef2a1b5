import { randomBytes } from 'node:crypto';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { Clock, IdGenerator } from '../libraries/clock/clock.js';
import type { GatewayEnvironment } from '../libraries/config/config.js';
import type { Directory } from '../libraries/persistence/directory-port.js';
import { checkKeyFormat, displayKey, generateApiKey, hashApiKey, type KeyStatus } from './api-key.js';
import type { AuthenticationReply, KeyView, WebhookSettings } from './api-key-behaviour.js';
import type { RateBucket } from './rate-limiter.js';

export type Authentication = AuthenticationReply;

export interface ApiKeyUseCaseDependencies {
  readonly router: ActorRouter;
  readonly directory: Directory;
  readonly clock: Clock;
  readonly newKeyId: IdGenerator;
  readonly environment: GatewayEnvironment;
  /** How long a hash → key lookup is remembered (rotation and deletion are still enforced by the key's actor). */
  readonly lookupCacheMs: number;
}

export interface IssuedKey {
  readonly keyId: string;
  /** Shown once; only its hash is stored. */
  readonly apiKey: string;
  readonly display: string;
}

export function createApiKeyUseCases(deps: ApiKeyUseCaseDependencies) {
  const lookups = new Map<string, { keyId: string; merchantId: string; environment: GatewayEnvironment; at: number }>();
  const MAX_CACHED = 10_000;

  async function resolve(hash: string) {
    const cached = lookups.get(hash);
    if (cached && deps.clock.now() - cached.at < deps.lookupCacheMs) return cached;
    const record = await deps.directory.keyByHash(hash);
    if (!record || record.deletedAt !== null) return null;
    const entry = { keyId: record.keyId, merchantId: record.merchantId, environment: record.environment, at: deps.clock.now() };
    if (lookups.size >= MAX_CACHED) lookups.clear();
    lookups.set(hash, entry);
    return entry;
  }

  /**
   * The authentication table, then the key's rate bucket. Malformed, wrong-environment and unknown keys all
   * answer `unauthorized`.
   */
  async function authenticate(header: string | undefined, bucket: RateBucket): Promise<Authentication> {
    if (!checkKeyFormat(header, deps.environment).ok || header === undefined) return { outcome: 'unauthorized' };
    const hash = hashApiKey(header);
    const key = await resolve(hash);
    if (!key || key.environment !== deps.environment) return { outcome: 'unauthorized' };
    return deps.router.apiKey(key.merchantId, key.keyId).ask({ type: 'authenticate', hash, bucket });
  }

  async function issueKey(merchantId: string, options: { status?: KeyStatus; expiresAt?: number | null } = {}): Promise<IssuedKey> {
    const keyId = deps.newKeyId();
    const apiKey = generateApiKey(deps.environment);
    const hash = hashApiKey(apiKey);
    const display = displayKey(apiKey);
    await deps.directory.registerKey({ keyId, merchantId, environment: deps.environment, hash, display, createdAt: deps.clock.now(), deletedAt: null });
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
      const apiKey = generateApiKey(deps.environment);
      const hash = hashApiKey(apiKey);
      const display = displayKey(apiKey);
      const reply = await deps.router.apiKey(merchantId, keyId).ask({ type: 'rotate', hash, display });
      if (!reply.ok) return null;
      await deps.directory.replaceKeyHash(keyId, hash, display);
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

  async function setWebhook(keyId: string, webhook: WebhookSettings | null) {
    return withKey(keyId, async (merchantId) => (await deps.router.apiKey(merchantId, keyId).ask({ type: 'set_webhook', webhook })).ok);
  }

  /** Opt-in HMAC signing; returns the new secret (shown once) or null when turned off. */
  async function setSigning(keyId: string, enabled: boolean): Promise<{ secret: string | null } | null> {
    return withKey(keyId, async (merchantId) => {
      const secret = enabled ? `whsec_${randomBytes(24).toString('base64url')}` : null;
      const reply = await deps.router.apiKey(merchantId, keyId).ask({ type: 'set_signing_secret', secret });
      return reply.ok ? { secret } : null;
    });
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

  return { authenticate, issueKey, rotateKey, setStatus, setExpiry, deleteKey, setWebhook, setSigning, listKeys };
}

export type ApiKeyUseCases = ReturnType<typeof createApiKeyUseCases>;
