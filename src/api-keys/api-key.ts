import { createHash, randomBytes, timingSafeEqual } from 'node:crypto';
import type { GatewayEnvironment } from '../libraries/config/config.js';

export const BASE62 = '0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz';
export const KEY_RANDOM_LENGTH = 32;
export const KEY_PATTERN = /^sk_(test|live)_[0-9A-Za-z]{32}$/;

/** The contract's key statuses (its spelling, `revoqued`, is part of the contract). */
export const KEY_STATUSES = ['allowed', 'pending_validation', 'suspended', 'revoqued', 'locked', 'expired', 'rejected'] as const;
export type KeyStatus = (typeof KEY_STATUSES)[number];

export type KeyEnvironmentTag = 'test' | 'live';

export function tagOfEnvironment(environment: GatewayEnvironment): KeyEnvironmentTag {
  return environment === 'sandbox' ? 'test' : 'live';
}

/** 32 base62 characters from the CSPRNG, without modulo bias (bytes ≥ 248 are redrawn). */
export function generateApiKey(environment: GatewayEnvironment, random: (size: number) => Buffer = randomBytes): string {
  let body = '';
  while (body.length < KEY_RANDOM_LENGTH) {
    for (const byte of random(KEY_RANDOM_LENGTH)) {
      if (byte >= 248) continue;
      body += BASE62.charAt(byte % 62);
      if (body.length === KEY_RANDOM_LENGTH) break;
    }
  }
  return `sk_${tagOfEnvironment(environment)}_${body}`;
}

/** Keys carry ~190 bits of entropy, so a fast hash is the norm: stored and looked up as SHA-256 hex. */
export function hashApiKey(key: string): string {
  return createHash('sha256').update(key, 'utf8').digest('hex');
}

const SHA256_HEX = /^[0-9a-f]{64}$/;

export function hashesEqual(a: string, b: string): boolean {
  if (!SHA256_HEX.test(a) || !SHA256_HEX.test(b)) return false;
  const left = Buffer.from(a, 'hex');
  const right = Buffer.from(b, 'hex');
  return left.length === right.length && timingSafeEqual(left, right);
}

/** What operators see after creation: prefix and last 4, e.g. `sk_test_…9xQa`. */
export function displayKey(key: string): string {
  const match = /^(sk_(?:test|live)_)/.exec(key);
  const prefix = match?.[1] ?? '';
  return `${prefix}…${key.slice(-4)}`;
}

export type KeyFormatCheck = { readonly ok: true } | { readonly ok: false; readonly reason: 'missing' | 'malformed' | 'wrong_environment' };

/**
 * The header checks that need no lookup. Missing/empty, malformed (too short, wrong prefix) and
 * wrong-environment keys all answer the same 401; the reason is only for logs.
 */
export function checkKeyFormat(header: string | undefined, environment: GatewayEnvironment): KeyFormatCheck {
  if (header === undefined || header.trim() === '') return { ok: false, reason: 'missing' };
  const match = KEY_PATTERN.exec(header);
  if (!match) return { ok: false, reason: 'malformed' };
  if (match[1] !== tagOfEnvironment(environment)) return { ok: false, reason: 'wrong_environment' };
  return { ok: true };
}

export interface KeyRecordView {
  readonly status: KeyStatus;
  readonly expiresAt: number | null;
  readonly deletedAt: number | null;
}

export type KeyVerdict =
  | { readonly outcome: 'authenticated' }
  | { readonly outcome: 'unauthorized'; readonly httpStatus: 401 }
  | { readonly outcome: 'forbidden'; readonly httpStatus: 403; readonly status: Exclude<KeyStatus, 'allowed'> };

/**
 * Authentication table: only `allowed` authenticates; a key past its `expires_at` answers as `expired`; a
 * soft-deleted key is unknown (401); every other status is 403.
 */
export function judgeKey(record: KeyRecordView, now: number): KeyVerdict {
  if (record.deletedAt !== null) return { outcome: 'unauthorized', httpStatus: 401 };
  const status = effectiveStatus(record, now);
  if (status === 'allowed') return { outcome: 'authenticated' };
  return { outcome: 'forbidden', httpStatus: 403, status };
}

export function effectiveStatus(record: Pick<KeyRecordView, 'status' | 'expiresAt'>, now: number): KeyStatus {
  if (record.status === 'allowed' && record.expiresAt !== null && record.expiresAt <= now) return 'expired';
  return record.status;
}
