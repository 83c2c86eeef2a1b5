import {
  AckPolicy,
  DeliverPolicy,
  DiscardPolicy,
  JetStreamApiError,
  RetentionPolicy,
  StorageType,
  jetstream,
  jetstreamManager,
  type ConsumerConfig,
  type JetStreamManager,
  type JsMsg,
  type StreamConfig,
} from '@nats-io/jetstream';
import {
  RequestError,
  TimeoutError,
  headers as natsHeaders,
  nanos,
  type Msg,
  type MsgHdrs,
  type Subscription,
} from '@nats-io/transport-node';
import { createHandlerSlots } from './handler-slots.js';
import { connectNats } from './nats-connect.js';
import { NO_NAMESPACE, type NatsNames } from './nats-names.js';
import {
  STREAMS,
  retryAfter,
  type Consumer,
  type ConsumerSpec,
  type Delivery,
  type Disposition,
  type Transport,
} from './transport-port.js';
import { DependencyUnavailableError, NoResponderError, RequestTimeoutError } from '../errors/internal-errors.js';

export interface NatsTransportOptions {
  /** Comma-separated server URLs (`NATS_URL`). */
  readonly servers: string;
  /** Connection name shown by the server (monitoring). */
  readonly name?: string;
  /**
   * The deployment's names on the server (`NATS_NAMESPACE`): every stream, subject and durable of the port is mapped
   * through them, and a delivery's subject comes back as the application named it. None by default.
   */
  readonly names?: NatsNames;
  /** Replicas of each stream; 1 on a single server. */
  readonly streamReplicas?: number;
  /** Window in which a repeated publish id is discarded by the stream. */
  readonly duplicateWindowMs?: number;
  /** How long a stream keeps a message nobody consumed (a durable no process pulls from any more). */
  readonly maxAgeMs?: number;
  /** How long a publish waits for the stream's acknowledgement. */
  readonly publishTimeoutMs?: number;
  /** Failures that are handled here but worth a log line (a throwing handler, an undecodable message). */
  readonly onError?: (error: unknown, context: string) => void;
}

export const DEFAULT_DUPLICATE_WINDOW_MS = 2 * 60_000;
export const DEFAULT_MAX_AGE_MS = 7 * 24 * 3_600_000;
/** A handler that throws is retried after this delay (a throw is a bug or an outage, not a decision). */
export const HANDLER_FAILURE_DELAY_MS = 1_000;
/** How long a stopping consumer waits for the server to confirm its unsubscription (one round trip when all is well). */
const DRAIN_WAIT_MS = 2_000;
const MSG_ID_HEADER = 'Nats-Msg-Id';
/** A reply carrying this header is an error raised by the serving handler; its body is `{ message }`. */
const REPLY_ERROR_HEADER = 'Gw-Error';

const encoder = new TextEncoder();
const decoder = new TextDecoder();
const encode = (value: unknown): Uint8Array => encoder.encode(JSON.stringify(value ?? null));
const decode = (data: Uint8Array): unknown => (data.length === 0 ? null : JSON.parse(decoder.decode(data)));

/**
 * The transport port on NATS JetStream (server mode).
 *
 * Streams use the retention their STREAMS entry names (file storage), bounded by `maxAgeMs`: dispatch jobs are a
 * work queue (removed once a connector settles them); receipts and webhook jobs keep limits retention, so at most
 * `maxAgeMs` of them. Interest retention was tried for those two and left: on nats-server 2.9.10, webhook jobs went
 * missing across a server restart under load (seen in the pipeline fault test), which limits retention never did. JetStream cannot
 * change the retention of an existing stream: a stream created with another policy (limits, by earlier versions)
 * keeps it, bounded by `maxAgeMs` only, and `onError` says so at every connect; deleting it while no process runs
 * lets the next start create it right (docs/operations.md).
 *
 * Measured on nats-server 2.9.10: a publish sent while the server restarts can be lost and time out (publish
 * rejects; the caller retries with the same id, which the stream deduplicates, except when the first copy was
 * stored and already consumed from a work-queue stream: a restarted server forgets such ids, so the retry lands a
 * second copy, which the connector's dispatch-id record absorbs, docs/carrier-protocol.md section 4); and a message
 * whose ack wait runs out while no process of its durable is pulling comes back with its delivery count not
 * incremented, so `deliveryCount` is a lower bound after such an outage.
 */
