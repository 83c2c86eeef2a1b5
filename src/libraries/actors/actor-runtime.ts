import type { Clock, IdGenerator } from '../clock/clock.js';
import { isJournalConflict, type Fence, type Journal, type OutboxEntry } from '../persistence/journal-port.js';
import { decide, type Behaviour, type Command, type CommandOf, type Effect, type ReplyMap } from './behaviour.js';
import {
  dispatchNact,
  queryNact,
  spawnPersistentNact,
  startNact,
  stopNact,
  STOPPED_ACTOR_MESSAGE,
  type NactPersistenceEngine,
  type NactPersistentContext,
  type NactRef,
  type NactSupervisionContext,
} from './nact-bindings.js';

/** A typed handle on one actor: only its own commands compile, and each command's reply type comes back. */
export interface ActorRef<C extends Command, RM extends ReplyMap<C>> {
  readonly key: string;
  ask<K extends C['type']>(command: CommandOf<C, K>): Promise<RM[K]>;
}

export type ActorFailureReason = 'crashed' | 'fenced' | 'unavailable' | 'timeout';

/** The actor could not answer: it crashed on the command, lost its fence, or its storage failed. */
export class ActorFailureError extends Error {
  constructor(
    readonly key: string,
    readonly reason: ActorFailureReason,
    detail: string,
  ) {
    super(`${key}: ${reason}: ${detail}`);
    this.name = 'ActorFailureError';
  }
}

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
  readonly snapshotEvery: number;
  /** Shard of an actor id; outbox entries and fences are per shard. */
  readonly shardOf: (id: string) => number;
  /** The lease under which this node writes a shard (cluster mode); absent in single-node mode. */
  readonly fenceOf?: (shard: number) => Fence | undefined;
}

export interface ActorHost<C extends Command, RM extends ReplyMap<C>> {
  ref(id: string): ActorRef<C, RM>;
  /** Actors currently in memory. */
  activeCount(): number;
  /** Stops the in-memory actors whose id matches (all when omitted); their journal stays. */
  passivate(filter?: (id: string) => boolean): void;
}

export interface ActorRuntime {
  host<S, C extends Command, E, RM extends ReplyMap<C>>(behaviour: Behaviour<S, C, E, RM>, options: ActorHostOptions): ActorHost<C, RM>;
  stop(): void;
}

interface StoredRecord {
  readonly events: readonly unknown[];
  readonly outbox: readonly OutboxEntry[];
  readonly at: number;
}

interface Envelope {
  readonly command: Command;
  readonly replyTo: NactRef;
}

type WireReply = { readonly ok: true; readonly value: unknown } | { readonly ok: false; readonly reason: ActorFailureReason; readonly detail: string };

/** Thrown inside the actor to hand a storage failure to supervision with its reason. */
class PersistFailure extends Error {
  constructor(
    readonly reason: ActorFailureReason,
    cause: unknown,
  ) {
    super(reason, { cause });
  }
}

const ID_PATTERN = /^[A-Za-z0-9_-]+$/;

function isEnvelope(message: unknown): message is Envelope {
  return typeof message === 'object' && message !== null && 'replyTo' in message && 'command' in message;
}

/** nact's persistence engine over our Journal port. */
function journalEngine(journal: Journal, onIncident: NonNullable<ActorRuntimeOptions['onIncident']>): NactPersistenceEngine {
  return {
    events: (key, afterSeq) => ({
      reduce: async (fn, initial) => {
        const records = await journal.read(key, afterSeq);
        return records.reduce(
          (acc, record, index) =>
            fn(acc, { data: { events: record.events, outbox: [], at: record.at }, sequenceNumber: record.seq, key, tags: [], createdAt: record.at, isDeleted: false }, index),
          initial,
        );
      },
    }),
    latestSnapshot: async (key) => {
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
        at: record.at,
        ...(fence ? { fence: fence as Fence } : {}),
      });
    },
  };
}

