import { connect, createServer, type Socket } from 'node:net';

/**
 * A TCP proxy to a local server whose uplink can be slowed: what a client sends reaches the server late, in order,
 * while what the server sends arrives at once. For the moments a client has acted and the server has not yet seen
 * it (an unsubscription in flight while the server is still delivering).
 */
export interface DelayingProxy {
  /** `nats://127.0.0.1:<port>` of the proxy. */
  readonly url: string;
  /** From now on, what clients send waits this long before it is passed on (0: at once). Order is kept. */
  delayToServer(ms: number): void;
  close(): Promise<void>;
}

const pause = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

export async function startDelayingProxy(targetPort: number): Promise<DelayingProxy> {
  let delayMs = 0;
  const sockets = new Set<Socket>();
  const track = (socket: Socket): Socket => {
    sockets.add(socket);
    socket.on('close', () => sockets.delete(socket));
    socket.on('error', () => socket.destroy());
    return socket;
  };
  const server = createServer((accepted) => {
    const client = track(accepted);
    const upstream = track(connect(targetPort, '127.0.0.1'));
    // one chain per connection: a chunk is written after every chunk before it, whatever the delay was then
    let uplink = Promise.resolve();
    client.on('data', (chunk) => {
      const due = Date.now() + delayMs;
      uplink = uplink
        .then(() => pause(Math.max(0, due - Date.now())))
        .then(() => {
          if (!upstream.destroyed) upstream.write(chunk);
        });
    });
    upstream.pipe(client);
    client.on('close', () => upstream.destroy());
    upstream.on('close', () => client.destroy());
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const address = server.address();
  if (address === null || typeof address === 'string') throw new Error('proxy has no TCP address');
  return {
    url: `nats://127.0.0.1:${String(address.port)}`,
    delayToServer(ms) {
      delayMs = ms;
    },
    async close() {
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
}
