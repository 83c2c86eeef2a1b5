import type { Behaviour } from '../../../../src/libraries/actors/behaviour.js';

/** A tiny behaviour to exercise the actor runtime: a counter with a command that crashes on purpose. */
export interface CounterState {
  readonly total: number;
  readonly applied: number;
}
export type CounterCommand =
  | { readonly type: 'add'; readonly amount: number }
  | { readonly type: 'read' }
  | { readonly type: 'explode' }
  | { readonly type: 'announce'; readonly topic: string; readonly id?: string }
  | { readonly type: 'withdraw'; readonly ids: readonly string[] }
  /** Adds `amount`, and starts counter `child` at `childAmount` in the same write (a companion of `kind`, counter by default). */
  | { readonly type: 'found'; readonly amount: number; readonly child: string; readonly childAmount: number; readonly kind?: string };
export type CounterEvent = { readonly type: 'added'; readonly amount: number };
export interface CounterReplies {
  readonly add: { readonly total: number };
  readonly read: { readonly total: number; readonly applied: number };
  readonly explode: never;
  readonly announce: { readonly id: string };
  readonly withdraw: Record<string, never>;
  readonly found: { readonly total: number };
}

export const counterBehaviour: Behaviour<CounterState, CounterCommand, CounterEvent, CounterReplies> = {
  kind: 'counter',
  initialState: () => ({ total: 0, applied: 0 }),
  handlers: {
    add: (state, command) => ({ events: [{ type: 'added', amount: command.amount }], reply: { total: state.total + command.amount } }),
    read: (state) => ({ events: [], reply: { total: state.total, applied: state.applied } }),
    explode: () => {
      throw new Error('boom');
    },
    announce: (_state, command, context) => {
      const id = command.id ?? context.newId();
      return { events: [], reply: { id }, effects: [{ id, topic: command.topic, payload: { at: context.now } }] };
    },
    withdraw: (_state, command) => ({ events: [], reply: {}, retire: command.ids }),
    found: (state, command) => ({
      events: [{ type: 'added', amount: command.amount }],
      reply: { total: state.total + command.amount },
      companions: [{ kind: command.kind ?? 'counter', id: command.child, command: { type: 'add', amount: command.childAmount } }],
    }),
  },
  apply: (state, event) => ({ total: state.total + event.amount, applied: state.applied + 1 }),
};
