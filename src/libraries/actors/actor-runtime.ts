import type { Clock, IdGenerator } from '../clock/clock.js';
import { type CompanionRecord, type Fence, type Journal, type OutboxEntry, type OwnerEntry } from '../persistence/journal-port.js';
import {
  applyEvents,
  COMPACT_JOURNAL,
  decide,
  type Behaviour,
  type CompactJournalReply,
  type Command,
  type CommandOf,
  type Companion,
  type Effect,
  type HostPolicy,
  type ReplyMap,
} from './behaviour.js';
import { askDeadline, patientTimer, type RequestScope } from './request-deadline.js';
import {
  dispatchNact,
  spawnPersistentNact,
  startNact,
  stopNact,
  type NactPersistenceEngine,
  type NactPersistentContext,
  type NactRef,
  type NactSupervisionContext,
} from './nact-bindings.js';
import { ActorFailureError, type ActorFailureReason, isJournalConflict } from '../errors/internal-errors.js';

/** A typed handle on one actor: only its own commands compile, and each command's reply type comes back. */
export interface ActorRef<C extends Command, RM extends ReplyMap<C>> {
  readonly key: string;
  /**
   * `deadline` (ms since the epoch): the actor refuses the command if it has not taken it to decide by then. By
   * default the deadline of the request in whose `scope` it is asked (request-deadline.ts), capped at the host's
   * askTimeoutMs from now.
   */
  ask<K extends C['type']>(command: CommandOf<C, K>, options?: AskOptions): Promise<RM[K]>;
}

export interface AskOptions {
  readonly deadline?: number;
  /** The request the ask is made for (its deadline, hop count, forwarded shard); none: work outside a request. */
  readonly scope?: RequestScope;
}

/**
 * `expired`: refused, its deadline passed before the actor took it (nothing applied). `timeout`: taken before its
 * deadline but not answered within askTimeoutMs after it (the database hung): it may or may not have been applied.
 */
export interface ActorRuntimeOptions {
  readonly journal: Journal;
  readonly clock: Clock;
  readonly newId: IdGenerator;
  /** Called when something goes wrong that no caller sees (snapshot writes, crashes); for logs and metrics. */
  readonly onIncident?: (incident: { readonly key: string; readonly what: string; readonly error: unknown }) => void;
}

export interface ActorHostOptions {
  readonly askTimeoutMs: number;
  readonly idleShutdownMs: number;
  /** How long a settled actor (HostPolicy.settled) stays in memory idle; absent: idleShutdownMs like any other. */
  readonly settledIdleMs?: number;
  readonly snapshotEvery: number;
  /** Commands handled together and journaled as one record (default 256), counted by the policy's weightOf. */
  readonly maxBatch?: number;
  /** The lease under which this node writes a shard (cluster mode); absent in single-node mode. */
  readonly fenceOf?: (shard: number) => Fence | undefined;
}

/**
 * One record an actor journaled: its state before the record (what recovery would have folded) and the events the
 * record holds, in order. Given to a host's `onRecorded` once the record is durable, on the node that wrote it:
 * a failed or conflicting append, and recovery's replay, report nothing.
 */
export interface RecordedEvents<S, E> {
  readonly key: string;
  readonly before: S;
  readonly events: readonly E[];
}

export interface ActorHost<C extends Command, RM extends ReplyMap<C>> {
  /** The actor of `id`, living in `shard` (outbox entries and fences are per shard). */
  ref(id: string, shard: number): ActorRef<C, RM>;
  /** Whether the behaviour has a command of this type (a command off the wire is checked before it is asked). */
  handles(type: string): boolean;
  /** Actors currently in memory. */
  activeCount(): number;
  /** Stops the in-memory actors that match (all when omitted); their journal stays. */
  passivate(filter?: (id: string, shard: number) => boolean): void;
}

