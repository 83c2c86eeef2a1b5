import { expect } from 'chai';
import sinon from 'sinon';
import pg from 'pg';
import { TimeoutError } from '@nats-io/nats-core';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { dependencyOf, isDatabaseConnectionError } from '../../../src/libraries/errors/dependency-failure.js';
import { createLogger } from '../../../src/libraries/logger/logger.js';
import { OUTAGE_TAIL_MS, createDependencyOutages, watchDependencies } from '../../../src/libraries/observability/dependency-outages.js';
import { DependencyUnavailableError } from '../../../src/libraries/errors/internal-errors.js';

type Line = Record<string, unknown> & { msg: string; level: number };

function harness() {
  const lines: Line[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (line) => lines.push(JSON.parse(line) as Line) } });
  const clock = createManualClock(1_000_000);
  const outages = createDependencyOutages({ logger, clock });
  return { lines, clock, outages, messages: () => lines.map((l) => `${String(l.dependency)}: ${l.msg}`) };
}

const pgError = (code: string, message: string): Error => Object.assign(new pg.DatabaseError(message, message.length, 'error'), { code });

describe('dependency outages: one warning when a dependency goes, one when it is back', () => {
  it('when a dependency fails many times, then the outage is logged once, and its end once with its length and failures', () => {
    const h = harness();

    for (let i = 0; i < 50; i++) h.outages.failed('database', new Error('connect ECONNREFUSED'), 'outbox_relay_failed');
    h.clock.advance(30_000);
    h.outages.answered('database');
    h.outages.answered('database');

    expect(h.messages()).to.deep.equal([
      'database: dependency unavailable: requests that need it answer 503 until it is back',
      'database: dependency available again',
    ]);
    expect(h.lines[0]).to.include({ level: 40, what: 'outbox_relay_failed' });
    expect(h.lines[1]).to.include({ level: 40, down_ms: 30_000, failures: 50 });
  });

  it('when one dependency is down, then the other one is neither down nor logged', () => {
    const h = harness();

    h.outages.failed('transport', new Error('timeout'));

    expect(h.outages.isDown('transport')).to.equal(true);
    expect(h.outages.isDown('database')).to.equal(false);
    expect(h.messages()).to.deep.equal(['transport: dependency unavailable: requests that need it answer 503 until it is back']);
  });

  it('when operations begun during an outage fail just after it ended, then they are its tail, not a new outage', () => {
    const h = harness();
    h.outages.failed('transport', new Error('timeout'));
    h.outages.answered('transport');

    h.clock.advance(OUTAGE_TAIL_MS - 1);
    h.outages.failed('transport', new Error('publish timeout'), 'webhook_relay_failed');

    expect(h.outages.isDown('transport')).to.equal(false);
    expect(h.lines).to.have.length(2);
  });

  it('when a probe fails just after an outage ended, or any failure comes later, then a new outage starts', () => {
    const h = harness();
    h.outages.failed('database', new Error('down'));
    h.outages.answered('database');

    h.outages.failed('database', new Error('down again'), 'probe');
    h.outages.answered('database');
    h.clock.advance(OUTAGE_TAIL_MS);
    h.outages.failed('database', new Error('and again'), 'outbox_relay_failed');

    expect(h.messages().filter((m) => m.endsWith('until it is back'))).to.have.length(3);
    expect(h.outages.isDown('database')).to.equal(true);
  });
});

describe('dependency watch: probes end an outage once the dependency answers', () => {
  let timers: sinon.SinonFakeTimers;
  beforeEach(() => {
    timers = sinon.useFakeTimers();
  });
  afterEach(() => {
    timers.restore();
  });

  it('when the database fails the node and comes back, then probes run meanwhile and the next one ends the outage', async () => {
    const h = harness();
    let database: 'ok' | 'down' = 'ok';
    const probes = {
      database: sinon.spy(() => Promise.resolve(database)),
      transport: sinon.spy(() => Promise.resolve<'ok' | 'down'>('ok')),
    };
    const watch = watchDependencies({ outages: h.outages, probes, intervalMs: 1_000 });

    await timers.tickAsync(3_000);
    expect(probes.database.callCount, 'no probe while nothing is down').to.equal(0);
    database = 'down';
    h.outages.failed('database', new Error('Connection terminated unexpectedly'), 'outbox_relay_failed');
    await timers.tickAsync(5_000);
    expect(h.outages.isDown('database')).to.equal(true);
    database = 'ok';
    await timers.tickAsync(1_000);
    watch.stop();

    expect(h.outages.isDown('database')).to.equal(false);
    expect(probes.database.callCount).to.equal(6);
    expect(probes.transport.callCount).to.equal(0);
    expect(h.messages()).to.deep.equal([
      'database: dependency unavailable: requests that need it answer 503 until it is back',
      'database: dependency available again',
    ]);
    expect(h.lines[1]).to.include({ failures: 6 });
  });
});

describe('dependency failures: which errors mean a dependency is out of reach', () => {
  it('when pg reports a lost, refused or ending session, then it is a database connection error', () => {
    expect(isDatabaseConnectionError(pgError('57P01', 'terminating connection due to administrator command'))).to.equal(true);
    expect(isDatabaseConnectionError(pgError('57P03', 'the database system is starting up'))).to.equal(true);
    expect(isDatabaseConnectionError(pgError('08006', 'connection failure'))).to.equal(true);
    expect(isDatabaseConnectionError(Object.assign(new Error('connect ECONNREFUSED 127.0.0.1:5432'), { code: 'ECONNREFUSED' }))).to.equal(
      true,
    );
    expect(isDatabaseConnectionError(new Error('Connection terminated unexpectedly'))).to.equal(true);
    expect(isDatabaseConnectionError(new Error('timeout exceeded when trying to connect'))).to.equal(true);
  });

  it('when pg refuses a statement (a unique violation, bad input), then it is not a connection error', () => {
    expect(isDatabaseConnectionError(pgError('23505', 'duplicate key value violates unique constraint'))).to.equal(false);
    expect(isDatabaseConnectionError(pgError('22P02', 'invalid input syntax'))).to.equal(false);
    expect(isDatabaseConnectionError('ECONNREFUSED')).to.equal(false);
  });

  it('when an error is or wraps a dependency failure, then its dependency is named; any other error names none', () => {
    const wrapped = new Error('the relay failed', {
      cause: new DependencyUnavailableError('database', new Error('Connection terminated unexpectedly')),
    });
    expect(dependencyOf(wrapped)).to.equal('database');
    expect(dependencyOf(new TimeoutError())).to.equal('transport');
    expect(dependencyOf(new Error('a bug'))).to.equal(null);
    expect(dependencyOf(pgError('57P01', 'terminating connection'))).to.equal(null);
  });
});
