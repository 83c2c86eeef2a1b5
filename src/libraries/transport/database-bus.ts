import { systemClock, type Clock } from '../clock/clock.js';
import { createGroupCommit, settledTogether } from '../persistence/group-commit.js';
import type { SqlExecutor } from '../persistence/sql/sql-executor.js';
import { createHandlerSlots } from './handler-slots.js';
import { subjectMatches, subjectPattern } from './subjects.js';
import {
  STREAMS,
  retryAfter,
  type Consumer,
  type ConsumerSpec,
  type Delivery,
  type Disposition,
  type StreamName,
  type Transport,
} from './transport-port.js';
import { NoResponderError, RequestTimeoutError } from '../errors/internal-errors.js';

export interface DatabaseBusOptions {
  /** The journal's database, with the bus migration applied (`bus-migration.ts`). */
  readonly db: SqlExecutor;
  readonly clock?: Clock;
  /** How often a consumer looks for work it was not woken for (delayed retries, other processes' publishes). */
  readonly pollIntervalMs?: number;
  /** How long a settled message's id still deduplicates publishes. */
  readonly dedupeWindowMs?: number;
  /** A message is deleted after this whatever its deliveries (the stream's max age in NATS). */
  readonly maxAgeMs?: number;
  readonly purgeIntervalMs?: number;
  readonly onError?: (error: unknown, context: string) => void;
}

export const DEFAULT_POLL_INTERVAL_MS = 100;
export const DEFAULT_DEDUPE_WINDOW_MS = 2 * 60_000;
export const DEFAULT_MAX_AGE_MS = 7 * 24 * 3_600_000;
/** A handler that throws is retried after this delay (a throw is a bug or an outage, not a decision). */
export const HANDLER_FAILURE_DELAY_MS = 1_000;
/**
 * A publish that started before a new durable was registered may commit after the durable's first catch-up: a
 * second catch-up this much later picks it up (publishes are single short statements).
 */
const CATCH_UP_AGAIN_AFTER_MS = 2_000;

interface Publication {
  readonly id: string;
  readonly stream: StreamName;
  readonly subject: string;
  /** JSON text */
  readonly payload: string;
  readonly headers: string;
}

interface Settlement {
  readonly id: string;
  readonly deliveryCount: number;
  readonly disposition: Disposition;
}

interface ClaimedRow {
  readonly id: string;
  readonly subject: string;
  readonly payload: unknown;
  readonly headers: Record<string, string> | null;
  readonly delivery_count: number;
}

/**
 * The transport port on the journal's database (embedded mode): durable because a publish is a row, written to the
 * same database as the state change that caused it.
 *
 * Fan-out per durable, like JetStream consumers: a publish inserts the message and, in the same statement, one
 * delivery row for every registered durable whose filter matches. A durable registered later catches up on the
 * messages still stored. Each delivery row is claimed by one process at a time (`FOR UPDATE SKIP LOCKED`), so
 * processes using the same durable share its work.
 */
