import type { Clock } from '../clock/clock.js';
import type { Outbox, PendingOutboxEntry } from './journal-port.js';

/** Relays one topic: returns the ids it has carried out (they are then marked done). */
export interface TopicHandler {
  handle(entries: readonly PendingOutboxEntry[]): Promise<readonly string[]>;
  /** Leave entries younger than this alone (the normal path usually completes them first). */
  readonly graceMs?: number;
}

export interface OutboxRelayOptions {
  readonly outbox: Outbox;
  readonly clock: Clock;
  readonly handlers: Readonly<Record<string, TopicHandler>>;
  readonly pollIntervalMs: number;
  readonly batchSize: number;
  /** Shards this node relays; undefined = all (single node). */
  readonly shards?: () => readonly number[] | undefined;
  readonly onError?: (error: unknown) => void;
}

export interface OutboxRelay {
  start(): void;
  stop(): Promise<void>;
  /** One pass over everything pending now; resolves when it is done (tests, shutdown). */
  drain(): Promise<void>;
}

/**
 * Carries outbox entries out (publish to the transport, finish a send) and marks them done. At least once: after a
 * crash an entry not yet marked is carried out again, and its consumers deduplicate on the entry id.
 */
export function createOutboxRelay(options: OutboxRelayOptions): OutboxRelay {
  let running = false;
  let timer: NodeJS.Timeout | null = null;
  /**
   * Each topic drains on its own: a slow one (webhook events ask each key for its endpoint) never holds another
   * (dispatches) up. `again`: a trigger arrived while its pass ran, so the pass goes round once more.
   */
  const lanes = Object.entries(options.handlers).map(([topic, handler]) => ({ topic, handler, pass: null as Promise<void> | null, again: false }));
  let unsubscribe: (() => void) | null = null;

  async function relayTopic(topic: string, handler: TopicHandler): Promise<boolean> {
    // an entry exactly graceMs old is no longer younger than the grace period (`olderThan` is exclusive): the
    // 24-hour receipt deadline is reached at 24 h, not 24 h + 1 ms
    const olderThan = handler.graceMs ? options.clock.now() - handler.graceMs + 1 : undefined;
    const shards = options.shards?.();
    const entries = await options.outbox.pending({
      limit: options.batchSize,
      topics: [topic],
      ...(shards ? { shards } : {}),
      ...(olderThan !== undefined ? { olderThan } : {}),
    });
    if (entries.length === 0) return false;
    const done = await handler.handle(entries);
    await options.outbox.markDone(done);
    return entries.length === options.batchSize && done.length > 0;
  }

  /** Batch after batch of one topic until it has nothing left (or fails: the next pass tries again). */
  async function drainTopic(topic: string, handler: TopicHandler): Promise<void> {
    try {
      while (await relayTopic(topic, handler));
    } catch (error) {
      options.onError?.(error);
    }
  }

  function triggerLane(lane: (typeof lanes)[number]): Promise<void> {
    if (lane.pass) {
      lane.again = true;
      return lane.pass;
    }
    const takeAgain = (): boolean => {
      const again = lane.again;
      lane.again = false;
      return again;
    };
    const run = async (): Promise<void> => {
      do await drainTopic(lane.topic, lane.handler);
      while (takeAgain());
    };
    lane.pass = run().finally(() => {
      lane.pass = null;
    });
    return lane.pass;
  }

  async function trigger(): Promise<void> {
    await Promise.all(lanes.map(triggerLane));
  }

  function schedule(): void {
    if (!running) return;
    // lanes still busy only note that they should go round again: the poll never waits for the slowest
    timer = setTimeout(() => {
      void trigger();
      schedule();
    }, options.pollIntervalMs);
  }

  return {
    start() {
      if (running) return;
      running = true;
      // an append wakes the lanes of the topics it wrote; a lane with a grace period waits for its poll (what was
      // just written is younger than the grace by definition)
      unsubscribe = options.outbox.onAppended((topics) => {
        for (const lane of lanes) if (topics.has(lane.topic) && !lane.handler.graceMs) void triggerLane(lane);
      });
      void trigger();
      schedule();
    },
    async stop() {
      running = false;
      unsubscribe?.();
      if (timer) clearTimeout(timer);
      await Promise.all(lanes.flatMap((lane) => (lane.pass ? [lane.pass] : [])));
    },
    drain: () => trigger(),
  };
}

/** Collects ids to mark done and writes them in one statement every few milliseconds. */
export function createDoneMarker(outbox: Outbox, flushMs: number, onError?: (error: unknown) => void) {
  let ids: string[] = [];
  let timer: NodeJS.Timeout | null = null;
  async function flush(): Promise<void> {
    timer = null;
    const batch = ids;
    ids = [];
    if (batch.length > 0) await outbox.markDone(batch).catch((error: unknown) => onError?.(error));
  }
  return {
    mark(id: string) {
      ids.push(id);
      timer ??= setTimeout(() => void flush(), flushMs);
    },
    async flush() {
      if (timer) clearTimeout(timer);
      await flush();
    },
  };
}

/**
 * Runs the tasks of a batch of outbox entries (each entry has one or more: a publish per recipient, a job to
 * save), at most `limit` at once across the batch, and returns the ids of the entries all of whose tasks succeeded,
 * in entry order. An entry with a failed task stays pending for the next pass (its tasks are idempotent: publish ids,
 * unique jobs); the first failure of the batch goes to `onError`.
 */
export async function runEntryTasks(
  entries: readonly PendingOutboxEntry[],
  tasksOf: (entry: PendingOutboxEntry) => readonly (() => Promise<void>)[],
  limit: number,
  onError: (error: unknown) => void,
): Promise<string[]> {
  const queue = entries.flatMap((entry, index) => tasksOf(entry).map((task) => ({ index, task })));
  const failed = new Set<number>();
  let reported = false;
  let next = 0;
  async function worker(): Promise<void> {
    for (let item = queue[next++]; item !== undefined; item = queue[next++]) {
      const { index, task } = item;
      if (failed.has(index)) continue;
      try {
        await task();
      } catch (error) {
        failed.add(index);
        if (!reported) {
          reported = true;
          onError(error);
        }
      }
    }
  }
  await Promise.all(Array.from({ length: Math.max(1, Math.min(limit, queue.length)) }, worker));
  return entries.filter((_, index) => !failed.has(index)).map((entry) => entry.id);
}