export interface ActorRuntime {
  /**
   * `policy`: how the behaviour is run (HostPolicy). `onRecorded`: told of each durable record with events
   * (RecordedEvents); must not throw, nor take long.
   */
  host<S, C extends Command, E, RM extends ReplyMap<C>, F extends Effect>(
    behaviour: Behaviour<S, C, E, RM, F>,
    options: ActorHostOptions,
    policy?: HostPolicy<NoInfer<S>, NoInfer<C>, NoInfer<E>>,
    onRecorded?: (recorded: RecordedEvents<NoInfer<S>, NoInfer<E>>) => void,
  ): ActorHost<C, RM>;
  stop(): void;
}

interface StoredRecord {
  readonly events: readonly unknown[];
  readonly outbox: readonly OutboxEntry[];
  readonly retire?: readonly string[];
  readonly owner?: OwnerEntry;
  readonly companions?: readonly CompanionRecord[];
  readonly at: number;
}

/** A record this node read or wrote, handed to the next activation of its key instead of a journal read. */
interface PrimedRecord {
  readonly seq: number;
  readonly events: readonly unknown[];
  readonly at: number;
}

/** What a host does for companions (behaviour.ts, Companion) that other hosts' actors decide. */
interface CompanionHost {
  /** The companion's first record, decided from the initial state; null when its command records nothing. */
  prepare(companion: Companion, shard: number, now: number): CompanionRecord | null;
  /** The record is durable: the actor starts from it (no journal read), and the host's observer hears of it. */
  adopt(companion: Companion, shard: number, record: CompanionRecord, at: number): void;
}

interface PendingAsk {
  readonly command: Command;
  /** Not taken to decide by then: refused as expired. */
  readonly deadline: number;
  /** Taken out of the queue and decided (its outcome is then waited for, past the deadline). */
  taken: boolean;
  /** Its decision journals something (an event, an outbox entry, a retirement). */
  writes: boolean;
  /** Already re-decided once after a stale activation lost its sequence number. */
  retried: boolean;
  resolve(value: unknown): void;
  reject(error: ActorFailureError): void;
}

/** One activation: the nact actor and the commands waiting for it. */
interface Activation {
  readonly ref: NactRef;
  readonly shard: number;
  readonly queue: PendingAsk[];
  drainScheduled: boolean;
  /** When it last took commands (the clock's time), and whether its state then was settled (HostPolicy.settled). */
  lastActive: number;
  settled: boolean;
}

const DRAIN = Symbol('drain');
const ID_PATTERN = /^[A-Za-z0-9_-]+$/;
const DEFAULT_MAX_BATCH = 256;
const SWEEP_MS = 100;

function describe(error: unknown): string {
  if (error instanceof Error) return error.cause instanceof Error ? error.cause.message : error.message;
  return String(error);
}

