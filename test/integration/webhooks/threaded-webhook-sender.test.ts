import { expect } from 'chai';
import { spawnSync } from 'node:child_process';
import { createServer, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';
import { Worker } from 'node:worker_threads';
import {
  createThreadedWebhookSender,
  spawnSenderThread,
  THREAD_ENDED,
  type ToSenderThread,
} from '../../../src/webhooks/threaded-webhook-sender.js';
import type { WebhookCredentials, WebhookSender, WebhookSenderOptions } from '../../../src/webhooks/webhook-sender.js';

const NONE: WebhookCredentials = { username: null, password: null, signingSecret: null };
const OPTIONS: WebhookSenderOptions = {
  timeoutMs: 10_000,
  policy: { publicAddressesOnly: false, allowHttpLocalhost: true },
  userAgent: 'sms-gateway/test',
};

/** A thread that ends (exit code 3) as soon as it is handed anything. */
const exitingThread = (): Worker =>
  new Worker(`require('node:worker_threads').parentPort.on('message', () => process.exit(3));`, { eval: true });

/** The sender's own thread, with every message posted to it recorded. */
function recordedThread(posted: ToSenderThread[]): (options: WebhookSenderOptions) => Worker {
  return (options) => {
    const worker = spawnSenderThread(options);
    const post = worker.postMessage.bind(worker);
    worker.postMessage = (message: ToSenderThread) => {
      posted.push(message);
      post(message);
    };
    return worker;
  };
}

/** What the webhook sender in a worker thread adds: crossings in batches, a thread that ends, closing. */
describe('webhook sender in a worker thread: batches, a thread that ends, closing', () => {
  let server: Server;
  let base: string;
  let bodies: string[];
  let answer: (body: string, response: ServerResponse) => void;
  let sender: WebhookSender | null;

  before(async () => {
    server = createServer((request, response) => {
      const chunks: Buffer[] = [];
      request.on('data', (chunk: Buffer) => chunks.push(chunk));
      request.on('end', () => {
        const body = Buffer.concat(chunks).toString('utf8');
        bodies.push(body);
        answer(body, response);
      });
    });
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
  });

  beforeEach(() => {
    bodies = [];
    answer = (_body, response) => response.writeHead(200).end();
    sender = null;
  });

  afterEach(async () => {
    await sender?.close();
  });

  after(async () => {
    server.closeAllConnections();
    await new Promise<void>((resolve) =>
      server.close(() => {
        resolve();
      }),
    );
  });

  it('when attempts are made in one turn of the event loop, then they cross in one message and each gets its own answer', async () => {
    const posted: ToSenderThread[] = [];
    sender = createThreadedWebhookSender({ ...OPTIONS, spawn: recordedThread(posted) });
    answer = (body, response) => response.writeHead((JSON.parse(body) as { status: number }).status).end();
    const statuses = [200, 201, 204, 400, 404, 410, 500, 502, 503, 202, 299, 418];

    const results = await Promise.all(
      statuses.map((status) => sender!.send(`${base}/hooks`, JSON.stringify({ status }), NONE, Date.now())),
    );

    expect(results).to.deep.equal(statuses.map((status) => ({ type: 'response', status })));
    expect(posted.map((message) => (message.type === 'attempts' ? message.attempts.length : message.type))).to.deep.equal([
      statuses.length,
    ]);
  });

  it('when the thread ends during attempts, then they end as connection errors and the next attempt starts a new thread', async () => {
    const spawns: string[] = [];
    sender = createThreadedWebhookSender({
      ...OPTIONS,
      spawn: (options) => {
        spawns.push(spawns.length === 0 ? 'exiting' : 'sender');
        return spawns.length === 1 ? exitingThread() : spawnSenderThread(options);
      },
    });

    const lost = await Promise.all([
      sender.send(`${base}/a`, '{"n":1}', NONE, Date.now()),
      sender.send(`${base}/b`, '{"n":2}', NONE, Date.now()),
    ]);
    const next = await sender.send(`${base}/c`, '{"n":3}', NONE, Date.now());

    expect(lost).to.deep.equal([THREAD_ENDED, THREAD_ENDED]);
    expect(THREAD_ENDED).to.include({ type: 'connection_error' });
    expect(next).to.deep.equal({ type: 'response', status: 200 });
    expect(spawns).to.deep.equal(['exiting', 'sender']);
    expect(bodies).to.deep.equal(['{"n":3}']);
  });

  it('when the thread fails with an error, then it is reported and its attempts end as connection errors', async () => {
    const reported: unknown[] = [];
    sender = createThreadedWebhookSender({
      ...OPTIONS,
      onError: (error) => reported.push(error),
      spawn: () =>
        new Worker(`require('node:worker_threads').parentPort.on('message', () => { throw new Error('sender thread broke'); });`, {
          eval: true,
        }),
    });

    const result = await sender.send(`${base}/hooks`, '{}', NONE, Date.now());

    expect(result).to.deep.equal(THREAD_ENDED);
    expect(reported.map((error) => (error as Error).message)).to.deep.equal(['sender thread broke']);
  });

  it('when no new thread can be started, then the attempts end as connection errors, it is reported, and a later attempt tries again', async () => {
    const reported: unknown[] = [];
    let spawns = 0;
    sender = createThreadedWebhookSender({
      ...OPTIONS,
      onError: (error) => reported.push(error),
      spawn: (options) => {
        spawns += 1;
        if (spawns === 1) return exitingThread();
        if (spawns === 2) throw new Error('no more threads');
        return spawnSenderThread(options);
      },
    });

    const lost = await sender.send(`${base}/hooks`, '{"n":1}', NONE, Date.now());
    const refused = await sender.send(`${base}/hooks`, '{"n":2}', NONE, Date.now());
    const next = await sender.send(`${base}/hooks`, '{"n":3}', NONE, Date.now());

    expect(lost).to.deep.equal(THREAD_ENDED);
    expect(refused).to.include({ type: 'connection_error', kind: 'connection_error' });
    expect(reported.map((error) => (error as Error).message)).to.deep.equal(['no more threads']);
    expect(next).to.deep.equal({ type: 'response', status: 200 });
    expect(bodies).to.deep.equal(['{"n":3}']);
  });

  it('when the sender closes, then attempts under way finish first and an attempt after it sends nothing', async () => {
    answer = (_body, response) => {
      setTimeout(() => response.writeHead(202).end(), 200);
    };
    const closing = createThreadedWebhookSender(OPTIONS);

    const underWay = closing.send(`${base}/hooks`, '{"n":1}', NONE, Date.now());
    await closing.close();
    const after = await closing.send(`${base}/hooks`, '{"n":2}', NONE, Date.now());

    expect(await underWay).to.deep.equal({ type: 'response', status: 202 });
    expect(after).to.include({ type: 'connection_error', kind: 'connection_closed' });
    expect(bodies).to.deep.equal(['{"n":1}']);
  });

  it('when the sender is left open with nothing under way, then it does not keep the process alive', () => {
    const module = new URL('../../../src/webhooks/threaded-webhook-sender.ts', import.meta.url).href;
    const script = `
      import { createServer } from 'node:http';
      const { createThreadedWebhookSender } = await import(${JSON.stringify(module)});
      const server = createServer((request, response) => { request.resume(); request.on('end', () => response.writeHead(200).end()); });
      await new Promise((resolve) => server.listen(0, '127.0.0.1', resolve));
      const sender = createThreadedWebhookSender(${JSON.stringify(OPTIONS)});
      const result = await sender.send('http://127.0.0.1:' + server.address().port + '/hooks', '{}', { username: null, password: null, signingSecret: null }, Date.now());
      server.closeAllConnections();
      server.close();
      console.log(JSON.stringify(result));
    `;

    const child = spawnSync(process.execPath, ['--import', 'tsx', '--input-type=module', '-e', script], {
      encoding: 'utf8',
      timeout: 60_000,
    });

    expect(child.error, child.stderr).to.equal(undefined);
    expect(child.status, child.stderr).to.equal(0);
    expect(child.stdout.trim()).to.equal('{"type":"response","status":200}');
  });
});
