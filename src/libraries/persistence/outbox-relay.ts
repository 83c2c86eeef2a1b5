import pLimit from 'p-limit';
import type { Clock } from '../clock/clock.js';
import { UnreadablePayloadError } from '../errors/internal-errors.js';
import { createGroupCommit, settledTogether } from './group-commit.js';
import type { Outbox, PendingOutboxEntry } from './journal-port.js';

/** An outbox entry whose payload its topic's check has accepted. */
export type RelayedEntry<P> = Omit<PendingOutboxEntry, 'payload'> & { readonly payload: P };

/**
 * What a handler carried out in part: `done` now, and `awaiting`, whose work goes on after `handle` returns; `later`
 * resolves with those of `awaiting` that were done in the end (the others stay pending). Until it settles the relay
 * keeps `awaiting` in flight: no poll carries them out again, and `stop()` and `drain()` wait for them.
 */
export interface HandledInPart {
  readonly done: readonly string[];
  readonly awaiting: readonly string[];
  readonly later: Promise<readonly string[]>;
}

/**
 * Relays one topic: returns the ids it has carried out (they are then marked done), or those and the ids it finishes
 * later (HandledInPart). `accepts` is the one place the topic's payloads, read back from storage as unknown JSON, are
 * checked: `handle` only ever sees what it accepted.
 */
export interface TopicHandler<P = unknown> {
  accepts(payload: unknown): payload is P;
  handle(entries: readonly RelayedEntry<P>[]): Promise<readonly string[] | HandledInPart>;
  /** Leave entries younger than this alone (the normal path usually completes them first). */
  readonly graceMs?: number;
}

/** A handler per topic, each given the payload type of its topic (`PayloadsByTopic` of an effect union). */
export type TopicHandlers<M> = { readonly [T in keyof M & string]?: TopicHandler<M[T]> };

export interface OutboxRelayOptions<M> {
  readonly outbox: Outbox;
  readonly clock: Clock;
  readonly handlers: TopicHandlers<M>;
  readonly pollIntervalMs: number;
  readonly batchSize: number;
  /** Shards this node relays; undefined = all (single node). */
  readonly shards?: () => readonly number[] | undefined;
  readonly onError?: (error: unknown) => void;
}

/** Any payload: for a topic whose handler reads nothing from it. */
export const anyPayload = (payload: unknown): payload is unknown => payload !== undefined;

export interface OutboxRelay {
  start(): void;
  stop(): Promise<void>;
  /** One pass over everything pending now; resolves when it is done (tests, shutdown). */
  drain(): Promise<void>;
}

/**
 * Entries this process just wrote are handed to their lane in memory; a poll queries only for entries older than
 * this (missed by that path: a failed publish, a crash, another writer), so the two paths rarely meet.
 */
export const FRESH_ENTRY_MS = 2_000;

/**
 * A relay that has had no entry handed over by an append, no lane found due, no failed probe and no change of shards
 * for this long is idle: its polls then back off, doubling from `pollIntervalMs` up to IDLE_POLL_MAX_MS. What a poll
 * looks for is at least FRESH_ENTRY_MS old anyway: an idle node asks its database a tenth as often (at the default
 * 200 ms) and finds an entry left behind at most IDLE_POLL_MAX_MS later. Any of the four makes it busy again at once,
 * and a poll set far off while idle is set again at the interval.
 */
export const IDLE_AFTER_MS = 10_000;
export const IDLE_POLL_MAX_MS = 2_000;

/** Batches of fresh entries of one topic carried out at once. */
export const LANE_CHUNKS_AT_ONCE = 4;

/**
 * Carries outbox entries out (publish to the transport, finish a send) and marks them done. At least once: after a
 * crash an entry not yet marked is carried out again, and its consumers deduplicate on the entry id.
 *
 * Two ways in: the entries an append of this process wrote come straight from the journal's notice (no query), and
 * a poll every `pollIntervalMs` (backing off while the relay is idle: IDLE_AFTER_MS) asks the outbox which lanes
 * have entries still pending and older than FRESH_ENTRY_MS (one query for all lanes), and those lanes query for them.
 */
