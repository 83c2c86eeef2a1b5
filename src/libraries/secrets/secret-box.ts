import { createCipheriv, createDecipheriv, createHash, randomBytes } from 'node:crypto';
import { SecretUnreadableError } from '../errors/internal-errors.js';

/**
 * Secrets at rest (webhook Basic passwords, signing secrets): AES-256-GCM, a random 96-bit IV per value, the id of
 * the key that sealed it stored beside the ciphertext so that keys can rotate (the current key seals, older keys
 * still open), and a context (which key, which field) bound as additional data, so a sealed value copied onto
 * another record does not open.
 */
export interface SealedSecret {
  readonly sealed: 'aes-256-gcm';
  /** Which key sealed it (see secretKeyId). */
  readonly keyId: string;
  /** base64url */
  readonly iv: string;
  /** base64url: the ciphertext followed by the 16-byte authentication tag. */
  readonly data: string;
}

/** What the journal holds: a sealed secret, or a clear string written before secrets were sealed (still read). */
export type StoredSecret = string | SealedSecret;

export function isSealedSecret(value: unknown): value is SealedSecret {
  if (typeof value !== 'object' || value === null) return false;
  const candidate = value as Record<string, unknown>;
  return (
    candidate.sealed === 'aes-256-gcm' &&
    typeof candidate.keyId === 'string' &&
    typeof candidate.iv === 'string' &&
    typeof candidate.data === 'string'
  );
}

export const SECRET_KEY_BYTES = 32;
const IV_BYTES = 12;
const TAG_BYTES = 16;

/** A key's id: a short digest of the key itself, so operators rotate by swapping keys without naming them. */
export function secretKeyId(key: Buffer): string {
  return createHash('sha256').update('sms-gateway secret key id\u0000').update(key).digest('hex').slice(0, 12);
}

/** A key as configured: base64 of exactly 32 bytes. */
export function parseSecretKey(base64: string, what: string): Buffer {
  const key = Buffer.from(base64.trim(), 'base64');
  if (key.length !== SECRET_KEY_BYTES || key.toString('base64') !== base64.trim()) {
    throw new Error(`${what} must be ${SECRET_KEY_BYTES} random bytes in base64 (for example the output of \`openssl rand -base64 32\`)`);
  }
  return key;
}

export interface SecretBox {
  /** The id of the key new values are sealed with. */
  readonly currentKeyId: string;
  seal(plain: string, context: string): SealedSecret;
  /** The clear value: a sealed one opened (SecretUnreadableError when no configured key opens it), a clear one as is. */
  open(stored: StoredSecret, context: string): string;
  /** Whether the value is sealed with the current key (otherwise re-sealing it is due after a rotation). */
  isCurrent(stored: StoredSecret): boolean;
}

export function createSecretBox(
  keys: { readonly current: Buffer; readonly previous?: readonly Buffer[] },
  random: (size: number) => Buffer = randomBytes,
): SecretBox {
  const currentKeyId = secretKeyId(keys.current);
  const byId = new Map<string, Buffer>();
  for (const key of [...(keys.previous ?? []), keys.current]) byId.set(secretKeyId(key), key);

  return {
    currentKeyId,
    seal(plain, context) {
      const iv = random(IV_BYTES);
      const cipher = createCipheriv('aes-256-gcm', keys.current, iv);
      cipher.setAAD(Buffer.from(context, 'utf8'));
      const data = Buffer.concat([cipher.update(plain, 'utf8'), cipher.final(), cipher.getAuthTag()]);
      return { sealed: 'aes-256-gcm', keyId: currentKeyId, iv: iv.toString('base64url'), data: data.toString('base64url') };
    },
    open(stored, context) {
      if (typeof stored === 'string') return stored;
      const key = byId.get(stored.keyId);
      if (!key) {
        throw new SecretUnreadableError(
          `secret sealed with key ${stored.keyId}, which is not configured (SECRETS_KEY / SECRETS_PREVIOUS_KEYS)`,
        );
      }
      const data = Buffer.from(stored.data, 'base64url');
      if (data.length < TAG_BYTES) throw new SecretUnreadableError(`secret sealed with key ${stored.keyId} is truncated`);
      try {
        const decipher = createDecipheriv('aes-256-gcm', key, Buffer.from(stored.iv, 'base64url'));
        decipher.setAAD(Buffer.from(context, 'utf8'));
        decipher.setAuthTag(data.subarray(data.length - TAG_BYTES));
        return Buffer.concat([decipher.update(data.subarray(0, data.length - TAG_BYTES)), decipher.final()]).toString('utf8');
      } catch {
        throw new SecretUnreadableError(`secret sealed with key ${stored.keyId} does not open (altered, or moved from another record)`);
      }
    },
    isCurrent: (stored) => typeof stored !== 'string' && stored.keyId === currentKeyId,
  };
}
