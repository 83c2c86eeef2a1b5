/**
 * The merchant's webhook endpoint of bench:pipeline, in its own process (as a merchant's endpoint would be): answers
 * 204 at once and reports every request to the parent over IPC, in batches every 10 ms. `at` is absolute
 * (performance.timeOrigin + performance.now()), so the parent can place it on its own clock.
 *
 * A GET is a Kannel dlr-url call (bench:kannel): `?id=<the bench's message id>&type=<Kannel's %d>` is reported as
 * type `kannel:<%d>` (1 delivered, 2 failed, 8 accepted by the SMSC, 16 rejected by it) with that id, and answered
 * 200 (smsbox takes a 204 for a failure and calls again).
 */
import { createServer, type IncomingMessage, type ServerResponse } from 'node:http';
import type { AddressInfo } from 'node:net';

export interface ReceivedWebhook {
  /** Absolute milliseconds (timeOrigin + now) when the body had arrived. */
  readonly at: number;
  readonly eventId: string;
  readonly type: string;
  readonly messageId: string;
  readonly recipientIndex: number | null;
}

export type ReceiverMessage =
  { readonly kind: 'listening'; readonly url: string } | { readonly kind: 'received'; readonly webhooks: readonly ReceivedWebhook[] };

/** A Kannel dlr-url call: `?id=…&type=…` → `kannel:<type>` for that id. */
function describeDlr(url: string, at: number): ReceivedWebhook {
  const query = new URL(url, 'http://receiver').searchParams;
  return { at, eventId: '', type: `kannel:${query.get('type') ?? ''}`, messageId: query.get('id') ?? '', recipientIndex: null };
}

function describe(raw: string, at: number): ReceivedWebhook {
  try {
    const body = JSON.parse(raw) as {
      event_id?: unknown;
      event_type?: unknown;
      message_id?: unknown;
      data?: { recipient_index?: unknown };
    };
    return {
      at,
      eventId: String(body.event_id),
      type: String(body.event_type),
      messageId: String(body.message_id),
      recipientIndex: typeof body.data?.recipient_index === 'number' ? body.data.recipient_index : null,
    };
  } catch {
    return { at, eventId: '', type: 'unparsable', messageId: '', recipientIndex: null };
  }
}

function main(): void {
  const send = process.send?.bind(process);
  if (!send) throw new Error('run by bench:pipeline as a child process with an IPC channel');
  let pending: ReceivedWebhook[] = [];
  setInterval(() => {
    if (pending.length === 0) return;
    send({ kind: 'received', webhooks: pending } satisfies ReceiverMessage);
    pending = [];
  }, 10);
  const server = createServer((req: IncomingMessage, res: ServerResponse) => {
    const chunks: Buffer[] = [];
    req.on('data', (chunk: Buffer) => chunks.push(chunk));
    req.on('end', () => {
      const at = performance.timeOrigin + performance.now();
      // Kannel takes only 200 and 202 as success: anything else (204 too) and smsbox calls the dlr-url again
      res.writeHead(req.method === 'GET' ? 200 : 204).end();
      pending.push(req.method === 'GET' ? describeDlr(req.url ?? '', at) : describe(Buffer.concat(chunks).toString('utf8'), at));
    });
  });
  server.keepAliveTimeout = 60_000;
  server.listen(0, '127.0.0.1', () => {
    const { port } = server.address() as AddressInfo;
    send({ kind: 'listening', url: `http://127.0.0.1:${port}/hooks/sms` } satisfies ReceiverMessage);
  });
  // the parent going away ends the receiver
  process.on('disconnect', () => {
    process.exit(0);
  });
}

main();
