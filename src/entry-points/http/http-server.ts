import { randomUUID } from 'node:crypto';
import { createServer, type Server } from 'node:http';
import { Socket, type AddressInfo } from 'node:net';
import type { RequestListener } from 'node:http';
import { silentLogger, type Logger } from '../../libraries/logger/logger.js';

export interface HttpServer {
  /** Listens; resolves with the bound port (useful with port 0). */
  start(): Promise<number>;
  /** Stops accepting, lets in-flight requests finish (up to `graceMs`), then closes what is left. */
  stop(graceMs?: number): Promise<void>;
  readonly port: number | null;
}

export function createHttpServer(listener: RequestListener, options: { host: string; port: number; logger?: Logger }): HttpServer {
  const logger = options.logger ?? silentLogger;
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
        // requests Node's parser refuses (bad request line, oversized headers) still get the envelope and an id
        created.on('clientError', (error: NodeJS.ErrnoException, socket) => {
          if (!socket.writable) return;
          const status = error.code === 'HPE_HEADER_OVERFLOW' ? 431 : 400;
          const requestId = randomUUID();
          // the parser's code and the peer, never what was sent (the refused headers may hold a key)
          logger.info(
            {
              request_id: requestId,
              remote_address: socket instanceof Socket ? (socket.remoteAddress ?? null) : null,
              parser_code: error.code ?? 'unknown',
              status,
              error_code: '1110',
            },
            'request refused by the HTTP parser',
          );
          const body = JSON.stringify({
            success: false,
            status_code: status,
            error_code: '1110',
            message: 'The HTTP request could not be parsed.',
            request_id: requestId,
            details: [{ field: 'body', message: 'is not a well-formed HTTP request', type: 'http.malformed' }],
          });
          socket.end(
            `HTTP/1.1 ${status} ${status === 431 ? 'Request Header Fields Too Large' : 'Bad Request'}\r\nContent-Type: application/json\r\n` +
              `X-Request-Id: ${requestId}\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`,
          );
        });
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