export async function connectNatsTransport(options: NatsTransportOptions): Promise<Transport> {
  const onError = options.onError ?? (() => undefined);
  const names = options.names ?? NO_NAMESPACE;
  const nc = await connectNats({
    servers: options.servers.split(',').map((s) => s.trim()),
    ...(options.name ? { name: options.name } : {}),
    // survive a server restart or a network cut: keep trying, quickly
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
    // the client otherwise builds two stack traces on every request and publish (a tenth of the CPU under load)
    noAsyncTraces: true,
  });
  const jsm = await jetstreamManager(nc);
  const js = jetstream(nc);
  try {
    await ensureStreams(
      jsm,
      names,
      {
        replicas: options.streamReplicas ?? 1,
        duplicateWindowMs: options.duplicateWindowMs ?? DEFAULT_DUPLICATE_WINDOW_MS,
        maxAgeMs: options.maxAgeMs ?? DEFAULT_MAX_AGE_MS,
      },
      onError,
    );
  } catch (error) {
    await nc.close();
    throw error;
  }

  // losing the server is reported at once (the node's outage log), not only through the operations it fails
  let disconnectedFrom: string | null = null;
  const watchStatus = async (): Promise<void> => {
    for await (const status of nc.status()) {
      if (status.type === 'disconnect') {
        disconnectedFrom = status.server;
        onError(new DependencyUnavailableError('transport', new Error(`disconnected from ${status.server}`)), 'connection');
      } else if (status.type === 'reconnect') {
        disconnectedFrom = null;
      }
    }
  };
  watchStatus().catch((error: unknown) => {
    onError(error, 'connection status');
  });

  const consumers = new Set<Consumer>();
  const servers = new Set<{ stop(): Promise<void> }>();

  async function consume(spec: ConsumerSpec): Promise<Consumer> {
    const slots = createHandlerSlots(spec.concurrency);
    const stream = names.stream(STREAMS[spec.stream].name);
    const durable = names.consumer(spec.durable);
    await ensureConsumer(jsm, stream, {
      durable_name: durable,
      filter_subject: names.subject(spec.filter),
      ack_policy: AckPolicy.Explicit,
      deliver_policy: DeliverPolicy.All,
      ack_wait: nanos(spec.ackWaitMs),
      max_deliver: -1,
      // a nak'ed message counts against max_ack_pending until it is redelivered: -1 (unlimited) for consumers that
      // park many (the pull batch, `concurrency`, still bounds what this process holds)
      max_ack_pending: spec.unboundedRetries ? -1 : Math.max(1_000, 10 * spec.concurrency),
    });
    const messages = await (await js.consumers.get(stream, durable)).consume({ max_messages: spec.concurrency });
    // abandoned: stop() gave up waiting, so a handler finishing later behaves as if its process had died
    const state = { stopping: false, abandoned: false };
    // read after awaits, where stop() may have run meanwhile
    const isStopping = (): boolean => state.stopping;

    async function handle(msg: JsMsg): Promise<void> {
      let delivery: Delivery;
      try {
        delivery = toDelivery(msg, names);
      } catch (error) {
        onError(error, `undecodable message ${msg.subject}#${msg.seq} dropped`);
        msg.term();
        return;
      }
      let disposition: Disposition;
      try {
        disposition = await spec.handler(delivery);
      } catch (error) {
        onError(error, `handler of ${spec.durable} failed on ${delivery.subject} ${delivery.id}`);
        disposition = retryAfter(HANDLER_FAILURE_DELAY_MS);
      }
      if (state.abandoned) return;
      settle(msg, disposition);
    }

    const loop = (async () => {
      for await (const msg of messages) {
        if (!isStopping()) await slots.whenFree();
        // hand it back at once rather than let it wait for the ack wait
        if (isStopping()) msg.nak();
        else slots.run(() => handle(msg));
      }
    })().catch((error: unknown) => {
      onError(error, `consumer ${spec.durable} ended`);
    });

    const consumer: Consumer = {
      async stop() {
        if (state.stopping) return;
        state.stopping = true;
        slots.release();
        // disconnected, nothing is in flight to this process, and a drain would wait for the server to come back
        if (disconnectedFrom === null) await drainPullSubscription(messages, DRAIN_WAIT_MS);
        await messages.close();
        await loop;
        await slots.settled(spec.ackWaitMs);
        state.abandoned = true;
        consumers.delete(consumer);
      },
    };
    consumers.add(consumer);
    return consumer;
  }

  async function request(subject: string, payload: unknown, timeoutMs: number): Promise<unknown> {
    // while disconnected the client would buffer the request and send it on reconnecting, perhaps after its caller
    // gave up: a request that may still be applied later. It is refused instead, unsent: nothing applied.
    if (disconnectedFrom !== null)
      throw new DependencyUnavailableError('transport', new Error(`not connected (disconnected from ${disconnectedFrom})`));
    let reply: Msg;
    try {
      reply = await nc.request(names.subject(subject), encode(payload), { timeout: timeoutMs });
    } catch (error) {
      if (error instanceof RequestError && error.isNoResponders()) throw new NoResponderError(subject);
      if (error instanceof TimeoutError || (error instanceof RequestError && error.cause instanceof TimeoutError)) {
        throw new RequestTimeoutError(subject);
      }
      throw error;
    }
    const body = decode(reply.data);
    if (reply.headers?.has(REPLY_ERROR_HEADER)) {
      const message = typeof body === 'object' && body !== null && 'message' in body ? String(body.message) : 'unknown error';
      throw new Error(`handler on ${subject} failed: ${message}`);
    }
    return body;
  }

  async function serve(subject: string, handler: (payload: unknown) => Promise<unknown>): Promise<{ stop(): Promise<void> }> {
    const inFlight = new Set<Promise<void>>();
    const answer = async (msg: Msg): Promise<void> => {
      try {
        msg.respond(encode(await handler(decode(msg.data))));
      } catch (error) {
        const h = natsHeaders();
        h.set(REPLY_ERROR_HEADER, '1');
        msg.respond(encode({ message: error instanceof Error ? error.message : String(error) }), { headers: h });
      }
    };
    const wire = names.subject(subject);
    const sub = nc.subscribe(wire, {
      queue: wire,
      callback: (error, msg) => {
        if (error) {
          onError(error, `serving ${subject}`);
          return;
        }
        const task = answer(msg).finally(() => inFlight.delete(task));
        inFlight.add(task);
      },
    });
    const server = {
      async stop() {
        servers.delete(server);
        if (!sub.isClosed()) await sub.drain().catch(() => undefined);
        await Promise.allSettled([...inFlight]);
      },
    };
    servers.add(server);
    // the server knows the subscription once flushed: a request from another connection then finds it
    await nc.flush();
    return server;
  }

  function notify(subject: string, payload: unknown): void {
    // sent now or never: the client would hold it while disconnected and send it, stale, on reconnecting
    if (disconnectedFrom !== null || nc.isClosed()) return;
    try {
      nc.publish(names.subject(subject), encode(payload));
    } catch (error) {
      onError(error, `notifying ${subject}`);
    }
  }

  async function listen(subject: string, handler: (payload: unknown) => void): Promise<{ stop(): Promise<void> }> {
    const sub = nc.subscribe(names.subject(subject), {
      callback: (error, msg) => {
        if (error) {
          onError(error, `listening on ${subject}`);
          return;
        }
        try {
          handler(decode(msg.data));
        } catch (handlerError) {
          onError(handlerError, `notice on ${subject}`);
        }
      },
    });
    // the server knows the subscription once flushed: a notice sent after this from another connection reaches it
    await nc.flush();
    return {
      async stop() {
        if (!sub.isClosed()) await sub.drain().catch(() => undefined);
      },
    };
  }

  return {
    kind: 'nats',
    async publish(subject, payload, publishOptions) {
      const h = natsHeaders();
      for (const [key, value] of Object.entries(publishOptions.headers ?? {})) h.set(key, value);
      await js.publish(names.subject(subject), encode(payload), {
        msgID: publishOptions.id,
        headers: h,
        timeout: options.publishTimeoutMs ?? 5_000,
      });
    },
    consume,
    request,
    serve,
    notify,
    listen,
    async ping() {
      await nc.rtt();
    },
    async close() {
      await Promise.all([...consumers].map((c) => c.stop()));
      await Promise.all([...servers].map((s) => s.stop()));
      if (!nc.isClosed()) await nc.drain().catch(() => nc.close());
    },
  };
}