export function createOutboxRelay<M>(options: OutboxRelayOptions<M>): OutboxRelay {
  let running = false;
  let timer: NodeJS.Timeout | null = null;
  /**
   * Each topic drains on its own: a slow one (webhook events ask each key for its endpoint) never holds another
   * (dispatches) up. `fresh`: entries handed over by appends, waiting; `inFlight`: ids being carried out now (a
   * poll that meets them leaves them alone, including ids a handler finishes later); `later`: those finishings,
   * awaited by stop and drain; `query`: a poll or drain asked for a pass over the outbox, with or without the
   * freshness limit; `again`: a trigger arrived while its pass ran, so the pass goes round once more.
   */
  const routes: [string, TopicHandler | undefined][] = Object.entries(options.handlers);
  const lanes = routes
    .flatMap(([topic, handler]) => (handler ? [{ topic, handler }] : []))
    .map(({ topic, handler }) => ({
      topic,
      handler,
      pass: null as Promise<void> | null,
      again: false,
      fresh: [] as PendingOutboxEntry[],
      inFlight: new Set<string>(),
      later: new Set<Promise<void>>(),
      query: null as 'poll' | 'all' | null,
    }));
  type Lane = (typeof lanes)[number];
  const laneOf = new Map(lanes.map((lane) => [lane.topic, lane]));
  // the lanes' done marks meet: while one delete runs, the marks arriving wait and go out together in the next
  const markDone = createGroupCommit<readonly string[]>(
    { groupCommit: true, maxBatch: 64, maxConcurrentBatches: 1 },
    settledTogether(async (marks) => {
      await options.outbox.markDone(marks.flat());
    }),
  );
  let unsubscribe: (() => void) | null = null;

  /** The entries whose payload the lane's handler accepts; the others are reported and stay pending. */
  function readable(lane: Lane, entries: readonly PendingOutboxEntry[]): RelayedEntry<unknown>[] {
    const accepted: RelayedEntry<unknown>[] = [];
    const refused: string[] = [];
    for (const entry of entries) {
      if (lane.handler.accepts(entry.payload)) accepted.push(entry);
      else refused.push(entry.id);
    }
    if (refused.length > 0) options.onError?.(new UnreadablePayloadError(lane.topic, refused));
    return accepted;
  }

  /**
   * Carries a batch out and marks what was done; returns how many entries were done or taken on to finish later.
   * Ids a handler finishes later stay in flight until it has; what it finished then is marked done, the rest (or
   * all, if it failed) stays pending for a poll.
   */
  async function carryOut(lane: Lane, entries: readonly PendingOutboxEntry[]): Promise<number> {
    for (const entry of entries) lane.inFlight.add(entry.id);
    let awaiting: ReadonlySet<string> = new Set();
    try {
      const handled = await lane.handler.handle(readable(lane, entries));
      const done = isHandledInPart(handled) ? handled.done : handled;
      if (isHandledInPart(handled)) {
        awaiting = new Set(handled.awaiting);
        finishLater(lane, handled);
      }
      if (done.length > 0) await markDone(done);
      return done.length + awaiting.size;
    } finally {
      for (const entry of entries) if (!awaiting.has(entry.id)) lane.inFlight.delete(entry.id);
    }
  }

  function finishLater(lane: Lane, handled: HandledInPart): void {
    const finishing: Promise<void> = handled.later
      .then(async (done) => {
        const awaited = new Set(handled.awaiting);
        const marks = done.filter((id) => awaited.has(id));
        if (marks.length > 0) await markDone(marks);
      })
      .catch((error: unknown) => options.onError?.(error))
      .finally(() => {
        for (const id of handled.awaiting) lane.inFlight.delete(id);
        lane.later.delete(finishing);
      });
    lane.later.add(finishing);
  }

  /** Until no lane has anything finishing later (what finishes may start more). */
  async function laterSettled(): Promise<void> {
    for (;;) {
      const finishing = lanes.flatMap((lane) => [...lane.later]);
      if (finishing.length === 0) return;
      await Promise.all(finishing);
    }
  }

  /** The age a lane's entries must have reached to be queried: its grace, and on a poll the fresh period. */
  function olderThanOf(lane: Lane, all: boolean, now: number): number | undefined {
    // an entry exactly graceMs old is no longer younger than the grace period (`olderThan` is exclusive): the
    // 24-hour receipt deadline is reached at 24 h, not 24 h + 1 ms
    const grace = Math.max(lane.handler.graceMs ?? 0, all ? 0 : FRESH_ENTRY_MS);
    return grace > 0 ? now - grace + 1 : undefined;
  }

  async function queryBatch(lane: Lane, all: boolean): Promise<boolean> {
    const olderThan = olderThanOf(lane, all, options.clock.now());
    const shards = options.shards?.();
    const found = await options.outbox.pending({
      limit: options.batchSize,
      topics: [lane.topic],
      ...(shards ? { shards } : {}),
      ...(olderThan !== undefined ? { olderThan } : {}),
    });
    // entries an append handed over that still wait in the lane (older than the fresh period on a busy node) are
    // carried out by that path, not a second time by this one
    const waiting = new Set(lane.fresh.map((entry) => entry.id));
    const entries = found.filter((entry) => !lane.inFlight.has(entry.id) && !waiting.has(entry.id));
    if (entries.length === 0) return false;
    const progressed = await carryOut(lane, entries);
    return found.length === options.batchSize && progressed > 0;
  }

  /**
   * The fresh entries, up to LANE_CHUNKS_AT_ONCE batches at a time: while one batch waits for its done marks,
   * the next is already being published. A batch that fails is reported and stays pending for a poll.
   */
  async function carryOutFresh(lane: Lane): Promise<void> {
    const running = new Set<Promise<void>>();
    while (lane.fresh.length > 0) {
      const task: Promise<void> = carryOut(lane, lane.fresh.splice(0, options.batchSize)).then(
        () => undefined,
        (error: unknown) => options.onError?.(error),
      );
      running.add(task);
      void task.finally(() => running.delete(task));
      if (running.size >= LANE_CHUNKS_AT_ONCE) await Promise.race(running);
    }
    await Promise.all(running);
  }

  /** Fresh entries first, then the outbox if a poll or drain asked, batch after batch (a failure waits for the next pass). */
  async function drainLane(lane: Lane): Promise<void> {
    try {
      await carryOutFresh(lane);
      const query = lane.query;
      lane.query = null;
      if (query) while (await queryBatch(lane, query === 'all'));
    } catch (error) {
      options.onError?.(error);
    }
  }

  function triggerLane(lane: Lane, query: 'poll' | 'all' | null): Promise<void> {
    if (query === 'all' || (query === 'poll' && lane.query === null)) lane.query = query;
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
      do await drainLane(lane);
      while (takeAgain());
    };
    lane.pass = run().finally(() => {
      lane.pass = null;
    });
    return lane.pass;
  }

  /** Every lane, over everything pending whatever its age (start, drain); a poll goes through `poll()`. */
  async function triggerAll(): Promise<void> {
    await Promise.all(lanes.map((lane) => triggerLane(lane, 'all')));
  }

  /**
   * A poll: one query asks which lanes have entries due (past their grace and the fresh period); only those lanes
   * query for them. A relay with nothing left behind makes one round trip per poll, not one per lane.
   */
  async function poll(): Promise<void> {
    const now = options.clock.now();
    const shards = options.shards?.();
    const shardSet = shards?.join(',') ?? null;
    if (shardSet !== polledShards) {
      polledShards = shardSet;
      wake();
    }
    let due: ReadonlySet<string>;
    try {
      due = await options.outbox.pendingTopics({
        topics: lanes.map((lane) => {
          const olderThan = olderThanOf(lane, false, now);
          return { topic: lane.topic, ...(olderThan !== undefined ? { olderThan } : {}) };
        }),
        ...(shards ? { shards } : {}),
      });
    } catch (error) {
      // the database away: looked for again at the base interval, so what it left behind goes soon after it returns
      wake();
      options.onError?.(error);
      return;
    }
    if (due.size > 0) wake();
    // stopped while the probe was out: no lane starts a pass stop() would not wait for
    if (!running) return;
    // the passes are not waited for here (stop() waits for them): a slow lane never holds the next poll up
    for (const lane of lanes) if (due.has(lane.topic)) void triggerLane(lane, 'poll');
  }

  /** The poll's probe under way, if any (stop waits for it). */
  let polling: Promise<void> | null = null;
  /** When the relay last had work or news (IDLE_AFTER_MS), the shards its last poll covered, its current interval. */
  let busyAt = options.clock.now();
  let polledShards: string | null = null;
  let intervalMs = options.pollIntervalMs;

  function nextInterval(): number {
    const idle = options.clock.now() - busyAt >= IDLE_AFTER_MS;
    intervalMs = idle ? Math.min(intervalMs * 2, Math.max(IDLE_POLL_MAX_MS, options.pollIntervalMs)) : options.pollIntervalMs;
    return intervalMs;
  }

  /** Work or news: busy from now on, and a poll backed off while idle is set at the interval again. */
  function wake(): void {
    busyAt = options.clock.now();
    if (intervalMs !== options.pollIntervalMs) schedule();
  }

  /** Sets the next poll, in place of any set before. */
  function schedule(): void {
    if (!running) return;
    if (timer) clearTimeout(timer);
    // lanes still busy only note that they should go round again: the poll never waits for the slowest
    timer = setTimeout(() => {
      if (!polling)
        polling = poll().finally(() => {
          polling = null;
        });
      schedule();
    }, nextInterval());
  }

  return {
    start() {
      if (running) return;
      running = true;
      // an append hands its entries to their lanes; a lane with a grace period waits for its poll (what was just
      // written is younger than the grace by definition)
      busyAt = options.clock.now();
      intervalMs = options.pollIntervalMs;
      polledShards = options.shards?.()?.join(',') ?? null;
      unsubscribe = options.outbox.onAppended((entries) => {
        wake();
        const woken = new Set<Lane>();
        for (const entry of entries) {
          const lane = laneOf.get(entry.topic);
          if (!lane || lane.handler.graceMs) continue;
          lane.fresh.push(entry);
          woken.add(lane);
        }
        for (const lane of woken) void triggerLane(lane, null);
      });
      // at start nothing is fresh: everything pending is from before
      void triggerAll();
      schedule();
    },
    async stop() {
      running = false;
      unsubscribe?.();
      if (timer) clearTimeout(timer);
      await polling;
      await Promise.all(lanes.flatMap((lane) => (lane.pass ? [lane.pass] : [])));
      await laterSettled();
    },
    async drain() {
      await triggerAll();
      await laterSettled();
    },
  };
}

function isHandledInPart(handled: readonly string[] | HandledInPart): handled is HandledInPart {
  return !Array.isArray(handled);
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
export async function runEntryTasks<P>(
  entries: readonly RelayedEntry<P>[],
  tasksOf: (entry: RelayedEntry<P>) => readonly (() => Promise<void>)[],
  limit: number,
  onError: (error: unknown) => void,
): Promise<string[]> {
  const run = pLimit(Math.max(1, limit));
  const failed = new Set<number>();
  let reported = false;
  // every task is queued at once, in entry order; a task of an entry that has already failed is skipped
  const tasks = entries.flatMap((entry, index) =>
    tasksOf(entry).map((task) =>
      run(async () => {
        if (failed.has(index)) return;
        try {
          await task();
        } catch (error) {
          failed.add(index);
          if (!reported) {
            reported = true;
            onError(error);
          }
        }
      }),
    ),
  );
  await Promise.all(tasks);
  return entries.filter((_, index) => !failed.has(index)).map((entry) => entry.id);
}
