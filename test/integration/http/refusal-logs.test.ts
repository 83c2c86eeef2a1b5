import { expect } from 'chai';
import { connect } from 'node:net';
import { createLogger } from '../../../src/libraries/logger/logger.js';
import { dataOf, expectFieldError, NUMBERS, requestIdOf, type BalanceData, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { call, startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

type LogLine = Record<string, unknown> & { readonly msg?: string };

/** Sends `request` as is over a raw socket; resolves with everything the server sent before closing. */
function rawExchange(port: number, request: Buffer | string): Promise<string> {
  return new Promise((resolve, reject) => {
    const socket = connect(port, '127.0.0.1');
    const received: Buffer[] = [];
    socket.on('data', (chunk: Buffer) => received.push(chunk));
    // a reset once the answer is out is how a refused connection can end for a client still writing
    socket.on('error', (error: NodeJS.ErrnoException) => {
      if (received.length > 0) resolve(Buffer.concat(received).toString('utf8'));
      else reject(error);
    });
    socket.on('close', () => {
      resolve(Buffer.concat(received).toString('utf8'));
    });
    socket.once('connect', () => socket.write(request));
  });
}

function parseAnswer(answer: string): { status: number; headers: Record<string, string>; body: Record<string, unknown> } {
  const [head = '', body = ''] = answer.split('\r\n\r\n', 2);
  const [statusLine = '', ...headerLines] = head.split('\r\n');
  const headers = Object.fromEntries(
    headerLines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
  );
  return { status: Number(statusLine.split(' ')[1]), headers, body: JSON.parse(body) as Record<string, unknown> };
}

describe('HTTP API: refusals before a route (parser, body) are logged like any request, and bodies must be UTF-8', function () {
  this.timeout(60_000);
  const raw: string[] = [];
  let fixture: ApiFixture;
  let shop: SeededMerchant;
  let port: number;

  const lines = (): LogLine[] => raw.map((line) => JSON.parse(line) as LogLine);
  const requestLine = (requestId: string): LogLine | undefined =>
    lines().find((line) => line.msg === 'request' && line.request_id === requestId);
  const messageIds = async (): Promise<string[]> => {
    const rows = await fixture.node.gateway.persistence.sql!.query<{ message_id: string }>(
      'SELECT message_id FROM message_owners WHERE merchant_id = $1 ORDER BY message_id',
      [shop.merchantId],
    );
    return rows.map((row) => row.message_id);
  };
  const balance = async (): Promise<BalanceData> => dataOf<BalanceData>(await call(`${fixture.api}/balance`, { key: shop.apiKey }));
  const sendRaw = (body: Uint8Array | string, headers: Record<string, string> = {}) =>
    call(`${fixture.api}/send`, {
      method: 'POST',
      key: shop.apiKey,
      headers: { 'content-type': 'application/json', ...headers },
      raw: body,
    });

  before(async () => {
    const logger = createLogger({ level: 'info', destination: { write: (line) => raw.push(line) } });
    const url = await (await testPostgres()).createDatabase('refusal_logs');
    fixture = await startApi(url, { logger });
    shop = await seedMerchant(fixture.node.gateway, { prepaid: '10' });
    port = Number(new URL(fixture.baseUrl).port);
  });
  after(async () => {
    await fixture.stop();
  });

  describe('headers Node refuses before Express sees the request', () => {
    it('when a request carries 20 KB of headers, then it is answered 431 with the envelope and one line names the peer, the parser code and the status, never a header', async () => {
      const marker = 'hdr-marker-never-logged';
      const filler = Array.from({ length: 40 }, (_, i) => `x-filler-${i}: ${marker}-${'f'.repeat(500)}`).join('\r\n');
      const head = `GET ${new URL(fixture.api).pathname}/balance HTTP/1.1\r\nHost: gateway\r\napp-key: ${shop.apiKey}\r\n${filler}\r\n\r\n`;
      expect(head.length).to.be.above(20_000);

      const answer = parseAnswer(await rawExchange(port, head));

      expect(answer.status).to.equal(431);
      expect(answer.body).to.deep.include({ success: false, status_code: 431, error_code: '1110' });
      const requestId = String(answer.body.request_id);
      expect(answer.headers['x-request-id']).to.equal(requestId);
      const logged = lines().filter((line) => line.request_id === requestId);
      expect(logged).to.have.length(1);
      expect(logged[0]).to.deep.include({
        level: 30,
        msg: 'request refused by the HTTP parser',
        parser_code: 'HPE_HEADER_OVERFLOW',
        status: 431,
        error_code: '1110',
        remote_address: '127.0.0.1',
      });
      const text = raw.join('\n');
      expect(text).not.to.include(marker);
      expect(text).not.to.include(shop.apiKey);
    });

    it('when the request line is not HTTP, then it is answered 400 and its line gives the parser code', async () => {
      const answer = parseAnswer(await rawExchange(port, 'HELLO THERE\r\n\r\n'));

      expect(answer.status).to.equal(400);
      const logged = lines().find((line) => line.request_id === answer.body.request_id);
      expect(logged).to.deep.include({ msg: 'request refused by the HTTP parser', status: 400, remote_address: '127.0.0.1' });
      expect(logged?.parser_code).to.be.a('string').and.match(/^HPE_/);
    });
  });

  describe('bodies body-parser refuses', () => {
    it('when the JSON is malformed, then it is 400/1110 on body and its request line has method, path, status, error code and duration, and nothing of the body', async () => {
      const result = await sendRaw('{"to": ["+243812345678"], "message": "body-marker-never-logged",');

      expect(expectFieldError(result, 'body')).to.deep.equal([
        { field: 'body', message: 'must be a well-formed JSON object or array', type: 'body.json' },
      ]);
      const line = requestLine(requestIdOf(result));
      expect(line).to.deep.include({
        level: 30,
        method: 'POST',
        path: `${new URL(fixture.api).pathname}/send`,
        route: 'send',
        status: 400,
        error_code: '1110',
        merchant_id: shop.merchantId,
      });
      expect(line?.duration_ms).to.be.a('number');
      expect(raw.join('\n')).not.to.include('body-marker-never-logged');
    });

    it('when the body is declared over the limit, then its request line says 413 and 1110', async () => {
      const result = await sendRaw(`{"message": "${'x'.repeat(300 * 1024)}"}`);

      expect(result.status).to.equal(413);
      expect(requestLine(requestIdOf(result))).to.deep.include({ method: 'POST', route: 'send', status: 413, error_code: '1110' });
    });

    it('when the charset is not UTF-8, then it is 415/1110 on body and its request line says so', async () => {
      const result = await sendRaw(Buffer.from(JSON.stringify({ to: [NUMBERS.vodacom], message: 'hi' }), 'utf16le'), {
        'content-type': 'application/json; charset=utf-16le',
      });

      expect(expectFieldError(result, 'body', 415)).to.deep.equal([{ field: 'body', message: 'must be UTF-8 JSON', type: 'body.charset' }]);
      expect(requestLine(requestIdOf(result))).to.deep.include({ status: 415, error_code: '1110' });
    });

    it('when a request has a query string, then its line shows the path without it', async () => {
      const result = await call(`${fixture.api}/balance?token=query-marker-never-logged`, { key: shop.apiKey });

      expect(requestLine(requestIdOf(result))).to.deep.include({ path: `${new URL(fixture.api).pathname}/balance`, status: 200 });
      expect(requestLine(requestIdOf(result))).not.to.have.property('error_code');
      expect(raw.join('\n')).not.to.include('query-marker-never-logged');
    });
  });

  describe('invalid UTF-8 in a JSON body', () => {
    const jsonWith = (bytes: readonly number[]): Buffer =>
      Buffer.concat([Buffer.from(`{"to": ["${NUMBERS.vodacom}"], "message": "caf`), Buffer.from(bytes), Buffer.from('"}')]);

    for (const [label, bytes] of [
      ['0xC3 0x28 (a lead byte without its continuation)', [0xc3, 0x28]],
      ['a lone continuation byte 0x80', [0x80]],
      ['an overlong encoding of "/" (0xC0 0xAF)', [0xc0, 0xaf]],
      ['an encoded UTF-16 surrogate (0xED 0xA0 0x80)', [0xed, 0xa0, 0x80]],
      ['a truncated 4-byte sequence (0xF0 0x9F 0x98)', [0xf0, 0x9f, 0x98]],
    ] as const) {
      it(`when the message holds ${label}, then it is 400/1110 on body, and no message is created and nothing is charged`, async () => {
        const before = { balance: await balance(), messages: await messageIds() };

        const result = await sendRaw(jsonWith(bytes));

        expect(expectFieldError(result, 'body')).to.deep.equal([{ field: 'body', message: 'must be valid UTF-8', type: 'body.utf8' }]);
        expect(requestLine(requestIdOf(result))).to.deep.include({ route: 'send', status: 400, error_code: '1110' });
        expect(await balance()).to.deep.equal(before.balance);
        expect(await messageIds()).to.deep.equal(before.messages);
      });
    }

    it('when the invalid bytes arrive gzip-compressed, then they are refused the same way', async () => {
      const { gzipSync } = await import('node:zlib');
      const before = await messageIds();

      const result = await sendRaw(gzipSync(jsonWith([0xc3, 0x28])), { 'content-encoding': 'gzip' });

      expect(expectFieldError(result, 'body')).to.deep.equal([{ field: 'body', message: 'must be valid UTF-8', type: 'body.utf8' }]);
      expect(await messageIds()).to.deep.equal(before);
    });

    it('when the message holds valid UTF-8 (a 4-byte emoji, accents), then it is sent and stored exactly, with no replacement character', async () => {
      const before = await messageIds();
      const text = 'café 😀 ok';

      const result = await sendRaw(Buffer.from(JSON.stringify({ to: [NUMBERS.vodacom], message: text }), 'utf8'));

      const { message_id } = dataOf<SendData>(result, 201);
      expect(await messageIds()).to.deep.equal([...before, message_id].sort());
      const rows = await fixture.node.gateway.persistence.sql!.query<{ events: unknown }>(
        'SELECT events FROM journal WHERE key = $1 ORDER BY seq',
        [`message:${message_id}`],
      );
      const journaled = JSON.stringify(rows.map((row) => row.events));
      expect(journaled).to.include(text);
      expect(journaled).not.to.include('\ufffd');
    });
  });
});