/** nact's persistence engine over our Journal port. */
function journalEngine(
  journal: Journal,
  onIncident: NonNullable<ActorRuntimeOptions['onIncident']>,
  freshKeys: Set<string>,
  primed: Map<string, PrimedRecord>,
  lastSeq: Map<string, number>,
): NactPersistenceEngine {
  const replayed = (key: string, record: PrimedRecord) => ({
    data: { events: record.events, outbox: [], at: record.at },
    sequenceNumber: record.seq,
    key,
    tags: [],
    createdAt: record.at,
    isDeleted: false,
  });
  return {
    events: (key, afterSeq) => ({
      reduce: async (fn, initial) => {
        // an activation for a creation under a fresh id: nothing to read (a wrong guess conflicts on append)
        if (freshKeys.delete(key)) return initial;
        // an actor whose first record this node just wrote as a companion: that record is its whole journal
        const first = primed.get(key);
        if (first && afterSeq === 0) {
          primed.delete(key);
          lastSeq.set(key, first.seq);
          return fn(initial, replayed(key, first), 0);
        }
        const records = await journal.read(key, afterSeq);
        // the key was pruned between reading its snapshot and its records: recovering now would lose state
        if (records.length > 0 && records[0]?.seq !== afterSeq + 1)
          throw new Error(`${key}: journal pruned during recovery, records start at ${String(records[0]?.seq)}`);
        lastSeq.set(key, records.at(-1)?.seq ?? afterSeq);
        return records.reduce((acc, record, index) => fn(acc, replayed(key, record), index), initial);
      },
    }),
    latestSnapshot: async (key) => {
      lastSeq.set(key, 0);
      if (freshKeys.has(key) || primed.has(key)) return undefined;
      const snapshot = await journal.latestSnapshot(key);
      return snapshot ? { data: snapshot.state, sequenceNumber: snapshot.seq, key, createdAt: snapshot.at } : undefined;
    },
    takeSnapshot: async (snapshot) => {
      // nact only logs a failed snapshot; report it, and never fail the actor for it (the journal is the truth)
      try {
        await journal.saveSnapshot({ key: snapshot.key, seq: snapshot.sequenceNumber, state: snapshot.data, at: snapshot.createdAt });
      } catch (error) {
        onIncident({ key: snapshot.key, what: 'snapshot_failed', error });
      }
    },
    persist: async (event, fence) => {
      const record = event.data as StoredRecord;
      await journal.append({
        key: event.key,
        seq: event.sequenceNumber,
        events: record.events,
        outbox: record.outbox,
        ...(record.retire && record.retire.length > 0 ? { retire: record.retire } : {}),
        ...(record.owner ? { owner: record.owner } : {}),
        ...(record.companions && record.companions.length > 0 ? { companions: record.companions } : {}),
        at: record.at,
        ...(fence ? { fence: fence as Fence } : {}),
      });
      lastSeq.set(event.key, event.sequenceNumber);
    },
  };
}

/**
 * nact actors with persistence, supervision and passivation, plus one thing nact lacks: an actor takes every
 * command waiting for it at once, decides them in order on its evolving state, and journals their events as one
 * record before answering any of them. A hot wallet or a busy message then costs one append per batch, not one
 * per command, with the same guarantees (events durable before the reply, all-or-nothing per record).
 */
