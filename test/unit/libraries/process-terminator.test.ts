import { expect } from 'chai';
import sinon from 'sinon';
import type { Clock } from '../../../src/libraries/clock/clock.js';
import {
  createProcessTerminator,
  FORCE_QUIT_AFTER_MS,
  stopOnSignals,
  type ProcessTerminatorOptions,
  type StopSignal,
  type TerminationReason,
} from '../../../src/libraries/lifecycle/process-terminator.js';
import { createLogger } from '../../../src/libraries/logger/logger.js';

type Line = Record<string, unknown> & { msg: string; level: number };

const COPY = 'signal while stopping: a copy of the first, same stop';
const FORCE_QUIT = 'force-quit: another signal while stopping, exiting now';

function harness(
  stop: (reason: TerminationReason) => Promise<void>,
  graceMs: number | null = 1_000,
  clock?: Clock,
  forceQuitAfterMs?: number,
) {
  const lines: Line[] = [];
  const exits: number[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (line) => lines.push(JSON.parse(line) as Line) } });
  const stopSpy = sinon.spy(stop);
  const options: ProcessTerminatorOptions = {
    logger,
    ...(graceMs === null ? {} : { graceMs }),
    stop: stopSpy,
    exit: (code) => exits.push(code),
    ...(clock ? { clock } : {}),
    ...(forceQuitAfterMs === undefined ? {} : { forceQuitAfterMs }),
  };
  const terminate = createProcessTerminator(options);
  const settled = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  return { terminate, lines, exits, stop: stopSpy, settled, messages: () => lines.map((l) => l.msg) };
}