/**
 * Drains the subscription a pull consumer's messages arrive on, before the consumer is closed. Closing alone
 * unsubscribes at once, and a delivery the server sent before it saw the unsubscription is dropped by the client:
 * the broker then holds it, unacknowledged, for the whole ack wait (a connector standing by while a job it handed back
 * came round again kept that job 30 s from the instance taking over). Drained, such a delivery still reaches the
 * consumer's loop, which hands it back at once. The client keeps that subscription in a field of its own (it
 * handles a drained one as a normal end); if a later client version has none, closing alone is what remains.
 */
async function drainPullSubscription(messages: object, withinMs: number): Promise<void> {
  const sub: unknown = Reflect.get(messages, 'sub');
  if (!isDrainable(sub) || sub.isClosed() || sub.isDraining()) return;
  let timer: NodeJS.Timeout | undefined;
  // a drain ends with the server's answer to a ping: bounded, so a connection lost meanwhile cannot hold the stop
  await Promise.race([
    sub.drain().catch(() => undefined),
    new Promise<void>((resolve) => {
      timer = setTimeout(resolve, withinMs);
    }),
  ]);
  clearTimeout(timer);
}

function isDrainable(value: unknown): value is Pick<Subscription, 'drain' | 'isClosed' | 'isDraining'> {
  if (typeof value !== 'object' || value === null) return false;
  return ['drain', 'isClosed', 'isDraining'].every((method) => typeof Reflect.get(value, method) === 'function');
}

