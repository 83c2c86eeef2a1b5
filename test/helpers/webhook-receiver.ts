import { createServer, type IncomingHttpHeaders, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';

/**
 * A merchant's webhook endpoint for the pipeline tests: an HTTP server on 127.0.0.1 (free port) that records every
 * request (arrival time, headers, raw and parsed body) and answers each one as its behaviour says: a status (after
 * an optional delay), never (hang until the receiver closes), or by closing the socket without an answer.
 */

export interface ReceivedRequest {
  /** 0-based arrival order. */
  readonly index: number;
  /** `Date.now()` when the whole body had arrived. */
  readonly at: number;
  readonly method: string;
  readonly path: string;
  readonly headers: IncomingHttpHeaders;
  readonly rawBody: string;
  /** The body parsed as JSON, `undefined` when it is not JSON. */
  readonly body: unknown;
}

export type ReceiverAction =
  | { readonly type: 'respond'; readonly status: number; readonly delayMs?: number; readonly headers?: Readonly<Record<string, string>> }
  /** Never answer; the connection stays open until the client gives up or the receiver closes. */
  | { readonly type: 'hang' }
  /** Answer with `status` once `until` resolves (the test decides when). */
  | { readonly type: 'hold'; readonly until: Promise<void>; readonly status: number }
  /** Destroy the socket without answering. */
  | { readonly type: 'close' };

export type ReceiverBehaviour = (request: ReceivedRequest, receiver: WebhookReceiver) => ReceiverAction;

export interface WebhookReceiver {
  /** `http://127.0.0.1:<port><path>`. */
  readonly url: string;
  /** Every request so far, in arrival order. */
  readonly requests: readonly ReceivedRequest[];
  setBehaviour(behaviour: ReceiverBehaviour): void;
  /** Requests whose body is a webhook event with this id. */
  deliveriesOf(eventId: string): ReceivedRequest[];
  /** Bodies of every request, as webhook events. */
  events(): WebhookEnvelope[];
  /**
   * Resolves with the predicate's first truthy answer; checked on every request and every `pollMs` (for conditions
   * that change without a request). Rejects after `timeoutMs` with `what` and the number of requests seen.
   */
  waitFor<T>(
    predicate: (requests: readonly ReceivedRequest[]) => T | false | null | undefined,
    timeoutMs: number,
    what?: string,
  ): Promise<T>;
  close(): Promise<void>;
}

/** The contract's envelope as received (fields checked by the tests, not trusted). */
export interface WebhookEnvelope {
  readonly event_id: string;
  readonly event_type: string;
  readonly timestamp: string;
  readonly message_id: string;
  readonly data: Record<string, unknown>;
}

export const respond = (status: number, delayMs?: number): ReceiverAction => ({
  type: 'respond',
  status,
  ...(delayMs === undefined ? {} : { delayMs }),
});
export const HANG: ReceiverAction = { type: 'hang' };
export const CLOSE: ReceiverAction = { type: 'close' };

/** Answers every request the same way. */
export const always =
  (action: ReceiverAction): ReceiverBehaviour =>
  () =>
    action;

/** The event id of a request's body, when it has one. */
export function eventIdOf(request: ReceivedRequest): string | null {
  const body = request.body as { event_id?: unknown } | undefined;
  return typeof body?.event_id === 'string' ? body.event_id : null;
}

/** The first `n` deliveries of each event get `failure`; later ones get `success` (200 by default). */
export function failFirst(n: number, failure: ReceiverAction = respond(500), success: ReceiverAction = respond(200)): ReceiverBehaviour {
  return (request, receiver) => {
    const id = eventIdOf(request);
    const earlier = id === null ? 0 : receiver.requests.filter((r) => r.index < request.index && eventIdOf(r) === id).length;
    return earlier < n ? failure : success;
  };
}

export async function startWebhookReceiver(options: { path?: string; behaviour?: ReceiverBehaviour } = {}): Promise<WebhookReceiver> {
  const path = options.path ?? '/hooks';
  const requests: ReceivedRequest[] = [];
  const sockets = new Set<Socket>();
  const hanging = new Set<ServerResponse>();
  const listeners = new Set<() => void>();
  let behaviour: ReceiverBehaviour = options.behaviour ?? always(respond(200));
  let closed = false;

  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const rawBody = Buffer.concat(chunks).toString('utf8');
      let body: unknown;
      try {
        body = rawBody === '' ? undefined : JSON.parse(rawBody);
      } catch {
        body = undefined;
      }
      const request: ReceivedRequest = {
        index: requests.length,
        at: Date.now(),
        method: req.method ?? '',
        path: req.url ?? '',
        headers: req.headers,
        rawBody,
        body,
      };
      requests.push(request);
      let action: ReceiverAction;
      try {
        action = behaviour(request, receiver);
      } catch {
        action = respond(599);
      }
      for (const listener of [...listeners]) listener();
      switch (action.type) {
        case 'respond': {
          const answer = (): void => {
            hanging.delete(res);
            if (res.destroyed) return;
            res.writeHead(action.status, { 'content-type': 'text/plain', ...action.headers });
            res.end('ok');
          };
          if (action.delayMs) {
            hanging.add(res);
            setTimeout(answer, action.delayMs);
          } else answer();
          return;
        }
        case 'hang':
          hanging.add(res);
          return;
        case 'hold': {
          hanging.add(res);
          void action.until.then(() => {
            hanging.delete(res);
            if (res.destroyed) return;
            res.writeHead(action.status, { 'content-type': 'text/plain' });
            res.end('ok');
          });
          return;
        }
        case 'close':
          req.socket.destroy();
          return;
      }
    });
  });
  server.on('connection', (socket) => {
    sockets.add(socket);
    socket.once('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      resolve();
    });
  });
  const { port } = server.address() as AddressInfo;

  const receiver: WebhookReceiver = {
    url: `http://127.0.0.1:${port}${path}`,
    requests,
    setBehaviour(next) {
      behaviour = next;
    },
    deliveriesOf(eventId) {
      return requests.filter((r) => eventIdOf(r) === eventId);
    },
    events() {
      return requests.map((r) => r.body as WebhookEnvelope);
    },
    waitFor(predicate, timeoutMs, what = 'condition') {
      return new Promise((resolve, reject) => {
        let finish = (): void => undefined;
        const check = (): void => {
          let answer: ReturnType<typeof predicate>;
          try {
            answer = predicate(requests);
          } catch (error) {
            finish();
            reject(error instanceof Error ? error : new Error(String(error)));
            return;
          }
          if (answer !== false && answer !== null && answer !== undefined) {
            finish();
            resolve(answer);
          }
        };
        listeners.add(check);
        const poll = setInterval(check, 20);
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`webhook receiver: ${what} not met within ${timeoutMs} ms (${requests.length} requests received)`));
        }, timeoutMs);
        finish = () => {
          listeners.delete(check);
          clearInterval(poll);
          clearTimeout(timer);
        };
        check();
      });
    },
    async close() {
      if (closed) return;
      closed = true;
      for (const res of hanging) res.destroy();
      hanging.clear();
      for (const socket of sockets) socket.destroy();
      await new Promise<void>((resolve) => {
        server.close(() => {
          resolve();
        });
      });
    },
  };
  return receiver;
}
