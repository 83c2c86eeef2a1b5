/**
 * The transport port (docs/architecture.md, "The transport port"): durable publish deduplicated by id, consumers that acknowledge, retry
 * after a delay or give up, and request/reply for routing commands between nodes. NATS JetStream implements it in
 * server mode; a database-backed bus implements it in embedded mode. Both pass one contract suite.
 */

import { dispatchSubject, receiptSubject, webhookSubject } from './nats-names.js';

/**
 * The durable streams, the subjects they hold, and how long a message stays (so the broker's disk stays bounded):
 * - `work_queue`: a message is removed once one consumer acknowledged (or dropped) it, and waits for a consumer
 *   that does not exist yet. One durable per subject: durables with overlapping filters are refused. Dispatch jobs
 *   (one connector durable per carrier, started whenever the connector starts).
 * - `interest`: a message is removed once every durable whose filter matches it has settled it; several durables
 *   may each receive every message, but a message published while no durable matches it is dropped, so its
 *   consumers must exist first. Receipts and webhook jobs: the gateway creates their durables before it publishes.
 * Both also drop anything older than the transport's maximum age (a durable nobody consumes any more).
 * The names are the application's; on NATS, a namespace prefixes them (nats-names.ts).
 */
export const STREAMS = {
  /** Jobs for carrier connectors: `sms.dispatch.<carrier>`. */
  dispatch: { name: 'SMS_DISPATCH', subjects: dispatchSubject('>'), retention: 'work_queue' },
  /** Receipts from carrier connectors: `sms.receipts.<carrier>`. */
  receipts: { name: 'SMS_RECEIPTS', subjects: receiptSubject('>'), retention: 'limits' },
  /** Webhook delivery jobs: `webhook.jobs.<merchantId>`. */
  webhooks: { name: 'WEBHOOK_JOBS', subjects: webhookSubject('>'), retention: 'limits' },
} as const;

export type StreamName = keyof typeof STREAMS;

export interface PublishOptions {
  /** Deduplication id: a second publish with the same id (within the dedupe window) is a no-op. */
  readonly id: string;
  readonly headers?: Readonly<Record<string, string>>;
}

export interface Delivery {
  readonly subject: string;
  /** The publish id. */
  readonly id: string;
  readonly payload: unknown;
  readonly headers: Readonly<Record<string, string>>;
  /** 1 on the first delivery, then counting redeliveries (retries and lost acknowledgements). */
  readonly deliveryCount: number;
}

/** What a handler decides about one delivery. */
export type Disposition =
  | { readonly type: 'ack' }
  /** Redeliver after the delay (the broker holds it, not the consumer). */
  | { readonly type: 'retry'; readonly delayMs: number }
  /** Never redeliver. */
  | { readonly type: 'drop' };

export const ACK: Disposition = { type: 'ack' };
export const DROP: Disposition = { type: 'drop' };
export const retryAfter = (delayMs: number): Disposition => ({ type: 'retry', delayMs });

export interface ConsumerSpec {
  readonly stream: StreamName;
  /** Subject filter within the stream, e.g. `sms.dispatch.simulator` or `sms.receipts.>`. */
  readonly filter: string;
  /** Durable name: every process using the same name shares the work (a queue group). */
  readonly durable: string;
  /** Deliveries handled at once by this process. */
  readonly concurrency: number;
  /** A delivery not settled within this time is redelivered (the consumer is presumed dead). */
  readonly ackWaitMs: number;
  /**
   * Deliveries retried with a delay stay unsettled on the broker until they come back. A consumer that parks many
   * of them (webhook jobs waiting for their retry time or for a busy merchant) sets this, so the broker's bound on
   * unsettled deliveries cannot stop the whole consumer; how many are handled at once is still `concurrency`.
   */
  readonly unboundedRetries?: boolean;
  readonly handler: (delivery: Delivery) => Promise<Disposition>;
}

export interface Consumer {
  /** Stops taking deliveries and waits for the ones in hand. */
  stop(): Promise<void>;
}

export interface Transport {
  readonly kind: 'nats' | 'database';
  /** Resolves once the message is durably stored by the transport. */
  publish(subject: string, payload: unknown, options: PublishOptions): Promise<void>;
  consume(spec: ConsumerSpec): Promise<Consumer>;
  /** Request/reply for routing between nodes; rejects with `NoResponderError` when nobody serves the subject. */
  request(subject: string, payload: unknown, timeoutMs: number): Promise<unknown>;
  /** Answers requests on a subject (one of many servers gets each request). */
  serve(subject: string, handler: (payload: unknown) => Promise<unknown>): Promise<{ stop(): Promise<void> }>;
  /**
   * A notice to every process listening on the subject, sent now and stored nowhere: a process that is not
   * listening, or not connected, never gets it. For hints a later read corrects (who holds a shard), never for work.
   */
  notify(subject: string, payload: unknown): void;
  /** Hears every notice on the subject: each listening process gets each one. */
  listen(subject: string, handler: (payload: unknown) => void): Promise<{ stop(): Promise<void> }>;
  /** Resolves when the transport answers; for health checks. */
  ping(): Promise<void>;
  close(): Promise<void>;
}
