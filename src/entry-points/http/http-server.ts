import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';

export interface HttpServer {
  /** Listens; resolves with the bound port (useful with port 0). */
  start(): Promise<number>;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then closes what is left. */
  stop(graceMs?: number): Promise<void>;
  readonly port: number | null;
}

export function createHttpServer(listener: RequestListener, options: { host: string; port: number }): HttpServer {
  let server: Server | null = null;
  let port: number | null = null;
  return {
    get port() {
      return port;
    },
    start() {
      return new Promise((resolve, reject) => {
        const created = createServer({ requestTimeout: 30_000, headersTimeout: 15_000, keepAliveTimeout: 5_000 }, listener);
        created.once('error', reject);
        created.listen(options.port, options.host, () => {
          server = created;
          port = (created.address() as AddressInfo).port;
          resolve(port);
        });
      });
    },
    async stop(graceMs = 10_000) {
      const current = server;
      if (!current) return;
      server = null;
      const closed = new Promise<void>((resolve) => {
        current.close(() => {
          resolve();
        });
      });
      current.closeIdleConnections();
      const deadline = setTimeout(() => {
        current.closeAllConnections();
      }, graceMs);
      await closed;
      clearTimeout(deadline);
    },
  };
}
