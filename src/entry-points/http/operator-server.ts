import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface OperatorServerOptions {
  readonly host: string;
  /** 0 picks a free port. */
  readonly port: number;
  /** The Prometheus exposition, rendered per scrape. */
  readonly scrape: () => Promise<{ readonly contentType: string; readonly body: string }>;
  readonly onError?: (error: unknown) => void;
}

export interface OperatorServer {
  /** Listens; resolves with the bound port. */
  start(): Promise<number>;
  stop(): Promise<void>;
  readonly port: number | null;
}

/**
 * The operator port: `GET /metrics` and nothing else, never on the merchant port (it needs no key, and what it
 * tells is for operators only).
 */
export function createOperatorServer(options: OperatorServerOptions): OperatorServer {
  let server: Server | null = null;
  let port: number | null = null;

  const listener = (req: IncomingMessage, res: ServerResponse): void => {
    const path = (req.url ?? '/').split('?')[0];
    if (path !== '/metrics') {
      res.writeHead(404, { 'content-type': 'text/plain; charset=utf-8' }).end('not found\n');
      return;
    }
    if (req.method !== 'GET' && req.method !== 'HEAD') {
      res.writeHead(405, { allow: 'GET, HEAD', 'content-type': 'text/plain; charset=utf-8' }).end('method not allowed\n');
      return;
    }
    options.scrape().then(
      ({ contentType, body }) => {
        res.writeHead(200, { 'content-type': contentType, 'cache-control': 'no-store' }).end(req.method === 'HEAD' ? undefined : body);
      },
      (error: unknown) => {
        options.onError?.(error);
        res.writeHead(500, { 'content-type': 'text/plain; charset=utf-8' }).end('metrics unavailable\n');
      },
    );
  };

  return {
    get port() {
      return port;
    },
    start() {
      return new Promise((resolve, reject) => {
        const created = createServer({ requestTimeout: 10_000, keepAliveTimeout: 5_000 }, listener);
        created.once('error', reject);
        created.listen(options.port, options.host, () => {
          server = created;
          port = (created.address() as AddressInfo).port;
          resolve(port);
        });
      });
    },
    async stop() {
      const current = server;
      if (!current) return;
      server = null;
      // a scrape is short: whatever is still open is a scraper's idle keep-alive
      await new Promise<void>((resolve) => {
        current.close(() => {
          resolve();
        });
        current.closeAllConnections();
      });
    },
  };
}
