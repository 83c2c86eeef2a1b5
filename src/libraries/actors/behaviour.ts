import type { OwnerEntry } from '../persistence/journal-port.js';

/** What a behaviour may use besides its state and command: the time and fresh ids, supplied by the wrapper. */
export interface BehaviourContext {
  readonly now: number;
  readonly newId: () => string;
  /** Shard of this actor's key; outbox entries carry it. */
  readonly shard: number;
}

/**
 * An outbox entry before the wrapper stamps the shard on it: `topic` names the area that consumes it and `payload` is
 * what that area reads. Each area declares its own (`EffectOf<typeof ITS_TOPIC, ItsPayload>`); a behaviour's effects
 * are the union of those it yields, discriminated by topic.
 */
export interface EffectOf<T extends string, P> {
  readonly id: string;
  readonly topic: T;
  readonly payload: P;
}

/** Any outbox entry before the shard is stamped on it. */
export type Effect = EffectOf<string, unknown>;

/** The payload type of each topic of an effect union: `PayloadsByTopic<A | B>[A['topic']]` is A's payload. */
export type PayloadsByTopic<F extends Effect> = { readonly [T in F['topic']]: Extract<F, { readonly topic: T }>['payload'] };

/**
 * A command for a new actor of another behaviour in the same shard (the message a charge creates), decided by that
 * actor's host and journaled as that actor's first record in the same write as the deciding actor's record: both are
 * written or neither. The new actor then starts from that record without reading it back.
 */
export interface Companion {
  /** The other behaviour's `kind` (`message`). */
  readonly kind: string;
  readonly id: string;
  readonly command: Command;
}

/**
 * The result of handling one command. `events` are journaled, then folded into the state with `apply`;
 * `effects` become outbox entries in the same append; `retire` names entries the actor's earlier effects left
 * that the command makes moot (JournalAppend.retire); `companions` are first records of new actors written with
 * it (Companion); `reply` goes to the caller once the append is durable. `state`, when given, is the next state
 * before the events: only for what is deliberately not journaled (rate-limit windows).
 */
export interface Decision<S, E, R, F extends Effect = Effect> {
  readonly events: readonly E[];
  readonly reply: R;
  readonly effects?: readonly F[];
  readonly retire?: readonly string[];
  readonly companions?: readonly Companion[];
  readonly state?: S;
}

export interface Command {
  readonly type: string;
}

/**
 * A command every host answers itself, before any behaviour sees it: if the actor is settled (HostPolicy.settled), it
 * snapshots its state at its last sequence number and deletes its earlier journal records (the journal's pruneBefore).
 * Run by the activation on the shard's owner, it never races that actor's own appends; an actor whose policy has no `settled`
 * (wallets, keys) is never compacted. A behaviour lists it among its commands with a handler that is never reached.
 */
export const COMPACT_JOURNAL = 'compact_journal';

export type CompactJournalReply =
  | { readonly compacted: true; readonly seq: number; readonly deleted: number }
  | { readonly compacted: false; readonly reason: 'not_settled' | 'empty' };

/** Reply type of each command type. */
export type ReplyMap<C extends Command> = { readonly [K in C['type']]: unknown };

export type CommandOf<C extends Command, K extends C['type']> = Extract<C, { type: K }>;

export type Handlers<S, C extends Command, E, RM extends ReplyMap<C>, F extends Effect = Effect> = {
  readonly [K in C['type']]: (state: S, command: CommandOf<C, K>, context: BehaviourContext) => Decision<S, E, RM[K], F>;
};

/**
 * An actor's domain contract as pure functions, unit-tested without nact: its initial state, a handler per command
 * that decides (events, outbox effects, reply) from the state and the command alone, and `apply`, the fold of one
 * event. Recovery replays `apply` over the journal, so `apply` depends only on the state and the event. How a host
 * runs it (batching, passivation, snapshots) is its HostPolicy, given to the host beside it.
 */
export interface Behaviour<S, C extends Command, E, RM extends ReplyMap<C>, F extends Effect = Effect> {
  /** Prefix of the persistence key: `wallet`, `apikey`, `message`. */
  readonly kind: string;
  initialState(id: string): S;
  readonly handlers: Handlers<S, C, E, RM, F>;
  apply(state: S, event: E): S;
}

/**
 * How a host runs a behaviour: tuning that changes no decision. Every hook is optional; without any, the host
 * reads the journal on every activation, batches commands by count, folds events one by one and never compacts.
 */
export interface HostPolicy<S, C extends Command, E> {
  /** What a snapshot stores; drop anything not derived from events. Defaults to the state itself. */
  toSnapshot?(state: S): S;
  /**
   * True for a command that normally reaches an actor with no journal yet (a creation under a fresh id): if it
   * wakes the actor, the activation skips reading the journal. A wrong guess costs one conflicting append, after
   * which the runtime reads the journal and decides the command again.
   */
  startsFresh?(command: C): boolean;
  /**
   * How much work a command is, in units of the host's `maxBatch` (default 1): a command carrying many items (a
   * batch of receipts) counts as many, so one record never grows past `maxBatch` items by holding big commands.
   */
  weightOf?(command: C): number;
  /**
   * Folds several events at once, with exactly the result of folding them one by one with `apply`: a behaviour whose
   * state is large (a message's recipients) can copy it once per record instead of once per event.
   */
  readonly applyAll?: (state: S, events: readonly E[]) => S;
  /**
   * True when nothing more is expected for the actor soon (a message whose recipients all have their final
   * status): the host may then passivate it after `settledIdleMs` idle instead of `idleShutdownMs`. A command that
   * comes later reactivates it from the journal like any other.
   */
  settled?(state: S): boolean;
  /**
   * What this node knows beside the actor's journal that a decision needs, written into the command as it is taken
   * to be decided (the decision stays a function of the state and the command). Returns the command itself when
   * there is nothing to add.
   */
  withInputs?(state: S, command: C): C;
  /**
   * The effects of one record as they are stored (several commands' effects meet in one record): a behaviour whose
   * commands yield many small entries of one kind may merge them into fewer (a message's webhook events, one entry
   * per record). Ids must stay stable: the same effects give the same entries.
   */
  packEffects?(effects: readonly Effect[]): readonly Effect[];
  /**
   * The owner a record's events establish (a message created for its merchant), written with the record so the
   * directory finds the owner exactly when the creation is durable; undefined for a record that creates nothing.
   */
  ownerOf?(events: readonly E[]): OwnerEntry | undefined;
}

export function foldEvents<S, E>(apply: (state: S, event: E) => S, state: S, events: readonly E[]): S {
  return events.reduce(apply, state);
}

/** A record's events folded into the state: the policy's applyAll when it has one. */
export function applyEvents<S, E>(
  behaviour: { apply(state: S, event: E): S },
  state: S,
  events: readonly E[],
  policy?: { readonly applyAll?: (state: S, events: readonly E[]) => S },
): S {
  if (events.length === 0) return state;
  return policy?.applyAll ? policy.applyAll(state, events) : foldEvents((acc: S, event: E) => behaviour.apply(acc, event), state, events);
}

/** Runs one command through its handler: the pure core of what the actor wrapper does. */
export function decide<S, C extends Command, E, RM extends ReplyMap<C>, K extends C['type'], F extends Effect = Effect>(
  behaviour: Behaviour<S, C, E, RM, F>,
  state: S,
  command: CommandOf<C, K>,
  context: BehaviourContext,
): Decision<S, E, RM[K], F> {
  const handler = behaviour.handlers[command.type];
  return handler(state, command, context);
}