export function createActorRuntime(options: ActorRuntimeOptions): ActorRuntime {
  const onIncident = options.onIncident ?? (() => undefined);
  const root = startNact(journalEngine(options.journal, onIncident));
  let stopped = false;

  function host<S, C extends Command, E, RM extends ReplyMap<C>>(behaviour: Behaviour<S, C, E, RM>, hostOptions: ActorHostOptions): ActorHost<C, RM> {
    const live = new Map<string, NactRef>();

    function receiveFor(id: string) {
      const shard = hostOptions.shardOf(id);
      return async function receive(this: NactPersistentContext, state: S, message: unknown, context: NactPersistentContext): Promise<S> {
        if (context.recovering) {
          const record = message as StoredRecord;
          return (record.events as E[]).reduce((acc, event) => behaviour.apply(acc, event), state);
        }
        if (!isEnvelope(message)) return state;
        const now = options.clock.now();
        const decision = decide(behaviour, state, message.command as CommandOf<C, C['type']>, { now, newId: options.newId, shard });
        const effects: readonly Effect[] = decision.effects ?? [];
        if (decision.events.length > 0 || effects.length > 0) {
          const record: StoredRecord = { events: decision.events, outbox: effects.map((effect) => ({ ...effect, shard })), at: now };
          const fence = hostOptions.fenceOf?.(shard);
          try {
            await context.persist(record, [], ...(fence ? [fence] : []));
          } catch (error) {
            throw new PersistFailure(isJournalConflict(error) ? 'fenced' : 'unavailable', error);
          }
        }
        const next = decision.events.reduce((acc, event) => behaviour.apply(acc, event), decision.state ?? state);
        const reply: WireReply = { ok: true, value: decision.reply };
        dispatchNact(message.replyTo, reply);
        return next;
      };
    }

    function spawn(id: string): NactRef {
      if (!ID_PATTERN.test(id)) throw new Error(`invalid actor id ${JSON.stringify(id)}`);
      const key = `${behaviour.kind}:${id}`;
      const ref: NactRef = spawnPersistentNact<S>(root, receiveFor(id), key, `${behaviour.kind}.${id}`, {
        initialState: behaviour.initialState(id),
        snapshotEvery: hostOptions.snapshotEvery,
        shutdownAfter: hostOptions.idleShutdownMs,
        ...(behaviour.toSnapshot ? { snapshotEncoder: behaviour.toSnapshot.bind(behaviour) } : {}),
        // A crash fails the command and everything queued behind it at once (no caller waits for a timeout),
        // then stops the actor: the next command activates it again from its journal.
        onCrash: (message: unknown, error: unknown, supervision: NactSupervisionContext) => {
          const reason: ActorFailureReason = error instanceof PersistFailure ? error.reason : 'crashed';
          const detail = error instanceof Error ? (error.cause instanceof Error ? error.cause.message : error.message) : String(error);
          const failure: WireReply = { ok: false, reason, detail };
          for (const pending of [message, ...supervision.mailbox.map((m) => m.message)]) {
            if (isEnvelope(pending)) dispatchNact(pending.replyTo, failure);
          }
          if (reason === 'crashed') onIncident({ key, what: 'actor_crashed', error });
          if (live.get(id) === ref) live.delete(id);
          return supervision.stop;
        },
        afterStop: () => {
          if (live.get(id) === ref) live.delete(id);
        },
      });
      live.set(id, ref);
      return ref;
    }

    async function ask(id: string, command: Command): Promise<unknown> {
      const key = `${behaviour.kind}:${id}`;
      for (let attempt = 0; ; attempt++) {
        if (stopped) throw new ActorFailureError(key, 'unavailable', 'actor runtime stopped');
        const ref = live.get(id) ?? spawn(id);
        let reply: WireReply;
        try {
          reply = (await queryNact(ref, (replyTo) => ({ command, replyTo }), hostOptions.askTimeoutMs)) as WireReply;
        } catch (error) {
          const message = error instanceof Error ? error.message : String(error);
          // passivated between lookup and query: activate it again, once
          if (message.startsWith(STOPPED_ACTOR_MESSAGE) && attempt === 0) {
            if (live.get(id) === ref) live.delete(id);
            continue;
          }
          throw new ActorFailureError(key, 'timeout', message);
        }
        if (reply.ok) return reply.value;
        throw new ActorFailureError(key, reply.reason, reply.detail);
      }
    }

    return {
      ref: (id) => ({
        key: `${behaviour.kind}:${id}`,
        ask: (command) => ask(id, command) as Promise<never>,
      }),
      activeCount: () => live.size,
      passivate: (filter) => {
        for (const [id, ref] of [...live]) {
          if (filter && !filter(id)) continue;
          live.delete(id);
          stopNact(ref);
        }
      },
    };
  }

  return {
    host,
    stop: () => {
      stopped = true;
      stopNact(root);
    },
  };
}
