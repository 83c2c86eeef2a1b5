import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { API_ROOT, startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

const LIMIT = 256 * 1024;
/** What the client would go on sending if nobody stopped it. */
const CAP = 50 * 1024 * 1024;
const CHUNK = Buffer.alloc(16 * 1024, 0x20);

interface RawExchange {
  /** Everything the server sent back. */
  readonly answer: string;
  /** Body bytes the client got written before the server closed the connection. */
  readonly written: number;
  /** The server closed the connection (the client did not stop first). */
  readonly closedByServer: boolean;
}

/** Writes the head, then body bytes from `next` as fast as the socket takes them, until the server closes or CAP. */
function exchange(port: number, head: string, next: () => Buffer): Promise<RawExchange> {
  return new Promise((resolve) => {
    const socket: Socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    let written = 0;
    let closed = false;
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    // a reset after the answer is how a closed connection can look to a client still writing
    socket.on('error', () => undefined);
    socket.on('close', () => {
      closed = true;
      resolve({ answer: Buffer.concat(received).toString('latin1'), written, closedByServer: written < CAP });
    });
    const pump = (): void => {
      while (!closed && written < CAP) {
        const bytes = next();
        written += bytes.length;
        if (!socket.write(bytes)) {
          socket.once('drain', pump);
          return;
        }
      }
      // CAP reached without being stopped: give up (the assertions will say so)
      if (!closed) socket.destroy();
    };
    socket.once('connect', () => {
      socket.write(head);
      pump();
    });
  });
}

function envelopeOf(answer: string): Record<string, unknown> {
  const body = answer.slice(answer.indexOf('\r\n\r\n') + 4);
  return JSON.parse(body) as Record<string, unknown>;
}

describe('HTTP API: a body over the size limit is not read to its end', function () {
  this.timeout(120_000);
  let fixture: ApiFixture;
  let shop: SeededMerchant;
  let port: number;

  before(async () => {
    const url = await (await testPostgres()).createDatabase('oversized_body');
    fixture = await startApi(url);
    shop = await seedMerchant(fixture.node.gateway, { prepaid: '10' });
    port = Number(new URL(fixture.baseUrl).port);
  });
  after(async () => {
    await fixture.stop();
  });

  const headOf = (framing: string): string =>
    `POST ${API_ROOT}/send HTTP/1.1\r\nHost: gateway\r\napp-key: ${shop.apiKey}\r\nContent-Type: application/json\r\n${framing}\r\n\r\n`;

  it('when a chunked body goes past the limit and never ends, then the answer is 413/1110 on body and the server closes the connection', async () => {
    const chunk = Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')]);

    const result = await exchange(port, headOf('Transfer-Encoding: chunked'), () => chunk);

    expect(result.closedByServer, `the client wrote ${result.written} bytes without being stopped`).to.equal(true);
    expect(result.answer).to.match(/^HTTP\/1\.1 413 /);
    expect(result.answer.toLowerCase()).to.include('\r\nconnection: close\r\n');
    const envelope = envelopeOf(result.answer);
    expect(envelope).to.include({ success: false, status_code: 413, error_code: '1110' });
    expect(envelope.details).to.deep.equal([{ field: 'body', message: `must be at most ${LIMIT} bytes`, type: 'body.size' }]);
    // what the server read is bounded by the limit; the rest is what the kernel buffers held when it closed
    expect(result.written).to.be.below(LIMIT + 24 * 1024 * 1024);
  });

  it('when the request is answered before its body is read (unknown key), then an endless chunked body is not read either', async () => {
    const chunk = Buffer.concat([Buffer.from(`${CHUNK.length.toString(16)}\r\n`), CHUNK, Buffer.from('\r\n')]);
    const head = headOf('Transfer-Encoding: chunked').replace(shop.apiKey, `${shop.apiKey.slice(0, -1)}Q`);

    const result = await exchange(port, head, () => chunk);

    expect(result.closedByServer, `the client wrote ${result.written} bytes without being stopped`).to.equal(true);
    expect(result.answer).to.match(/^HTTP\/1\.1 401 /);
  });

  it('when the declared Content-Length is over the limit, then the answer is 413 before any of the body is sent, and the connection closes', async () => {
    // only the head: the answer cannot wait for body bytes
    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(headOf(`Content-Length: ${CAP}`)));
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      socket.on('close', () => {
        resolve(Buffer.concat(received).toString('latin1'));
      });
    });

    expect(answer).to.match(/^HTTP\/1\.1 413 /);
    expect(answer.toLowerCase()).to.include('\r\nconnection: close\r\n');
    expect(envelopeOf(answer)).to.include({ status_code: 413, error_code: '1110' });
  });

  it('when a chunked body within the limit ends, then it is read and judged as usual', async () => {
    const body = Buffer.from(JSON.stringify({ to: ['+243812345678'], message: 'Hello' }));
    const request = `${headOf('Transfer-Encoding: chunked\r\nConnection: close')}${body.length.toString(16)}\r\n${body.toString()}\r\n0\r\n\r\n`;

    const answer = await new Promise<string>((resolve) => {
      const socket = connect(port, '127.0.0.1', () => socket.write(request));
      const received: Buffer[] = [];
      socket.on('data', (chunk: Buffer) => received.push(chunk));
      socket.on('close', () => {
        resolve(Buffer.concat(received).toString('latin1'));
      });
    });

    expect(answer).to.match(/^HTTP\/1\.1 201 /);
  });
});