function toDelivery(msg: JsMsg, names: NatsNames): Delivery {
  return {
    subject: names.localSubject(msg.subject),
    id: msg.headers?.has(MSG_ID_HEADER) ? msg.headers.get(MSG_ID_HEADER) : `${msg.info.stream}:${msg.seq}`,
    payload: decode(msg.data),
    headers: userHeaders(msg.headers),
    deliveryCount: msg.info.deliveryCount,
  };
}

/** The publisher's headers, without the ones NATS sets itself. */
function userHeaders(h: MsgHdrs | undefined): Record<string, string> {
  const result: Record<string, string> = {};
  if (!h) return result;
  for (const [key, values] of h) {
    if (key.startsWith('Nats-')) continue;
    const value = values[0];
    if (value !== undefined) result[key] = value;
  }
  return result;
}

function settle(msg: JsMsg, disposition: Disposition): void {
  switch (disposition.type) {
    case 'ack':
      msg.ack();
      return;
    case 'retry':
      if (disposition.delayMs > 0) msg.nak(disposition.delayMs);
      else msg.nak();
      return;
    case 'drop':
      // no reason: nats-server 2.9 redelivers a message terminated with a reason
      msg.term();
      return;
  }
}

/** "stream name already in use with a different configuration" */
const STREAM_NAME_IN_USE = 10058;

const RETENTION: Readonly<Record<(typeof STREAMS)[keyof typeof STREAMS]['retention'], RetentionPolicy>> = {
  work_queue: RetentionPolicy.Workqueue,
  limits: RetentionPolicy.Limits,
};

/** Creates the streams, or brings an existing one to the current settings (all but its retention, which cannot change). */
async function ensureStreams(
  jsm: JetStreamManager,
  names: NatsNames,
  settings: { replicas: number; duplicateWindowMs: number; maxAgeMs: number },
  onError: (error: unknown, context: string) => void,
): Promise<void> {
  for (const stream of Object.values(STREAMS)) {
    const name = names.stream(stream.name);
    const { retention } = stream;
    const config: Partial<StreamConfig> & { name: string } = {
      name,
      subjects: [names.subject(stream.subjects)],
      storage: StorageType.File,
      retention: RETENTION[retention],
      discard: DiscardPolicy.Old,
      num_replicas: settings.replicas,
      max_age: nanos(settings.maxAgeMs),
      duplicate_window: nanos(Math.min(settings.duplicateWindowMs, settings.maxAgeMs)),
    };
    try {
      await jsm.streams.add(config);
    } catch (error) {
      if (!(error instanceof JetStreamApiError && error.code === STREAM_NAME_IN_USE)) throw error;
      const { storage: _storage, retention: _retention, ...updatable } = config;
      const updated = await jsm.streams.update(name, updatable);
      if (updated.config.retention !== config.retention) {
        onError(
          new Error(`stream ${name} has ${updated.config.retention} retention, not ${config.retention}`),
          `stream ${name} keeps consumed messages until they are ${Math.round(settings.maxAgeMs / 3_600_000)} h old: ` +
            'delete it while no gateway or connector runs, once its consumers have nothing pending, and the next start creates it with ' +
            `${config.retention} retention (docs/operations.md)`,
        );
      }
    }
  }
}

async function ensureConsumer(
  jsm: JetStreamManager,
  stream: string,
  config: Partial<ConsumerConfig> & { durable_name: string },
): Promise<void> {
  try {
    await jsm.consumers.add(stream, config);
  } catch (error) {
    // the durable exists with other settings (a new ack wait, a new filter): update it in place; when there is no
    // such durable, the refusal was about something else (an overlapping filter on a work-queue stream): say that
    if (!(error instanceof JetStreamApiError)) throw error;
    const { durable_name, deliver_policy: _deliverPolicy, ack_policy: _ackPolicy, ...updatable } = config;
    const existing = await jsm.consumers.info(stream, durable_name).catch(() => null);
    if (existing === null) throw error;
    await jsm.consumers.update(stream, durable_name, updatable);
  }
}
