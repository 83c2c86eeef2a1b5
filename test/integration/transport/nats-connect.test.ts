import { createRequire } from 'node:module';
import { Socket } from 'node:net';
import path from 'node:path';
import { expect } from 'chai';
import sinon from 'sinon';
import type { NatsConnection } from '@nats-io/nats-core';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';

const endOfTurn = () => new Promise<void>((resolve) => setImmediate(resolve));

describe('NATS connection: writes gathered per turn of the event loop (private nats-server)', function () {
  this.timeout(30_000);
  let server: TestNats;
  let publisher: NatsConnection;
  let subscriber: NatsConnection;
  before(async () => {
    // its own server: the last test restarts it
    server = await startTestNats();
    publisher = await connectNats({ servers: server.url, name: 'turn-publisher' });
    subscriber = await connectNats({ servers: server.url, name: 'turn-subscriber' });
  });
  after(async () => {
    sinon.restore();
    await publisher.close();
    await subscriber.close();
    await server.stop();
  });

  it('when one turn publishes across many microtasks, then the frames reach the socket in one write, in order, and all arrive', async () => {
    const subject = 'turn.batched';
    const received: string[] = [];
    const subscription = subscriber.subscribe(subject, {
      callback: (_error, message) => {
        received.push(message.string());
      },
    });
    await subscriber.flush();

    // system calls on sockets to the test server, counted while the turn's frames are written
    const port = Number(new URL(server.url).port);
    const writes = { single: 0, gathered: 0 };
    const toServer = (socket: Socket) => socket.remotePort === port;
    const single = sinon.spy(Socket.prototype, '_write');
    const gathered = sinon.spy(Socket.prototype, '_writev');

    const sent = Array.from({ length: 50 }, (_, i) => `m${i}`);
    for (const text of sent) {
      publisher.publish(subject, text);
      // the client writes at the end of every microtask that added to its buffer: yield one between publishes
      await Promise.resolve();
    }
    await endOfTurn();
    writes.single = single.thisValues.filter((socket) => toServer(socket as Socket)).length;
    writes.gathered = gathered.thisValues.filter((socket) => toServer(socket as Socket)).length;
    single.restore();
    gathered.restore();

    expect(writes.single + writes.gathered, `socket writes for 50 publishes (${JSON.stringify(writes)})`).to.equal(1);
    await publisher.flush();
    await subscriber.flush();
    const deadline = Date.now() + 5_000;
    while (received.length < sent.length && Date.now() < deadline) await new Promise((resolve) => setTimeout(resolve, 10));
    expect(received).to.deep.equal(sent);
    subscription.unsubscribe();
  });

  it('when the server restarts, then the connection comes back and publishes still arrive', async () => {
    const subject = 'turn.after-restart';
    await server.restart();
    const deadline = Date.now() + 10_000;
    let echoed = '';
    while (echoed === '' && Date.now() < deadline) {
      const subscription = subscriber.subscribe(subject, { max: 1 });
      await subscriber.flush().catch(() => undefined);
      publisher.publish(subject, 'after');
      await publisher.flush().catch(() => undefined);
      const next = await Promise.race([
        (async () => {
          for await (const message of subscription) return message.string();
          return '';
        })(),
        new Promise<string>((resolve) =>
          setTimeout(() => {
            resolve('');
          }, 500),
        ),
      ]);
      subscription.unsubscribe();
      echoed = next;
    }
    expect(echoed).to.equal('after');
  });
});

describe('NATS connection: an answered request builds no error to close itself (private nats-server)', function () {
  this.timeout(30_000);
  let server: TestNats;
  let connection: NatsConnection;
  /** The client's errors module, as its request code reaches it (the same module instance). */
  const errorsModule = createRequire(import.meta.url)(
    path.join(path.dirname(createRequire(import.meta.url).resolve('@nats-io/nats-core/internal')), 'errors.js'),
  ) as { RequestError: new (message?: string) => Error };

  before(async () => {
    server = await startTestNats();
    connection = await connectNats({ servers: server.url, name: 'requests', noAsyncTraces: true });
    connection.subscribe('echo', {
      callback: (_error, message) => {
        message.respond(message.data);
      },
    });
    connection.subscribe('silent', { callback: () => undefined });
    await connection.flush();
  });
  after(async () => {
    sinon.restore();
    await connection.close();
    await server.stop();
  });

  /** RequestError instances the client builds while `work` runs. */
  async function requestErrorsDuring(work: () => Promise<void>): Promise<number> {
    const built = sinon.spy(errorsModule, 'RequestError');
    try {
      await work();
      return built.callCount;
    } finally {
      built.restore();
    }
  }

  it('when requests are answered, then each resolves with its answer and none builds a RequestError', async () => {
    const answers: string[] = [];
    const built = await requestErrorsDuring(async () => {
      for (let i = 0; i < 20; i++) answers.push((await connection.request('echo', `r${i}`, { timeout: 5_000 })).string());
    });
    expect(answers).to.deep.equal(Array.from({ length: 20 }, (_, i) => `r${i}`));
    expect(built, 'RequestError built for answered requests').to.equal(0);
  });

  it('when a request has no responder or no answer in time, then it still fails with the client’s own error', async () => {
    const noResponder = await connection.request('nobody.here', 'x', { timeout: 5_000 }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(noResponder).to.be.instanceOf(Error);
    expect((noResponder as Error).message).to.not.include('after its answer');
    expect(String((noResponder as Error & { cause?: unknown }).cause ?? noResponder)).to.match(/no responders/i);

    const late = await connection.request('silent', 'x', { timeout: 100 }).then(
      () => null,
      (error: unknown) => error,
    );
    expect(late).to.be.instanceOf(Error);
    expect((late as Error).message).to.match(/timeout/i);
  });
});
