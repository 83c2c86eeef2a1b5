import { expect } from 'chai';
import { createServer, type IncomingHttpHeaders, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import {
  createWebhookSender,
  REFUSED_ADDRESS,
  signature,
  type WebhookCredentials,
  type WebhookSender,
  type WebhookSenderOptions,
} from '../../../src/webhooks/webhook-sender.js';
import { createThreadedWebhookSender } from '../../../src/webhooks/threaded-webhook-sender.js';

const NONE: WebhookCredentials = { username: null, password: null, signingSecret: null };
const LOCAL = { publicAddressesOnly: false, allowHttpLocalhost: true };
const TIMEOUT_MS = 300;

interface Seen {
  readonly method: string;
  readonly url: string;
  readonly headers: IncomingHttpHeaders;
  readonly body: string;
}

/** The sender as the node's main thread runs it, and the same in a worker thread (WEBHOOK_SENDER_THREAD). */
const SENDERS: readonly (readonly [string, (options: WebhookSenderOptions) => WebhookSender])[] = [
  ['in the calling thread', createWebhookSender],
  ['in a worker thread', createThreadedWebhookSender],
];

/** One attempt of the webhook sender against a real HTTP server on loopback, answered as each test says. */
for (const [where, create] of SENDERS)
  describe(`webhook sender ${where}: one POST per attempt over real HTTP`, () => {
    let server: Server;
    let base: string;
    let seen: Seen[];
    let answer: (response: ServerResponse) => void;
    let sender: WebhookSender;

    before(async () => {
      server = createServer((request, response) => {
        const chunks: Buffer[] = [];
        request.on('data', (chunk: Buffer) => chunks.push(chunk));
        request.on('end', () => {
          seen.push({
            method: request.method ?? '',
            url: request.url ?? '',
            headers: request.headers,
            body: Buffer.concat(chunks).toString('utf8'),
          });
          answer(response);
        });
      });
      await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
      base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
    });

    beforeEach(() => {
      seen = [];
      answer = (response) => response.writeHead(200).end('ok');
      sender = create({ timeoutMs: TIMEOUT_MS, policy: LOCAL, userAgent: 'sms-gateway/test' });
    });

    afterEach(async () => {
      await sender.close();
    });

    after(async () => {
      server.closeAllConnections();
      await new Promise<void>((resolve) =>
        server.close(() => {
          resolve();
        }),
      );
    });

    it('when the endpoint answers, then the attempt is its status, and the exact body, path, query and headers arrived', async () => {
      const body = JSON.stringify({ event_id: 'evt_1', note: 'é ✓' });

      const result = await sender.send(
        `${base}/hooks/sms?shop=7`,
        body,
        { username: 'shop', password: 'p4ss:word', signingSecret: null },
        Date.now(),
      );

      expect(result).to.deep.equal({ type: 'response', status: 200 });
      expect(seen).to.have.length(1);
      const [request] = seen;
      expect(request).to.include({ method: 'POST', url: '/hooks/sms?shop=7', body });
      expect(request!.headers['content-type']).to.equal('application/json');
      expect(request!.headers['user-agent']).to.equal('sms-gateway/test');
      expect(request!.headers.authorization).to.equal(`Basic ${Buffer.from('shop:p4ss:word').toString('base64')}`);
      expect(request!.headers['x-signature']).to.equal(undefined);
    });

    it('when a signing secret is set, then the signature of the timestamp and body arrives with them', async () => {
      const now = Date.parse('2026-11-24T10:00:00Z');
      const body = '{"event_id":"evt_2"}';

      await sender.send(`${base}/hooks`, body, { ...NONE, signingSecret: 'whsec_test' }, now);

      const timestamp = String(now / 1000);
      expect(seen[0]!.headers['x-signature-timestamp']).to.equal(timestamp);
      expect(seen[0]!.headers['x-signature']).to.equal(signature('whsec_test', now / 1000, body));
      expect(seen[0]!.headers.authorization).to.equal(undefined);
    });

    it('when the endpoint answers 4xx or 5xx, then the attempt is that status', async () => {
      for (const status of [404, 410, 500, 503]) {
        answer = (response) => response.writeHead(status).end('no');
        expect(await sender.send(`${base}/hooks`, '{}', NONE, Date.now()), String(status)).to.deep.equal({ type: 'response', status });
      }
    });

    it('when a redirect comes back, then it is not followed: the attempt is the 3xx', async () => {
      answer = (response) => response.writeHead(307, { location: `${base}/elsewhere` }).end();

      expect(await sender.send(`${base}/hooks`, '{}', NONE, Date.now())).to.deep.equal({ type: 'response', status: 307 });
      expect(seen.map((s) => s.url)).to.deep.equal(['/hooks']);
    });

    it('when the answer does not come within the timeout, then the attempt is a timeout, at the timeout', async () => {
      answer = () => undefined;
      const started = Date.now();

      const result = await sender.send(`${base}/hooks`, '{}', NONE, started);

      expect(result).to.deep.equal({ type: 'timeout' });
      expect(Date.now() - started).to.be.at.least(TIMEOUT_MS - 5);
    });

    it('when the status comes but the body never ends, then the attempt is the status, as soon as it came', async () => {
      answer = (response) => {
        response.writeHead(200, { 'content-type': 'text/plain' });
        response.write('partial');
      };
      const patient = create({ timeoutMs: 3_000, policy: LOCAL, userAgent: 'sms-gateway/test' });
      try {
        const started = Date.now();

        expect(await patient.send(`${base}/hooks`, '{}', NONE, started)).to.deep.equal({ type: 'response', status: 200 });
        // well before the attempt's timeout: the status was the answer
        expect(Date.now() - started).to.be.below(2_000);
      } finally {
        await patient.close();
      }
    });

    it('when the answer body is huge, then the attempt is its status without reading it all', async () => {
      answer = (response) => {
        response.writeHead(200);
        response.end(Buffer.alloc(1024 * 1024, 97));
      };

      expect(await sender.send(`${base}/hooks`, '{}', NONE, Date.now())).to.deep.equal({ type: 'response', status: 200 });
    });

    it('when nothing listens, then the attempt is a connection error of kind connection_refused', async () => {
      const closed = createServer();
      await new Promise<void>((resolve) => closed.listen(0, '127.0.0.1', resolve));
      const port = (closed.address() as AddressInfo).port;
      await new Promise<void>((resolve) =>
        closed.close(() => {
          resolve();
        }),
      );

      const result = await sender.send(`http://127.0.0.1:${port}/hooks`, '{}', NONE, Date.now());

      expect(result.type).to.equal('connection_error');
      expect(result.type === 'connection_error' ? result.kind : result.type).to.equal('connection_refused');
    });

    it('when the endpoint closes the connection without answering, then the attempt is a connection error of kind connection_closed', async () => {
      answer = (response) => {
        response.socket?.destroy();
      };

      const result = await sender.send(`${base}/hooks`, '{}', NONE, Date.now());

      expect(result.type === 'connection_error' ? result.kind : result.type).to.equal('connection_closed');
    });

    it('when the endpoint does not speak TLS on an https:// URL, then the attempt is a connection error of kind tls_error', async () => {
      const result = await sender.send(`${base.replace('http://', 'https://')}/hooks`, '{}', NONE, Date.now());

      expect(result.type === 'connection_error' ? result.kind : result.type).to.equal('tls_error');
    });

    it('when the URL is not a URL, then the attempt is a connection error of kind invalid_url, not a throw', async () => {
      const result = await sender.send('not a url', '{}', NONE, Date.now());

      expect(result.type === 'connection_error' ? result.kind : result.type).to.equal('invalid_url');
    });

    it('when only public addresses are allowed and the host resolves to loopback, then nothing is sent and the attempt says why', async () => {
      const strict = create({
        timeoutMs: TIMEOUT_MS,
        policy: { publicAddressesOnly: true, allowHttpLocalhost: false },
        userAgent: 'sms-gateway/test',
      });
      try {
        const port = (server.address() as AddressInfo).port;
        const result = await strict.send(`http://localhost:${port}/hooks`, '{}', NONE, Date.now());

        expect(result.type).to.equal('connection_error');
        expect(result.type === 'connection_error' ? result.reason : '').to.include(REFUSED_ADDRESS);
        expect(result.type === 'connection_error' ? result.kind : result.type).to.equal('refused_address');
        expect(seen).to.deep.equal([]);
      } finally {
        await strict.close();
      }
    });

    it('when only public addresses are allowed and the URL is a non-public IP literal in any spelling, then no connection is made', async () => {
      const strict = create({
        timeoutMs: TIMEOUT_MS,
        policy: { publicAddressesOnly: true, allowHttpLocalhost: false },
        userAgent: 'sms-gateway/test',
      });
      const port = (server.address() as AddressInfo).port;
      let connections = 0;
      const count = (): void => {
        connections += 1;
      };
      server.on('connection', count);
      try {
        for (const host of ['127.0.0.1', '[::ffff:127.0.0.1]', '[::ffff:7f00:1]', '2130706433']) {
          for (const scheme of ['http', 'https']) {
            const result = await strict.send(`${scheme}://${host}:${port}/hooks`, '{}', NONE, Date.now());
            expect(result.type === 'connection_error' ? result.reason : result.type, `${scheme}://${host}`).to.include(REFUSED_ADDRESS);
            expect(result.type === 'connection_error' ? result.kind : result.type, `${scheme}://${host}`).to.equal('refused_address');
          }
        }
        expect(connections).to.equal(0);
        expect(seen).to.deep.equal([]);
        // the same literal is dialled when the policy allows it: the count above is not blind
        await sender.send(`http://[::ffff:127.0.0.1]:${port}/hooks`, '{}', NONE, Date.now());
        expect(connections).to.equal(1);
      } finally {
        server.off('connection', count);
        await strict.close();
      }
    });

    it('when many attempts go to one endpoint, then each gets its own answer', async () => {
      let n = 0;
      answer = (response) => response.writeHead(n++ % 2 === 0 ? 200 : 500).end();

      // a patient sender: on a loaded machine 40 connections at once can outlast the 300 ms of the others, and the
      // answers, not the timeout, are what this checks
      const patient = create({ timeoutMs: 10_000, policy: LOCAL, userAgent: 'sms-gateway/test' });
      try {
        const results = await Promise.all(Array.from({ length: 40 }, () => patient.send(`${base}/hooks`, '{}', NONE, Date.now())));

        expect(results.filter((r) => r.type === 'response' && r.status === 200)).to.have.length(20);
        expect(results.filter((r) => r.type === 'response' && r.status === 500)).to.have.length(20);
      } finally {
        await patient.close();
      }
    });
  });
