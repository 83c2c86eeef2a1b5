import { expect } from 'chai';
import { readFileSync, statSync } from 'node:fs';
import path from 'node:path';
import { createSecretBox, isSealedSecret, secretKeyId } from '../../../../src/libraries/secrets/secret-box.js';
import { EMBEDDED_KEY_FILE, embeddedSecretKey, secretBoxOf } from '../../../../src/libraries/secrets/secret-keys.js';
import { loadConfig } from '../../../../src/libraries/config/config.js';
import { SecretUnreadableError } from '../../../../src/libraries/errors/internal-errors.js';
import { removeTemporaryDir, temporaryDir } from '../../../helpers/temporary-dirs.js';

const OLD = Buffer.alloc(32, 1);
const NEW = Buffer.alloc(32, 2);
const CONTEXT = 'apikey:key_1:webhook_password';

describe('secret box', () => {
  it('when a secret is sealed, then the sealed value holds neither the secret nor a fixed IV, names its key and opens to the secret', () => {
    const box = createSecretBox({ current: NEW });
    const first = box.seal('hunter2-password', CONTEXT);
    const second = box.seal('hunter2-password', CONTEXT);
    expect(JSON.stringify(first)).to.not.include('hunter2');
    expect(first.keyId).to.equal(secretKeyId(NEW)).and.to.equal(box.currentKeyId);
    expect(Buffer.from(first.iv, 'base64url')).to.have.length(12);
    expect(first.iv, 'a random IV per value').to.not.equal(second.iv);
    expect(first.data).to.not.equal(second.data);
    expect(isSealedSecret(first)).to.equal(true);
    expect(box.open(first, CONTEXT)).to.equal('hunter2-password');
  });

  it('when a value was journaled in clear before sealing, then it is read as it is and is not current', () => {
    const box = createSecretBox({ current: NEW });
    expect(box.open('legacy-clear', CONTEXT)).to.equal('legacy-clear');
    expect(box.isCurrent('legacy-clear')).to.equal(false);
  });

  it('when the key rotates, then the old key still opens what it sealed, new values are sealed with the new key, and without the old key they do not open', () => {
    const before = createSecretBox({ current: OLD }).seal('s3cret', CONTEXT);
    const rotated = createSecretBox({ current: NEW, previous: [OLD] });
    expect(rotated.open(before, CONTEXT)).to.equal('s3cret');
    expect(rotated.isCurrent(before)).to.equal(false);
    const after = rotated.seal('s3cret', CONTEXT);
    expect(after.keyId).to.equal(secretKeyId(NEW));
    expect(rotated.isCurrent(after)).to.equal(true);
    expect(() => createSecretBox({ current: NEW }).open(before, CONTEXT)).to.throw(
      SecretUnreadableError,
      new RegExp(`key ${secretKeyId(OLD)}.*not configured`),
    );
  });

  it('when the key is wrong, the value altered or moved to another record, then opening fails with SecretUnreadableError', () => {
    const box = createSecretBox({ current: NEW });
    const sealed = box.seal('s3cret', CONTEXT);
    const impostor = { ...sealed };
    // a different key that claims the same id
    const wrong = createSecretBox({ current: OLD });
    expect(() => wrong.open({ ...impostor, keyId: wrong.currentKeyId }, CONTEXT)).to.throw(SecretUnreadableError, /does not open/);
    const flipped = Buffer.from(sealed.data, 'base64url');
    flipped[0] = (flipped[0] ?? 0) ^ 1;
    expect(() => box.open({ ...sealed, data: flipped.toString('base64url') }, CONTEXT)).to.throw(SecretUnreadableError);
    expect(() => box.open(sealed, 'apikey:key_2:webhook_password')).to.throw(SecretUnreadableError, /another record/);
    expect(() => box.open({ ...sealed, data: 'AA' }, CONTEXT)).to.throw(SecretUnreadableError, /truncated/);
  });
});

describe('secret keys from the configuration', () => {
  let dir = '';
  beforeEach(() => {
    dir = temporaryDir('gw-secrets-');
  });
  afterEach(() => {
    removeTemporaryDir(dir);
  });

  it('when embedded mode has no SECRETS_KEY, then it makes its own key file (mode 0600) on first start and keeps using it', () => {
    const dataDir = path.join(dir, 'data');
    const config = loadConfig({ env: { DATA_DIR: dataDir } });
    const sealed = secretBoxOf(config).seal('kept', CONTEXT);
    const file = path.join(dataDir, EMBEDDED_KEY_FILE);
    expect(statSync(file).mode & 0o777).to.equal(0o600);
    expect(Buffer.from(readFileSync(file, 'utf8').trim(), 'base64')).to.have.length(32);
    // a restart reads the same key
    expect(secretBoxOf(config).open(sealed, CONTEXT)).to.equal('kept');
    expect(embeddedSecretKey(dataDir).equals(embeddedSecretKey(dataDir))).to.equal(true);
  });

  it('when SECRETS_KEY is set, then it seals and SECRETS_PREVIOUS_KEYS open', () => {
    const old = Buffer.alloc(32, 9).toString('base64');
    const current = Buffer.alloc(32, 8).toString('base64');
    const sealedBefore = secretBoxOf(loadConfig({ env: { GATEWAY_MODE: 'server', SECRETS_KEY: old } })).seal('x', CONTEXT);
    const box = secretBoxOf(loadConfig({ env: { GATEWAY_MODE: 'server', SECRETS_KEY: current, SECRETS_PREVIOUS_KEYS: old } }));
    expect(box.currentKeyId).to.equal(secretKeyId(Buffer.alloc(32, 8)));
    expect(box.open(sealedBefore, CONTEXT)).to.equal('x');
  });
});
