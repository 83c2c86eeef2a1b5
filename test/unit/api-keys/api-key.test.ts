import { createHash } from 'node:crypto';
import { expect } from 'chai';
import sinon from 'sinon';
import {
  BASE62,
  KEY_PATTERN,
  KEY_STATUSES,
  checkKeyFormat,
  displayKey,
  effectiveStatus,
  generateApiKey,
  hashApiKey,
  hashesEqual,
  judgeKey,
  type KeyFormatCheck,
  type KeyRecordView,
  type KeyStatus,
} from '../../../src/api-keys/api-key.js';
import type { GatewayEnvironment } from '../../../src/libraries/config/config.js';

const BODY_32 = 'aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY'; // 32 base62 characters
const NOW = Date.UTC(2025, 0, 15, 12, 0, 0);

describe('api keys', () => {
  describe('generateApiKey', () => {
    it('when 1000 keys are generated, then all match sk_test_ + 32 base62 characters and are distinct', () => {
      const keys = Array.from({ length: 1000 }, () => generateApiKey('sandbox'));

      for (const key of keys) {
        expect(key).to.match(/^sk_test_[0-9A-Za-z]{32}$/);
        expect(key).to.match(KEY_PATTERN);
        expect(key).to.have.length(40);
      }
      expect(new Set(keys).size).to.equal(1000);
    });

    it('when generated for the sandbox, then the key starts with sk_test_', () => {
      const key = generateApiKey('sandbox', () => Buffer.alloc(32, 10));

      expect(key).to.equal(`sk_test_${'A'.repeat(32)}`);
    });

    it('when generated for production, then the key starts with sk_live_', () => {
      const key = generateApiKey('production', () => Buffer.alloc(32, 10));

      expect(key).to.equal(`sk_live_${'A'.repeat(32)}`);
      expect(generateApiKey('production')).to.match(/^sk_live_[0-9A-Za-z]{32}$/);
    });

    it('when the random source first yields only bytes >= 248, then they are all redrawn and only the later valid bytes are used', () => {
      const random = sinon.stub<[number], Buffer>();
      random.onCall(0).returns(Buffer.from(Array.from({ length: 32 }, (_, i) => 248 + (i % 8))));
      random.onCall(1).returns(Buffer.from(Array.from({ length: 32 }, (_, i) => i)));

      const key = generateApiKey('sandbox', random);

      expect(key).to.equal(`sk_test_${BASE62.slice(0, 32)}`);
      expect(random.callCount).to.equal(2);
      expect(random.alwaysCalledWithExactly(32)).to.equal(true);
    });

    it('when bytes >= 248 are interleaved with valid ones, then only the valid ones become characters, in order', () => {
      // 247 is the largest accepted byte (247 % 62 = 61 → 'z'); 248 would alias '0'
      const first = [248, 0, 255, 61, 249, 62, 247, 250, 123, 251, 252, 253, 254, 1];
      const random = sinon.stub<[number], Buffer>();
      random.onCall(0).returns(Buffer.from(first));
      random.onCall(1).returns(Buffer.alloc(32, 35)); // 'Z'

      const key = generateApiKey('production', random);

      // accepted from the first draw: 0→'0', 61→'z', 62→'0', 247→'z', 123→'z', 1→'1'
      expect(key).to.equal(`sk_live_0z0zz1${'Z'.repeat(26)}`);
      expect(random.callCount).to.equal(2);
    });

    it('when every byte value is tried, then the 248 accepted ones map to each of the 62 characters exactly 4 times (no modulo bias)', () => {
      const counts = new Map<string, number>();
      const redrawn: number[] = [];

      for (let byte = 0; byte <= 255; byte += 1) {
        const random = sinon.stub<[number], Buffer>();
        random.onCall(0).returns(Buffer.alloc(32, byte));
        random.onCall(1).returns(Buffer.alloc(32, 0));
        const body = generateApiKey('sandbox', random).slice('sk_test_'.length);
        if (random.callCount === 2) {
          redrawn.push(byte);
          expect(body).to.equal('0'.repeat(32));
          continue;
        }
        expect(body).to.equal(body.charAt(0).repeat(32));
        counts.set(body.charAt(0), (counts.get(body.charAt(0)) ?? 0) + 1);
      }

      expect(redrawn).to.deep.equal([248, 249, 250, 251, 252, 253, 254, 255]);
      expect(counts.size).to.equal(62);
      expect([...counts.values()].every((n) => n === 4)).to.equal(true);
    });
  });

  describe('hashApiKey', () => {
    it('when a key is hashed, then the result is its SHA-256 as 64 lowercase hex characters, stable across calls', () => {
      const key = `sk_test_${BODY_32}`;

      const hash = hashApiKey(key);

      expect(hash).to.match(/^[0-9a-f]{64}$/);
      expect(hash).to.equal(createHash('sha256').update(key, 'utf8').digest('hex'));
      expect(hashApiKey(key)).to.equal(hash);
    });

    it('when two keys differ by one character, then their hashes differ', () => {
      expect(hashApiKey(`sk_test_${BODY_32}`)).to.not.equal(hashApiKey(`sk_live_${BODY_32}`));
    });

    it('when the empty string is hashed, then the known SHA-256 vector comes out', () => {
      expect(hashApiKey('')).to.equal('e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855');
    });
  });

  describe('hashesEqual', () => {
    const hash = hashApiKey(`sk_test_${BODY_32}`);

    it('when both hashes are the same, then they are equal', () => {
      expect(hashesEqual(hash, hashApiKey(`sk_test_${BODY_32}`))).to.equal(true);
    });

    it('when the hashes differ in the last hex digit, then they are not equal', () => {
      const last = hash.slice(-1) === '0' ? '1' : '0';

      expect(hashesEqual(hash, hash.slice(0, -1) + last)).to.equal(false);
    });

    it('when the hashes have different lengths, then they are not equal (and nothing throws)', () => {
      expect(hashesEqual(hash, hash.slice(0, 62))).to.equal(false);
      expect(hashesEqual(hash.slice(0, 62), hash)).to.equal(false);
      expect(hashesEqual(hash, '')).to.equal(false);
    });

    it('when either side is not 64 lowercase hex digits, then they are not equal even if their bytes would match', () => {
      expect(hashesEqual('', '')).to.equal(false);
      expect(hashesEqual('abc', 'abd')).to.equal(false);
      expect(hashesEqual(hash.toUpperCase(), hash)).to.equal(false);
      expect(hashesEqual(hash + 'z', hash + 'y')).to.equal(false);
    });
  });

  describe('displayKey', () => {
    it('when a test key is displayed, then only the prefix, an ellipsis and the last 4 characters show', () => {
      expect(displayKey(`sk_test_${BODY_32}`)).to.equal('sk_test_…W0xY');
    });

    it('when a live key is displayed, then it keeps the sk_live_ prefix', () => {
      expect(displayKey('sk_live_00000000000000000000000000009xQa')).to.equal('sk_live_…9xQa');
    });
  });

  describe('checkKeyFormat', () => {
    const rows: readonly {
      readonly name: string;
      readonly header: string | undefined;
      readonly environment: GatewayEnvironment;
      readonly expected: KeyFormatCheck;
    }[] = [
      { name: 'absent header', header: undefined, environment: 'sandbox', expected: { ok: false, reason: 'missing' } },
      { name: 'empty header', header: '', environment: 'sandbox', expected: { ok: false, reason: 'missing' } },
      { name: 'blank header', header: '   ', environment: 'production', expected: { ok: false, reason: 'missing' } },
      {
        name: 'sk_test_ + 31 characters (too short)',
        header: `sk_test_${BODY_32.slice(0, 31)}`,
        environment: 'sandbox',
        expected: { ok: false, reason: 'malformed' },
      },
      {
        name: 'sk_test_ + 33 characters (too long)',
        header: `sk_test_${BODY_32}a`,
        environment: 'sandbox',
        expected: { ok: false, reason: 'malformed' },
      },
      { name: 'prefix alone', header: 'sk_test_', environment: 'sandbox', expected: { ok: false, reason: 'malformed' } },
      { name: 'wrong prefix pk_test_', header: `pk_test_${BODY_32}`, environment: 'sandbox', expected: { ok: false, reason: 'malformed' } },
      {
        name: 'unknown environment tag sk_prod_',
        header: `sk_prod_${BODY_32}`,
        environment: 'production',
        expected: { ok: false, reason: 'malformed' },
      },
      {
        name: 'non-base62 character',
        header: `sk_test_${BODY_32.slice(0, 31)}-`,
        environment: 'sandbox',
        expected: { ok: false, reason: 'malformed' },
      },
      {
        name: 'surrounding whitespace',
        header: ` sk_test_${BODY_32}`,
        environment: 'sandbox',
        expected: { ok: false, reason: 'malformed' },
      },
      {
        name: 'live key in the sandbox',
        header: `sk_live_${BODY_32}`,
        environment: 'sandbox',
        expected: { ok: false, reason: 'wrong_environment' },
      },
      {
        name: 'test key in production',
        header: `sk_test_${BODY_32}`,
        environment: 'production',
        expected: { ok: false, reason: 'wrong_environment' },
      },
      { name: 'valid test key in the sandbox', header: `sk_test_${BODY_32}`, environment: 'sandbox', expected: { ok: true } },
      { name: 'valid live key in production', header: `sk_live_${BODY_32}`, environment: 'production', expected: { ok: true } },
    ];

    for (const row of rows) {
      it(`when the header is a ${row.name} (${row.environment}), then the check answers ${row.expected.ok ? 'ok' : row.expected.reason}`, () => {
        expect(checkKeyFormat(row.header, row.environment)).to.deep.equal(row.expected);
      });
    }

    it('when a freshly generated key is checked in its own environment, then it passes', () => {
      expect(checkKeyFormat(generateApiKey('sandbox'), 'sandbox')).to.deep.equal({ ok: true });
      expect(checkKeyFormat(generateApiKey('production'), 'production')).to.deep.equal({ ok: true });
    });
  });

  describe('judgeKey', () => {
    const record = (status: KeyStatus, overrides: Partial<KeyRecordView> = {}): KeyRecordView => ({
      status,
      expiresAt: null,
      deletedAt: null,
      ...overrides,
    });
    const forbiddenStatuses = KEY_STATUSES.filter((s): s is Exclude<KeyStatus, 'allowed'> => s !== 'allowed');

    it('when the key is allowed and has no expiry, then it authenticates', () => {
      expect(judgeKey(record('allowed'), NOW)).to.deep.equal({ outcome: 'authenticated' });
    });

    it('lists exactly the contract statuses', () => {
      expect(KEY_STATUSES).to.deep.equal(['allowed', 'pending_validation', 'suspended', 'revoqued', 'locked', 'expired', 'rejected']);
    });

    for (const status of forbiddenStatuses) {
      it(`when the key status is ${status}, then it is forbidden with 403 and that status`, () => {
        expect(judgeKey(record(status), NOW)).to.deep.equal({ outcome: 'forbidden', httpStatus: 403, status });
      });
    }

    it('when an allowed key expires exactly now, then it answers 403 expired', () => {
      expect(judgeKey(record('allowed', { expiresAt: NOW }), NOW)).to.deep.equal({
        outcome: 'forbidden',
        httpStatus: 403,
        status: 'expired',
      });
      expect(effectiveStatus({ status: 'allowed', expiresAt: NOW }, NOW)).to.equal('expired');
    });

    it('when an allowed key expired 1 ms ago, then it answers 403 expired', () => {
      expect(judgeKey(record('allowed', { expiresAt: NOW - 1 }), NOW)).to.deep.equal({
        outcome: 'forbidden',
        httpStatus: 403,
        status: 'expired',
      });
    });

    it('when an allowed key expires 1 ms from now, then it still authenticates', () => {
      expect(judgeKey(record('allowed', { expiresAt: NOW + 1 }), NOW)).to.deep.equal({ outcome: 'authenticated' });
      expect(effectiveStatus({ status: 'allowed', expiresAt: NOW + 1 }, NOW)).to.equal('allowed');
    });

    it('when a non-allowed key is also past its expiry, then it keeps answering 403', () => {
      expect(judgeKey(record('suspended', { expiresAt: NOW - 1 }), NOW)).to.deep.include({ outcome: 'forbidden', httpStatus: 403 });
    });

    for (const status of KEY_STATUSES) {
      it(`when a key with status ${status} is soft-deleted, then it answers 401 like an unknown key`, () => {
        expect(judgeKey(record(status, { deletedAt: NOW - 1000 }), NOW)).to.deep.equal({ outcome: 'unauthorized', httpStatus: 401 });
      });
    }

    it('when a soft-deleted key is also expired, then it still answers 401 rather than 403', () => {
      expect(judgeKey(record('allowed', { deletedAt: NOW, expiresAt: NOW - 1 }), NOW)).to.deep.equal({
        outcome: 'unauthorized',
        httpStatus: 401,
      });
    });
  });
});
