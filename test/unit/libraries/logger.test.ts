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

    logger.info(
      {
        apiKey: KEY,
        password: 'pw1',
        webhook: { url: 'https://x', password: 'pw2' },
        signingSecret: SECRET,
        hash: HASH,
        headers: { authorization: 'Basic abc', 'app-key': KEY },
      },
      'x',
    );

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

  it('when a driver error carries its client, then the line keeps the error (message, code, stack, fields, causes) and drops the client', () => {
    const { logger, lines } = capture();
    // shaped like what pg hands out: the client holds the backend's process id and cancel key, and its socket
    class Client {
      readonly processID = 48_213;
      readonly secretKey = 1_940_583_117;
      readonly connection = { stream: { remoteAddress: '10.0.0.5', bytesRead: 123 } };
    }
    const client = new Client();
    const cause = Object.assign(new Error('read ECONNRESET'), { code: 'ECONNRESET', errno: -104, syscall: 'read' });
    const error = Object.assign(new Error('terminating connection due to administrator command', { cause }), {
      code: '57P01',
      severity: 'FATAL',
      detail: 'the server is shutting down',
      client,
      connection: client.connection,
      socket: { client },
      buffer: Buffer.alloc(64),
      huge: { rows: Array.from({ length: 40 }, (_, i) => ({ i, text: 'x'.repeat(200) })) },
    });

    logger.fatal({ err: error }, 'crashed');

    expect(lines[0]).not.to.include('48213');
    expect(lines[0]).not.to.include('1940583117');
    expect(lines[0]).not.to.include('processID');
    expect(lines[0]).not.to.include('secretKey');
    expect(lines[0]).not.to.include('10.0.0.5');
    const err = (JSON.parse(lines[0]!) as { err: Record<string, unknown> }).err;
    expect(err).to.include({ type: 'Error', name: 'Error', code: '57P01', severity: 'FATAL', detail: 'the server is shutting down' });
    expect(err.stack).to.be.a('string').and.include('logger.test.ts');
    expect(Object.keys(err)).to.not.include.members(['client', 'connection', 'socket', 'buffer', 'huge']);
    expect(err.message).to.equal('terminating connection due to administrator command: read ECONNRESET');
    expect(err.cause).to.deep.include({ message: 'read ECONNRESET', code: 'ECONNRESET', errno: -104, syscall: 'read' });
  });

  it('when an error carries a cycle or an endless chain of causes, then the line is still written, bounded', () => {
    const { logger, lines } = capture();
    const first = new Error('first');
    let last: Error = first;
    for (let i = 0; i < 50; i++) last = new Error(`wrapper ${i}`, { cause: last });
    (first as Error & { cause?: unknown }).cause = last;
    const again: Record<string, unknown> = {};
    const self = { again };
    again.self = self;
    const looped = Object.assign(last, { self });

    logger.error({ err: looped }, 'failed');

    expect(lines).to.have.length(1);
    expect(lines[0]!.length).to.be.below(64_000);
  });

  it('leaves ordinary text alone', () => {
    const text = 'msg_0123456789abcdef0123456789abcdef at 2026-01-01T00:00:00Z, event 4f1c2b9e-8d7a-4c3b-9e2f-1a2b3c4d5e6f';
    expect(scrubSecrets(text)).to.equal(text);
  });
});
