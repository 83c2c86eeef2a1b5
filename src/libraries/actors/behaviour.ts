import type { OutboxEntry } from '../persistence/journal-port.js';

/** What a behaviour may use besides its state and command: the time and fresh ids, supplied by the wrapper. */
export interface BehaviourContext {
  readonly now: number;
  readonly newId: () => string;
  /** Shard of this actor's key; outbox entries carry it. */
  readonly shard: number;
}

/** An outbox entry before the wrapper stamps the shard on it. */
export type Effect = Omit<OutboxEntry, 'shard'>;

/**
 * The result of handling one command. `events` are journaled, then folded into the state with `apply`;
 * `effects` become outbox entries in the same append; `retire` names entries the actor's earlier effects left
 * that the command makes moot (JournalAppend.retire); `reply` goes to the caller once the append is durable.
 * `state`, when given, is the next state before the events: only for what is deliberately not journaled
 * (rate-limit windows).
 */
export interface Decision<S, E, R> {
  readonly events: readonly E[];
  readonly reply: R;
  readonly effects?: readonly Effect[];
  readonly retire?: readonly string[];
  readonly state?: S;
}

export interface Command {
  readonly type: string;
}

/**
 * A command every host answers itself, before any behaviour sees it: if the actor is settled (Behaviour.settled), it
 * snapshots its state at its last sequence number and deletes its earlier journal records (the journal's pruneBefore).
 * Run by the activation on the shard's owner, it never races that actor's own appends; an actor without `settled`
 * (wallets, keys) is never compacted. A behaviour lists it among its commands with a handler that is never reached.
 */
export const COMPACT_JOURNAL = 'compact_journal';

export type CompactJournalReply =
  | { readonly compacted: true; readonly seq: number; readonly deleted: number }
  | { readonly compacted: false; readonly reason: 'not_settled' | 'empty' };

/** Reply type of each command type. */
export type ReplyMap<C extends Command> = { readonly [K in C['type']]: unknown };

export type CommandOf<C extends Command, K extends C['type']> = Extract<C, { type: K }>;

export type Handlers<S, C extends Command, E, RM extends ReplyMap<C>> = {
  readonly [K in C['type']]: (state: S, command: CommandOf<C, K>, context: BehaviourContext) => Decision<S, E, RM[K]>;
};

/**
 * An actor's behaviour as pure functions, unit-tested without nact: a handler per command decides, `apply`
 * folds an event. Recovery replays `apply` over the journal, so `apply` depends only on the state and the event.
 */
export interface Behaviour<S, C extends Command, E, RM extends ReplyMap<C>> {
  /** Prefix of the persistence key: `wallet`, `apikey`, `message`. */
  readonly kind: string;
  initialState(id: string): S;
  readonly handlers: Handlers<S, C, E, RM>;
  apply(state: S, event: E): S;
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
}

export function foldEvents<S, E>(apply: (state: S, event: E) => S, state: S, events: readonly E[]): S {
  return events.reduce(apply, state);
}

/** A record's events folded into the state: the behaviour's applyAll when it has one. */
export function applyEvents<S, C extends Command, E, RM extends ReplyMap<C>>(behaviour: Behaviour<S, C, E, RM>, state: S, events: readonly E[]): S {
  if (events.length === 0) return state;
  return behaviour.applyAll ? behaviour.applyAll(state, events) : foldEvents((acc: S, event: E) => behaviour.apply(acc, event), state, events);
}

/** Runs one command through its handler: the pure core of what the actor wrapper does. */
export function decide<S, C extends Command, E, RM extends ReplyMap<C>, K extends C['type']>(
  behaviour: Behaviour<S, C, E, RM>,
  state: S,
  command: CommandOf<C, K>,
  context: BehaviourContext,
): Decision<S, E, RM[K]> {
  const handler = behaviour.handlers[command.type];
  return handler(state, command, context);
}
