import { expect } from 'chai';
import { createLogger, scrubSecrets } from '../../../src/libraries/logger/logger.js';

const KEY = 'sk_test_0123456789abcdefABCDEF0123456789';
const HASH = 'a'.repeat(24) + '0123456789abcdef0123456789abcdef0123456789'.slice(0, 40);
const SECRET = 'whsec_Zm9vYmFyYmF6cXV4cXV1eA-_';

function capture() {
  const lines: string[] = [];
  const logger = createLogger({ level: 'trace', destination: { write: (line) => lines.push(line) } });
  return { logger, lines };
}

describe('logger: secrets never reach a line', () => {
  it('when a secret field is logged by name, then it is censored', () => {
    const { logger, lines } = capture();

    logger.info({ apiKey: KEY, password: 'pw1', webhook: { url: 'https://x', password: 'pw2' }, signingSecret: SECRET, hash: HASH, headers: { authorization: 'Basic abc', 'app-key': KEY } }, 'x');

    const line = JSON.parse(lines[0]!) as Record<string, unknown>;
    expect(line).to.include({ apiKey: '[redacted]', password: '[redacted]', signingSecret: '[redacted]', hash: '[redacted]' });
    expect(line.webhook).to.deep.equal({ url: 'https://x', password: '[redacted]' });
    expect(line.headers).to.deep.equal({ authorization: '[redacted]', 'app-key': '[redacted]' });
  });

  it('when an error quotes a key, a hash, a secret or credentials, then its serialized form is scrubbed everywhere', () => {
    const { logger, lines } = capture();
    const error = Object.assign(new Error(`bad ${KEY} for https://user:pa55@example.com/hook`), {
      detail: `Key (hash)=(${HASH})`,
      nested: { header: 'Basic dXNlcjpwYTU1', secret: SECRET },
    });

    logger.error({ err: error }, 'failed');

    expect(lines[0]).not.to.include(KEY);
    expect(lines[0]).not.to.include(HASH);
    expect(lines[0]).not.to.include(SECRET);
    expect(lines[0]).not.to.include('pa55');
    expect(lines[0]).not.to.include('dXNlcjpwYTU1');
    const err = (JSON.parse(lines[0]!) as { err: Record<string, unknown> }).err;
    expect(err.message).to.equal('bad sk_test_[redacted] for https://[redacted]@example.com/hook');
    expect(err.detail).to.equal('Key (hash)=([redacted-hash])');
  });

  it('leaves ordinary text alone', () => {
    const text = 'msg_0123456789abcdef0123456789abcdef at 2026-01-01T00:00:00Z, event 4f1c2b9e-8d7a-4c3b-9e2f-1a2b3c4d5e6f';
    expect(scrubSecrets(text)).to.equal(text);
  });
});