describe('process terminator: the one place the process ends', () => {
  let clock: sinon.SinonFakeTimers;
  /** The terminator's clock: the fake timers' time. */
  let fakeClock: Clock;
  beforeEach(() => {
    clock = sinon.useFakeTimers();
    fakeClock = { now: () => clock.now };
  });
  afterEach(() => {
    clock.restore();
  });

  it('when SIGTERM arrives, then it stops the node and exits 0', async () => {
    const h = harness(() => Promise.resolve());

    h.terminate('SIGTERM');
    await h.settled();

    expect(h.stop.callCount).to.equal(1);
    // told why: a signal's stop may drain (SHUTDOWN_DRAIN_MS), a crash's does not
    expect(h.stop.firstCall.args).to.deep.equal(['SIGTERM']);
    expect(h.exits).to.deep.equal([0]);
    expect(h.messages()).to.deep.equal(['shutting down', 'stopped']);
    expect(h.lines[0]).to.include({ reason: 'SIGTERM', grace_ms: 1_000, force_quit_after_ms: FORCE_QUIT_AFTER_MS });
  });

  it('when an exception is uncaught, then it logs it (fatal, serialized), stops the same way and exits 1', async () => {
    const h = harness(() => Promise.resolve());

    h.terminate('uncaughtException', new TypeError('boom'));
    await h.settled();

    const fatal = h.lines[0]!;
    expect(fatal).to.include({ level: 60, msg: 'crashed', reason: 'uncaughtException' });
    expect(fatal.err).to.include({ type: 'TypeError', message: 'boom' });
    expect((fatal.err as { stack: string }).stack).to.include('TypeError: boom');
    expect(h.stop.callCount).to.equal(1);
    expect(h.stop.firstCall.args).to.deep.equal(['uncaughtException']);
    expect(h.exits).to.deep.equal([1]);
  });

  it('when a rejection goes unhandled while stopping after a signal, then it is logged and the exit code becomes 1', async () => {
    let finish: () => void = () => undefined;
    const h = harness(() => new Promise<void>((resolve) => (finish = resolve)));

    h.terminate('SIGINT');
    await h.settled();
    h.terminate('unhandledRejection', new Error('late'));
    finish();
    await h.settled();

    expect(h.stop.callCount).to.equal(1);
    expect(h.messages()).to.include('crashed');
    expect(h.exits).to.deep.equal([1]);
  });

  it('when stopping fails, then it logs why and exits 1', async () => {
    const h = harness(() => Promise.reject(new Error('pool already closed')));

    h.terminate('SIGTERM');
    await h.settled();

    const failed = h.lines.find((l) => l.msg === 'shutdown failed');
    expect(failed?.err).to.include({ message: 'pool already closed' });
    expect(h.exits).to.deep.equal([1]);
  });

  it('when stopping outlasts the grace period, then it exits 1 with a log line at the deadline', async () => {
    const h = harness(() => new Promise<void>(() => undefined), 25_000);

    h.terminate('SIGTERM');
    await clock.tickAsync(24_999);
    expect(h.exits).to.deep.equal([]);
    await clock.tickAsync(1);

    expect(h.exits).to.deep.equal([1]);
    expect(h.lines.at(-1)).to.include({ level: 50, msg: 'shutdown did not finish within the grace period', grace_ms: 25_000 });
  });

  it('when a stop step blocked the event loop past the deadline (the timer could not fire), then it still exits 1', async () => {
    let now = 0;
    const h = harness(
      () => {
        now += 2_000;
        return Promise.resolve();
      },
      1_000,
      { now: () => now },
    );

    h.terminate('SIGTERM');
    await h.settled();

    expect(h.exits).to.deep.equal([1]);
    expect(h.messages()).to.include('shutdown did not finish within the grace period');
    expect(h.messages()).not.to.include('stopped');
  });

  it('when the same signal arrives twice within the force-quit window (a group signal and its relayed copy), then it is one stop that exits 0', async () => {
    let finish: () => void = () => undefined;
    const h = harness(() => new Promise<void>((resolve) => (finish = resolve)), 25_000, fakeClock);

    h.terminate('SIGINT');
    await clock.tickAsync(FORCE_QUIT_AFTER_MS - 1);
    h.terminate('SIGINT');
    await h.settled();
    expect(h.exits, 'no force exit').to.deep.equal([]);
    finish();
    await h.settled();

    expect(h.stop.callCount).to.equal(1);
    expect(h.exits).to.deep.equal([0]);
    expect(h.messages()).to.deep.equal(['shutting down', COPY, 'stopped']);
    expect(h.lines[1]).to.include({ level: 30, signal: 'SIGINT', elapsed_ms: FORCE_QUIT_AFTER_MS - 1 });
    expect(h.messages()).not.to.include(FORCE_QUIT);
  });

  it('when a SIGTERM and a SIGINT arrive together (systemd and a terminal, npm relaying), then they are one stop', async () => {
    let finish: () => void = () => undefined;
    const h = harness(() => new Promise<void>((resolve) => (finish = resolve)), 25_000, fakeClock);

    h.terminate('SIGTERM');
    h.terminate('SIGINT');
    await clock.tickAsync(500);
    h.terminate('SIGTERM');
    finish();
    await h.settled();

    expect(h.stop.callCount).to.equal(1);
    expect(h.exits).to.deep.equal([0]);
    expect(h.messages().filter((m) => m === 'shutting down')).to.have.length(1);
    expect(h.lines.filter((l) => l.msg === COPY).map((l) => l.signal)).to.deep.equal(['SIGINT', 'SIGTERM']);
  });

  it('when another signal arrives after the force-quit window while still stopping, then it exits 1 at once with a warn line', async () => {
    let finish: () => void = () => undefined;
    const h = harness(() => new Promise<void>((resolve) => (finish = resolve)), 25_000, fakeClock);

    h.terminate('SIGINT');
    // the window closes, then opens for force-quits at the next turn of the event loop
    await clock.tickAsync(FORCE_QUIT_AFTER_MS + 1);
    h.terminate('SIGINT');
    await h.settled();

    expect(h.exits).to.deep.equal([1]);
    expect(h.lines.at(-1)).to.include({ level: 40, msg: FORCE_QUIT, signal: 'SIGINT', elapsed_ms: FORCE_QUIT_AFTER_MS + 1 });
    // the stop finishing afterwards changes nothing: the process has exited
    finish();
    await h.settled();
    expect(h.exits).to.deep.equal([1]);
    expect(h.stop.callCount).to.equal(1);
  });

  it('when a crash began the stop, then a signal within the window is part of it and a later one force-quits', async () => {
    const h = harness(() => new Promise<void>(() => undefined), 25_000, fakeClock);

    h.terminate('uncaughtException', new Error('boom'));
    h.terminate('SIGTERM');
    await h.settled();
    expect(h.exits).to.deep.equal([]);
    await clock.tickAsync(FORCE_QUIT_AFTER_MS + 1);
    h.terminate('SIGTERM');

    expect(h.exits).to.deep.equal([1]);
    expect(h.messages()).to.deep.equal(['crashed', 'shutting down', COPY, FORCE_QUIT]);
  });

  it('without a grace period (connectors), then a stop has no deadline of its own: only a force-quit ends it early', async () => {
    const h = harness(() => new Promise<void>(() => undefined), null, fakeClock);

    h.terminate('SIGTERM');
    await clock.tickAsync(3_600_000);
    expect(h.exits).to.deep.equal([]);
    expect(h.lines[0]).to.not.have.property('grace_ms');
    h.terminate('SIGTERM');

    expect(h.exits).to.deep.equal([1]);
  });

  it('stopOnSignals hands every SIGTERM and SIGINT to the terminator', () => {
    const listeners = new Map<StopSignal, (() => void)[]>();
    const received: TerminationReason[] = [];
    stopOnSignals((reason) => received.push(reason), {
      on: (event, listener) => listeners.set(event, [...(listeners.get(event) ?? []), listener]),
    });

    for (const signal of ['SIGINT', 'SIGTERM', 'SIGINT'] as const) for (const listener of listeners.get(signal) ?? []) listener();

    expect(received).to.deep.equal(['SIGINT', 'SIGTERM', 'SIGINT']);
  });
});

describe('process terminator: the force-quit window on real timers', () => {
  it('when a copy is handled in the turn the window closes (the event loop was blocked past it), then it is still a copy; a signal after that turn force-quits', async () => {
    const h = harness(() => new Promise<void>(() => undefined), null, undefined, 1);
    const outcomes: number[][] = [];

    h.terminate('SIGINT');
    // due with the window's timer and run after it in the same timers phase, as a signal read after a long block is
    await new Promise<void>((resolve) => {
      setTimeout(() => {
        h.terminate('SIGINT');
        outcomes.push([...h.exits]);
        resolve();
      }, 1);
      // block the event loop well past both timers: Node stamps each timer with the loop's time read afresh, so on a
      // busy machine this one may be a millisecond younger than the window's; once both are overdue they run in
      // creation order in one timers phase, as a signal read after a long block is
      const blockedFrom = performance.now();
      while (performance.now() - blockedFrom < 20) {
        // busy: the event loop is blocked
      }
    });
    await new Promise<void>((resolve) => {
      setImmediate(resolve);
    });
    h.terminate('SIGINT');
    outcomes.push([...h.exits]);

    expect(outcomes).to.deep.equal([[], [1]]);
    expect(h.messages()).to.deep.equal(['shutting down', COPY, FORCE_QUIT]);
  });
});