export function createDatabaseBus(options: DatabaseBusOptions): Transport {
  const db = options.db;
  const clock = options.clock ?? systemClock;
  const pollIntervalMs = options.pollIntervalMs ?? DEFAULT_POLL_INTERVAL_MS;
  const dedupeWindowMs = options.dedupeWindowMs ?? DEFAULT_DEDUPE_WINDOW_MS;
  const maxAgeMs = options.maxAgeMs ?? DEFAULT_MAX_AGE_MS;
  const onError = options.onError ?? (() => undefined);

  const localConsumers = new Set<{ readonly spec: ConsumerSpec; wake(): void; stop(): Promise<void> }>();
  const servers = new Map<string, ((payload: unknown) => Promise<unknown>)[]>();
  let nextServer = 0;
  let closed = false;

  const purgeTimer = setInterval(() => {
    purge().catch((error: unknown) => {
      onError(error, 'bus purge');
    });
  }, options.purgeIntervalMs ?? 30_000);
  purgeTimer.unref();

  async function purge(): Promise<void> {
    const now = clock.now();
    // settled everywhere and past the dedupe window
    await db.query(
      `DELETE FROM bus_messages WHERE id IN (
         SELECT m.id FROM bus_messages m
         WHERE m.created_at < $1
           AND EXISTS (SELECT 1 FROM bus_deliveries d WHERE d.message_id = m.id)
           AND NOT EXISTS (SELECT 1 FROM bus_deliveries d WHERE d.message_id = m.id AND d.done_at IS NULL)
         LIMIT 5000)`,
      [now - dedupeWindowMs],
    );
    await db.query('DELETE FROM bus_messages WHERE id IN (SELECT id FROM bus_messages WHERE created_at < $1 LIMIT 5000)', [now - maxAgeMs]);
  }

  /** Publishes that arrive while a batch is being written share the next statement (group commit). */
  const writePublishes = createGroupWriter<Publication>(async (batch) => {
    await db.query(
      `WITH message AS (
         INSERT INTO bus_messages (id, stream, subject, payload, headers, created_at)
         SELECT p.id, p.stream, p.subject, p.payload::jsonb, p.headers::jsonb, $6
         FROM unnest($1::text[], $2::text[], $3::text[], $4::text[], $5::text[]) WITH ORDINALITY AS p (id, stream, subject, payload, headers, n)
         ORDER BY p.n
         ON CONFLICT (id) DO NOTHING
         RETURNING id, stream, subject
       )
       INSERT INTO bus_deliveries (consumer, message_id, deliver_at)
       SELECT c.name, message.id, $6 FROM message JOIN bus_consumers c ON c.stream = message.stream AND message.subject ~ c.pattern`,
      [
        batch.map((p) => p.id),
        batch.map((p) => p.stream),
        batch.map((p) => p.subject),
        batch.map((p) => p.payload),
        batch.map((p) => p.headers),
        clock.now(),
      ],
    );
  });

  async function publish(
    subject: string,
    payload: unknown,
    publishOptions: { id: string; headers?: Readonly<Record<string, string>> },
  ): Promise<void> {
    if (closed) throw new Error('database bus closed');
    const stream = streamOf(subject);
    await writePublishes({
      id: publishOptions.id,
      stream,
      subject,
      payload: JSON.stringify(payload ?? null),
      headers: JSON.stringify(publishOptions.headers ?? {}),
    });
    for (const local of localConsumers) {
      if (local.spec.stream === stream && subjectMatches(local.spec.filter, subject)) local.wake();
    }
  }

  async function register(spec: ConsumerSpec): Promise<void> {
    await db.query(
      `INSERT INTO bus_consumers (name, stream, filter, pattern, created_at) VALUES ($1, $2, $3, $4, $5)
       ON CONFLICT (name) DO UPDATE SET stream = EXCLUDED.stream, filter = EXCLUDED.filter, pattern = EXCLUDED.pattern`,
      [spec.durable, spec.stream, spec.filter, subjectPattern(spec.filter), clock.now()],
    );
  }

  /** Gives the durable a delivery for every stored message it matches and lacks (a settled one is not redone). */
  async function catchUp(spec: ConsumerSpec): Promise<void> {
    await db.query(
      `INSERT INTO bus_deliveries (consumer, message_id, deliver_at)
       SELECT $1, m.id, m.created_at FROM bus_messages m WHERE m.stream = $2 AND m.subject ~ $3
       ON CONFLICT (consumer, message_id) DO NOTHING`,
      [spec.durable, spec.stream, subjectPattern(spec.filter)],
    );
  }

  async function claim(spec: ConsumerSpec, limit: number): Promise<readonly ClaimedRow[]> {
    const now = clock.now();
    // one statement: on PGlite an open transaction would block every other query
    return db.query<ClaimedRow>(
      `UPDATE bus_deliveries d
       SET deliver_at = $3, locked_until = $3, delivery_count = d.delivery_count + 1
       FROM bus_messages m
       WHERE m.id = d.message_id AND d.consumer = $1 AND d.message_id IN (
         SELECT message_id FROM bus_deliveries
         WHERE consumer = $1 AND done_at IS NULL AND deliver_at <= $2
         ORDER BY deliver_at
         LIMIT $4
         FOR UPDATE SKIP LOCKED)
       RETURNING d.message_id AS id, m.subject, m.payload, m.headers, d.delivery_count`,
      [spec.durable, now, now + spec.ackWaitMs, limit],
    );
  }

  /**
   * Applies dispositions unless the delivery was claimed again meanwhile (its ack wait ran out).
   */
  async function settleBatch(durable: string, batch: readonly Settlement[]): Promise<void> {
    const now = clock.now();
    await db.query(
      `UPDATE bus_deliveries d
       SET done_at = CASE WHEN s.retry_at IS NULL THEN $5::bigint END,
           deliver_at = COALESCE(s.retry_at, d.deliver_at),
           locked_until = 0
       FROM unnest($2::text[], $3::int[], $4::bigint[]) AS s (message_id, delivery_count, retry_at)
       WHERE d.consumer = $1 AND d.message_id = s.message_id AND d.delivery_count = s.delivery_count AND d.done_at IS NULL`,
      [
        durable,
        batch.map((s) => s.id),
        batch.map((s) => s.deliveryCount),
        batch.map((s) => (s.disposition.type === 'retry' ? now + Math.max(0, s.disposition.delayMs) : null)),
        now,
      ],
    );
  }

  async function consume(spec: ConsumerSpec): Promise<Consumer> {
    if (closed) throw new Error('database bus closed');
    if (!(spec.stream in STREAMS)) throw new Error(`unknown stream ${spec.stream}`);
    const slots = createHandlerSlots(spec.concurrency);
    const settle = createGroupWriter<Settlement>((batch) => settleBatch(spec.durable, batch));
    await register(spec);
    await catchUp(spec);

    // an object, not lets: the loop reads them after awaits, where another task may have changed them
    const state = { stopping: false, abandoned: false };
    const isStopping = (): boolean => state.stopping;
    let woken = false;
    let wakeUp: (() => void) | null = null;
    const wake = (): void => {
      woken = true;
      wakeUp?.();
    };
    const sleep = (ms: number): Promise<void> =>
      new Promise((resolve) => {
        if (woken || state.stopping) {
          resolve();
          return;
        }
        const timer = setTimeout(done, ms);
        function done(): void {
          clearTimeout(timer);
          wakeUp = null;
          resolve();
        }
        wakeUp = done;
      });
    const catchUpAgain = setTimeout(() => {
      catchUp(spec).then(wake, (error: unknown) => {
        onError(error, `catch-up of ${spec.durable}`);
      });
    }, CATCH_UP_AGAIN_AFTER_MS);
    catchUpAgain.unref();

    async function handle(row: ClaimedRow): Promise<void> {
      const delivery: Delivery = {
        subject: row.subject,
        id: row.id,
        payload: row.payload,
        headers: row.headers ?? {},
        deliveryCount: row.delivery_count,
      };
      let disposition: Disposition;
      try {
        disposition = await spec.handler(delivery);
      } catch (error) {
        onError(error, `handler of ${spec.durable} failed on ${row.subject} ${row.id}`);
        disposition = retryAfter(HANDLER_FAILURE_DELAY_MS);
      }
      if (state.abandoned) return;
      try {
        await settle({ id: row.id, deliveryCount: row.delivery_count, disposition });
      } catch (error) {
        // the claim runs out and the delivery comes back
        onError(error, `settling ${row.id} for ${spec.durable}`);
      }
      wake();
    }

    const loop = (async () => {
      while (!state.stopping) {
        await slots.whenFree();
        if (isStopping()) break;
        woken = false;
        const free = slots.free;
        let rows: readonly ClaimedRow[] = [];
        try {
          rows = await claim(spec, free);
        } catch (error) {
          onError(error, `claiming for ${spec.durable}`);
        }
        // a claim that raced with stop() is handled anyway: its handlers are waited for like the others
        for (const row of rows) slots.run(() => handle(row));
        if (rows.length < free) await sleep(pollIntervalMs);
      }
    })();

    const local = {
      spec,
      wake,
      async stop() {
        if (state.stopping) return;
        state.stopping = true;
        clearTimeout(catchUpAgain);
        wakeUp?.();
        slots.release();
        await loop;
        await slots.settled(spec.ackWaitMs);
        state.abandoned = true;
        localConsumers.delete(local);
      },
    };
    localConsumers.add(local);
    return { stop: () => local.stop() };
  }

  async function request(subject: string, payload: unknown, timeoutMs: number): Promise<unknown> {
    const handlers = [...servers].filter(([served]) => subjectMatches(served, subject)).flatMap(([, list]) => list);
    if (handlers.length === 0) throw new NoResponderError(subject);
    const handler = handlers[nextServer++ % handlers.length];
    if (!handler) throw new NoResponderError(subject);
    let timer: NodeJS.Timeout | undefined;
    const timeout = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        reject(new RequestTimeoutError(subject));
      }, timeoutMs);
    });
    try {
      // copies both ways, as over the wire: no shared mutable objects between requester and server
      const answer = handler(copy(payload)).then(copy, (error: unknown) => {
        throw new Error(`handler on ${subject} failed: ${error instanceof Error ? error.message : String(error)}`);
      });
      return await Promise.race([answer, timeout]);
    } finally {
      clearTimeout(timer);
    }
  }

  function serve(subject: string, handler: (payload: unknown) => Promise<unknown>): Promise<{ stop(): Promise<void> }> {
    const list = servers.get(subject) ?? [];
    list.push(handler);
    servers.set(subject, list);
    return Promise.resolve({
      stop() {
        const current = servers.get(subject) ?? [];
        const rest = current.filter((h) => h !== handler);
        if (rest.length === 0) servers.delete(subject);
        else servers.set(subject, rest);
        return Promise.resolve();
      },
    });
  }

  /** Notices stay in this process, like requests: embedded mode is one node. */
  const listeners = new Map<string, Set<(payload: unknown) => void>>();

  function notify(subject: string, payload: unknown): void {
    for (const [listened, handlers] of listeners) {
      if (!subjectMatches(listened, subject)) continue;
      for (const handler of handlers) {
        // as over the wire: later, and a copy of its own
        const notice = copy(payload);
        queueMicrotask(() => {
          try {
            handler(notice);
          } catch (error) {
            // the listener's failure, reported; the notifier never hears of it, as on NATS
            onError(error, `notice on ${subject}`);
          }
        });
      }
    }
  }

  function listen(subject: string, handler: (payload: unknown) => void): Promise<{ stop(): Promise<void> }> {
    const handlers = listeners.get(subject) ?? new Set();
    // its own entry: the same handler listening twice hears each notice twice, and each stop ends one
    const own = (payload: unknown): void => {
      handler(payload);
    };
    handlers.add(own);
    listeners.set(subject, handlers);
    return Promise.resolve({
      stop() {
        handlers.delete(own);
        if (handlers.size === 0 && listeners.get(subject) === handlers) listeners.delete(subject);
        return Promise.resolve();
      },
    });
  }

  return {
    kind: 'database',
    publish,
    consume,
    request,
    serve,
    notify,
    listen,
    async ping() {
      await db.query('SELECT 1');
    },
    async close() {
      closed = true;
      clearInterval(purgeTimer);
      servers.clear();
      listeners.clear();
      await Promise.all([...localConsumers].map((c) => c.stop()));
    },
  };
}

function streamOf(subject: string): StreamName {
  for (const [name, stream] of Object.entries(STREAMS) as [StreamName, (typeof STREAMS)[StreamName]][]) {
    if (subjectMatches(stream.subjects, subject)) return name;
  }
  throw new Error(`no stream holds subject ${subject}`);
}

const copy = (value: unknown): unknown => (value === undefined ? null : JSON.parse(JSON.stringify(value)));

/**
 * Group commit for publishes and settlements: the first item is written at once; items that arrive while a write is
 * in progress go together in the next statement. Every statement costs a fixed overhead (large on PGlite), so under
 * load this multiplies throughput without adding latency when idle. Each caller's promise settles with its batch; a
 * failed batch is retried item by item.
 */
function createGroupWriter<T>(write: (batch: readonly T[]) => Promise<void>): (item: T) => Promise<void> {
  return createGroupCommit<T>(
    { groupCommit: true, maxBatch: 500, maxConcurrentBatches: 1, firstWrite: 'at-once' },
    settledTogether(write, { aloneOnFailure: true }),
  );
}