export function createActorRuntime(options: ActorRuntimeOptions): ActorRuntime {
  const onIncident = options.onIncident ?? (() => undefined);
  /** Keys whose next activation skips recovery (HostPolicy.startsFresh). */
  const freshKeys = new Set<string>();
  /** Keys whose next activation starts from a companion record this node wrote, instead of reading the journal. */
  const primed = new Map<string, PrimedRecord>();
  /** The last sequence number of each key an activation holds (what a compaction snapshots at). */
  const lastSeq = new Map<string, number>();
  /** Each host by its behaviour's kind, for the companions other hosts' actors decide. */
  const companionHosts = new Map<string, CompanionHost>();
  const root = startNact(journalEngine(options.journal, onIncident, freshKeys, primed, lastSeq));
  let stopped = false;
  /** The hosts' settled-actor sweeps, cleared on stop. */
  const sweeps: NodeJS.Timeout[] = [];

  function companionHostOf(companion: Companion): CompanionHost {
    if (!options.journal.writesCompanions) throw new Error('this journal cannot write companion records');
    const host = companionHosts.get(companion.kind);
    if (!host) throw new Error(`no host for companions of kind ${JSON.stringify(companion.kind)}`);
    return host;
  }

  function host<S, C extends Command, E, RM extends ReplyMap<C>, F extends Effect>(
    behaviour: Behaviour<S, C, E, RM, F>,
    hostOptions: ActorHostOptions,
    policy: HostPolicy<S, C, E> = {},
    onRecorded?: (recorded: RecordedEvents<S, E>) => void,
  ): ActorHost<C, RM> {
    const live = new Map<string, Activation>();
    const maxBatch = hostOptions.maxBatch ?? DEFAULT_MAX_BATCH;

    /** How many commands from the head of the queue make one batch: at least one, then up to maxBatch in weight. */
    function batchLength(queue: readonly PendingAsk[]): number {
      // a compaction goes alone
      const compaction = queue.findIndex((ask) => ask.command.type === COMPACT_JOURNAL);
      if (compaction === 0) return 1;
      return compaction > 0 ? Math.min(compaction, commandBatchLength(queue)) : commandBatchLength(queue);
    }

    function commandBatchLength(queue: readonly PendingAsk[]): number {
      if (!policy.weightOf) return Math.min(queue.length, maxBatch);
      let weight = 0;
      let length = 0;
      for (const ask of queue) {
        weight += policy.weightOf(ask.command as C);
        if (length > 0 && weight > maxBatch) break;
        length++;
      }
      return length;
    }

    /** Asks put back in the queue (not applied): their deadline holds again. */
    function untake(asks: PendingAsk[]): PendingAsk[] {
      for (const ask of asks) {
        ask.taken = false;
        ask.writes = false;
      }
      return asks;
    }

    function scheduleDrain(activation: Activation): void {
      if (activation.drainScheduled || activation.queue.length === 0) return;
      activation.drainScheduled = true;
      dispatchNact(activation.ref, DRAIN);
    }

    function receiveFor(id: string, key: string, activation: () => Activation) {
      return async function receive(this: NactPersistentContext, state: S, message: unknown, context: NactPersistentContext): Promise<S> {
        if (context.recovering) {
          const record = message as StoredRecord;
          return applyEvents(behaviour, state, record.events as E[], policy);
        }
        if (message !== DRAIN) return state;
        const self = activation();
        self.drainScheduled = false;
        const batch = self.queue.splice(0, batchLength(self.queue));
        if (batch.length === 0) return state;
        if (batch[0]?.command.type === COMPACT_JOURNAL) {
          await compact(key, batch[0], state);
          scheduleDrain(self);
          return state;
        }

        const now = options.clock.now();
        // busy: not settled until this batch is journaled and answered
        self.lastActive = now;
        self.settled = false;
        const context_ = { now, newId: options.newId, shard: self.shard };
        let working = state;
        const events: E[] = [];
        let effects: Effect[] = [];
        const retire: string[] = [];
        const companions: { companion: Companion; record: CompanionRecord }[] = [];
        const decided: { ask: PendingAsk; reply: unknown }[] = [];
        let crash: { ask: PendingAsk; error: unknown; index: number } | null = null;
        for (const [index, ask] of batch.entries()) {
          // checked per command: a command that waited past its deadline is refused, never decided
          if (now >= ask.deadline) {
            ask.reject(new ActorFailureError(key, 'expired', 'its deadline passed before it was decided'));
            continue;
          }
          ask.taken = true;
          try {
            const command = ask.command as C;
            const decision = decide(
              behaviour,
              working,
              (policy.withInputs ? policy.withInputs(working, command) : command) as CommandOf<C, C['type']>,
              context_,
            );
            const prepared = (decision.companions ?? []).flatMap((companion) => {
              const record = companionHostOf(companion).prepare(companion, self.shard, now);
              return record ? [{ companion, record }] : [];
            });
            ask.writes =
              decision.events.length > 0 ||
              (decision.effects?.length ?? 0) > 0 ||
              (decision.retire?.length ?? 0) > 0 ||
              prepared.length > 0;
            working = applyEvents(behaviour, decision.state ?? working, decision.events, policy);
            companions.push(...prepared);
            events.push(...decision.events);
            if (decision.retire && decision.retire.length > 0) {
              // an entry an earlier command of this batch left is simply not written; the others go with the record
              const moot = new Set(decision.retire);
              const unwritten = new Set(effects.filter((effect) => moot.has(effect.id)).map((effect) => effect.id));
              effects = effects.filter((effect) => !unwritten.has(effect.id));
              retire.push(...decision.retire.filter((id) => !unwritten.has(id)));
            }
            effects.push(...(decision.effects ?? []));
            decided.push({ ask, reply: decision.reply });
          } catch (error) {
            crash = { ask, error, index };
            break;
          }
        }
        // commands after a crashing one wait for the next activation
        if (crash) self.queue.unshift(...untake(batch.slice(crash.index + 1)));

        if (events.length > 0 || effects.length > 0 || retire.length > 0 || companions.length > 0) {
          const outbox = (policy.packEffects ? policy.packEffects(effects) : effects).map((effect) => ({ ...effect, shard: self.shard }));
          const owner = policy.ownerOf?.(events);
          const record: StoredRecord = {
            events,
            outbox,
            ...(retire.length > 0 ? { retire } : {}),
            ...(owner ? { owner } : {}),
            ...(companions.length > 0 ? { companions: companions.map((c) => c.record) } : {}),
            at: now,
          };
          const fence = hostOptions.fenceOf?.(self.shard);
          try {
            await context.persist(record, [], ...(fence ? [fence] : []));
          } catch (error) {
            const reason: ActorFailureReason = isJournalConflict(error) ? 'fenced' : 'unavailable';
            const held = [...decided.map((d) => d.ask), ...(crash ? [crash.ask] : [])];
            // another activation wrote this sequence number first: this one is stale. Its commands were not
            // applied, so they are decided again, once, by a fresh activation on the journal's truth.
            const staleActivation = isJournalConflict(error) && error.reason === 'sequence_taken';
            const retry = staleActivation ? held.filter((ask) => !ask.retried) : [];
            for (const ask of retry) ask.retried = true;
            self.queue.unshift(...untake(retry));
            for (const ask of held) if (!retry.includes(ask)) ask.reject(new ActorFailureError(key, reason, describe(error)));
            // nact already counted the sequence number: stop, and recover the truth from the journal next time
            throw error;
          }
          if (onRecorded && events.length > 0) {
            // an observer's failure is reported, never the actor's: the record is durable and the replies go out
            try {
              onRecorded({ key, before: state, events });
            } catch (error) {
              onIncident({ key, what: 'record_observer_failed', error });
            }
          }
          for (const { companion, record: first } of companions) companionHostOf(companion).adopt(companion, self.shard, first, now);
        }
        for (const { ask, reply } of decided) ask.resolve(reply);
        self.lastActive = options.clock.now();
        self.settled = policy.settled?.(working) ?? false;
        if (crash) {
          crash.ask.reject(new ActorFailureError(key, 'crashed', describe(crash.error)));
          onIncident({ key, what: 'actor_crashed', error: crash.error });
          throw crash.error;
        }
        scheduleDrain(self);
        return working;
      };
    }

    /** Snapshot at the last sequence number, then the records before it deleted (COMPACT_JOURNAL). */
    async function compact(key: string, ask: PendingAsk, state: S): Promise<void> {
      const now = options.clock.now();
      if (now >= ask.deadline) {
        ask.reject(new ActorFailureError(key, 'expired', 'its deadline passed before it was decided'));
        return;
      }
      ask.taken = true;
      ask.writes = true;
      const seq = lastSeq.get(key) ?? 0;
      let reply: CompactJournalReply;
      if (!(policy.settled?.(state) ?? false)) reply = { compacted: false, reason: 'not_settled' };
      else if (seq === 0) reply = { compacted: false, reason: 'empty' };
      else {
        try {
          // the snapshot nact would take at this sequence number, with the same encoding
          await options.journal.saveSnapshot({ key, seq, state: policy.toSnapshot ? policy.toSnapshot(state) : state, at: now });
          reply = { compacted: true, seq, deleted: await options.journal.pruneBefore(key, seq) };
        } catch (error) {
          ask.reject(new ActorFailureError(key, 'unavailable', describe(error)));
          return;
        }
      }
      ask.resolve(reply);
    }

    function spawn(id: string, shard: number): Activation {
      if (!ID_PATTERN.test(id)) throw new ActorFailureError(`${behaviour.kind}:${id}`, 'crashed', `invalid actor id ${JSON.stringify(id)}`);
      const key = `${behaviour.kind}:${id}`;
      let activation: Activation | null = null;
      const current = (): Activation => {
        if (!activation) throw new Error('activation used before spawn');
        return activation;
      };
      const ref: NactRef = spawnPersistentNact<S>(root, receiveFor(id, key, current), key, `${behaviour.kind}.${id}`, {
        initialState: behaviour.initialState(id),
        snapshotEvery: hostOptions.snapshotEvery,
        shutdownAfter: hostOptions.idleShutdownMs,
        ...(policy.toSnapshot ? { snapshotEncoder: policy.toSnapshot.bind(policy) } : {}),
        // Failed commands were answered inside the actor already. A failure while recovering (storage down)
        // fails everything waiting, promptly; either way the actor stops and the next command reactivates it.
        onCrash: (message: unknown, error: unknown, supervision: NactSupervisionContext) => {
          const self = current();
          if (message === undefined) {
            for (const ask of self.queue.splice(0)) ask.reject(new ActorFailureError(key, 'unavailable', describe(error)));
          }
          // nact stops the actor after this returns; afterStop then hands whatever waits to a fresh activation
          return supervision.stop;
        },
        afterStop: () => {
          const self = current();
          if (live.get(id) === self) live.delete(id);
          if (!live.has(id)) lastSeq.delete(key);
          // commands that arrived while it was stopping go to a fresh activation
          const orphans = self.queue.splice(0);
          if (orphans.length > 0) {
            if (stopped) for (const ask of orphans) ask.reject(new ActorFailureError(key, 'unavailable', 'actor runtime stopped'));
            else enqueue(id, self.shard, orphans);
          }
        },
      });
      activation = { ref, shard, queue: [], drainScheduled: false, lastActive: options.clock.now(), settled: false };
      live.set(id, activation);
      return activation;
    }

    companionHosts.set(behaviour.kind, {
      prepare(companion, shard, now) {
        const key = `${behaviour.kind}:${companion.id}`;
        if (!ID_PATTERN.test(companion.id)) throw new Error(`invalid companion id ${JSON.stringify(companion.id)}`);
        if (!Object.hasOwn(behaviour.handlers, companion.command.type) || companion.command.type === COMPACT_JOURNAL)
          throw new Error(`${key}: no companion command ${JSON.stringify(companion.command.type)}`);
        const initial = behaviour.initialState(companion.id);
        const command = companion.command as C;
        const decision = decide(
          behaviour,
          initial,
          (policy.withInputs ? policy.withInputs(initial, command) : command) as CommandOf<C, C['type']>,
          { now, newId: options.newId, shard },
        );
        if ((decision.companions?.length ?? 0) > 0) throw new Error(`${key}: a companion has no companions of its own`);
        const effects = decision.effects ?? [];
        if (decision.events.length === 0 && effects.length === 0) return null;
        const owner = policy.ownerOf?.(decision.events);
        return {
          key,
          seq: 1,
          events: decision.events,
          outbox: (policy.packEffects ? policy.packEffects(effects) : effects).map((effect) => ({ ...effect, shard })),
          ...(owner ? { owner } : {}),
        };
      },
      adopt(companion, shard, record, at) {
        const key = `${behaviour.kind}:${companion.id}`;
        // an activation already live (only if the key was asked before the record existed) keeps its state and
        // meets the record at its next append: a conflict, after which the runtime reads the journal
        if (!stopped && !live.has(companion.id)) {
          primed.set(key, { seq: record.seq, events: record.events, at });
          spawn(companion.id, shard);
        }
        if (onRecorded && record.events.length > 0) {
          try {
            onRecorded({ key, before: behaviour.initialState(companion.id), events: record.events as E[] });
          } catch (error) {
            onIncident({ key, what: 'record_observer_failed', error });
          }
        }
      },
    });

    function stopActivation(id: string, activation: Activation): void {
      live.delete(id);
      stopNact(activation.ref);
    }

    /**
     * Settled actors idle for settledIdleMs leave memory. Checked often (every SWEEP_MS, or half of settledIdleMs if
     * shorter), so that at a steady pace a sweep stops a few actors, not seconds' worth at once.
     */
    if (hostOptions.settledIdleMs !== undefined && policy.settled) {
      const settledIdleMs = hostOptions.settledIdleMs;
      const sweep = setInterval(
        () => {
          const now = options.clock.now();
          // deleting the entry being visited is safe while iterating a Map: no copy of every live actor per sweep
          for (const [id, activation] of live) {
            if (
              activation.settled &&
              activation.queue.length === 0 &&
              !activation.drainScheduled &&
              now - activation.lastActive >= settledIdleMs
            ) {
              stopActivation(id, activation);
            }
          }
        },
        Math.max(1, Math.min(SWEEP_MS, Math.floor(settledIdleMs / 2))),
      );
      sweep.unref();
      sweeps.push(sweep);
    }

    function enqueue(id: string, shard: number, asks: readonly PendingAsk[]): void {
      let activation: Activation;
      try {
        activation = live.get(id) ?? spawn(id, shard);
      } catch (error) {
        for (const ask of asks)
          ask.reject(
            error instanceof ActorFailureError ? error : new ActorFailureError(`${behaviour.kind}:${id}`, 'crashed', describe(error)),
          );
        return;
      }
      activation.queue.push(...asks);
      scheduleDrain(activation);
    }

    function ask(id: string, shard: number, command: Command, askOptions: AskOptions | undefined): Promise<unknown> {
      const key = `${behaviour.kind}:${id}`;
      if (stopped) return Promise.reject(new ActorFailureError(key, 'unavailable', 'actor runtime stopped'));
      const now = options.clock.now();
      const deadline = askOptions?.deadline ?? askDeadline(now, hostOptions.askTimeoutMs, askOptions?.scope?.deadline ?? null);
      if (now >= deadline) return Promise.reject(new ActorFailureError(key, 'expired', 'its deadline had passed when it was asked'));
      return new Promise((resolve, reject) => {
        let settled = false;
        let cancelGrace = (): void => undefined;
        const pending: PendingAsk = {
          command,
          deadline,
          taken: false,
          writes: false,
          retried: false,
          resolve: (value) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            cancelGrace();
            resolve(value);
          },
          reject: (error) => {
            if (settled) return;
            settled = true;
            clearTimeout(timer);
            cancelGrace();
            reject(error);
          },
        };
        /** Still waiting in the queue: withdrawn, so it can never be decided. */
        const withdraw = (): boolean => {
          const queue = live.get(id)?.queue;
          const index = queue?.indexOf(pending) ?? -1;
          if (!queue || index < 0) return false;
          queue.splice(index, 1);
          return true;
        };
        const expired = () => new ActorFailureError(key, 'expired', 'its deadline passed before it was decided');
        // At the deadline a command still queued is withdrawn (the drain refuses it too, should it run first, as
        // after a frozen process resumes). One already taken is being journaled: its outcome is waited for, up to
        // askTimeoutMs more of running time (the journal's answer may wait unread in a socket after a freeze); after
        // that it is unknown, unless its decision wrote nothing.
        const timer = setTimeout(
          () => {
            if (withdraw() || !pending.taken) {
              pending.reject(expired());
              return;
            }
            cancelGrace = patientTimer(options.clock, hostOptions.askTimeoutMs, () => {
              if (withdraw() || !pending.taken || !pending.writes) pending.reject(expired());
              else
                pending.reject(
                  new ActorFailureError(key, 'timeout', `taken before its deadline, no answer ${hostOptions.askTimeoutMs} ms after it`),
                );
            });
          },
          Math.max(0, deadline - now),
        );
        if (!live.has(id) && policy.startsFresh?.(command as C)) freshKeys.add(key);
        enqueue(id, shard, [pending]);
      });
    }

    return {
      ref: (id, shard) => ({
        key: `${behaviour.kind}:${id}`,
        ask: (command, askOptions) => ask(id, shard, command, askOptions) as Promise<never>,
      }),
      handles: (type) => type === COMPACT_JOURNAL || Object.hasOwn(behaviour.handlers, type),
      activeCount: () => live.size,
      passivate: (filter) => {
        for (const [id, activation] of [...live]) {
          if (filter && !filter(id, activation.shard)) continue;
          stopActivation(id, activation);
        }
      },
    };
  }

  return {
    host,
    stop: () => {
      stopped = true;
      for (const sweep of sweeps.splice(0)) clearInterval(sweep);
      stopNact(root);
    },
  };
}
