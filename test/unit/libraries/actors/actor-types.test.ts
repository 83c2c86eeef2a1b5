import { expect } from 'chai';
import type { ActorRef } from '../../../../src/libraries/actors/actor-runtime.js';
import type { CounterCommand, CounterReplies } from './counter-behaviour.js';

/** Type-level tests: these lines must not compile; `tsc --noEmit` (part of npm test) checks the directives. */
function typeChecks(counter: ActorRef<CounterCommand, CounterReplies>): void {
  // @ts-expect-error: a command the actor does not understand
  void counter.ask({ type: 'withdraw', amount: 1 });
  // @ts-expect-error: a known command with a field of the wrong type
  void counter.ask({ type: 'add', amount: '1' });
  void counter.ask({ type: 'add', amount: 1 }).then((reply) => {
    const total: number = reply.total;
    // @ts-expect-error: the reply of `add` has no `applied`
    const { applied } = reply;
    return [total, applied] as const;
  });
  void counter.ask({ type: 'read' }).then((reply) => {
    // @ts-expect-error: the reply of `read` is not a string
    const text: string = reply.total;
    return text;
  });
}

describe('typed actor references', () => {
  it('are checked at compile time (see the @ts-expect-error lines)', () => {
    expect(typeChecks).to.be.a('function');
  });
});
