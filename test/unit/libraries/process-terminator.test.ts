import { expect } from 'chai';
import sinon from 'sinon';
import { createProcessTerminator, type ProcessTerminatorOptions } from '../../../src/libraries/lifecycle/process-terminator.js';
import { createLogger } from '../../../src/libraries/logger/logger.js';

type Line = Record<string, unknown> & { msg: string; level: number };

function harness(stop: () => Promise<void>, graceMs = 1_000, now?: () => number) {
  const lines: Line[] = [];
  const exits: number[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (line) => lines.push(JSON.parse(line) as Line) } });
  const stopSpy = sinon.spy(stop);
  const options: ProcessTerminatorOptions = { logger, graceMs, stop: stopSpy, exit: (code) => exits.push(code), ...(now ? { now } : {}) };
  const terminate = createProcessTerminator(options);
  const settled = async (): Promise<void> => {
    for (let i = 0; i < 10; i++) await Promise.resolve();
  };
  return { terminate, lines, exits, stop: stopSpy, settled, messages: () => lines.map((l) => l.msg) };
}

describe('process terminator: the one place the process ends', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => {
    clock = sinon.useFakeTimers();
  });
  afterEach(() => {
    clock.restore();
  });

  it('when SIGTERM arrives, then it stops the node and exits 0', async () => {
    const h = harness(() => Promise.resolve());

    h.terminate('SIGTERM');
    await h.settled();

    expect(h.stop.callCount).to.equal(1);
    expect(h.exits).to.deep.equal([0]);
    expect(h.messages()).to.deep.equal(['shutting down', 'stopped']);
    expect(h.lines[0]).to.include({ reason: 'SIGTERM', grace_ms: 1_000 });
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
      () => now,
    );

    h.terminate('SIGTERM');
    await h.settled();

    expect(h.exits).to.deep.equal([1]);
    expect(h.messages()).to.include('shutdown did not finish within the grace period');
    expect(h.messages()).not.to.include('stopped');
  });

  it('when a second signal arrives while stopping, then it exits 1 at once', async () => {
    const h = harness(() => new Promise<void>(() => undefined));

    h.terminate('SIGINT');
    h.terminate('SIGINT');
    await h.settled();

    expect(h.stop.callCount).to.equal(1);
    expect(h.exits).to.deep.equal([1]);
    expect(h.messages()).to.include('second signal while stopping: exiting now');
  });
});
