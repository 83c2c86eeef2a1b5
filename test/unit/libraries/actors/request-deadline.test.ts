import { expect } from 'chai';
import {
  NO_SCOPE,
  askDeadline,
  beforeDeadline,
  finishDecided,
  liftDeadline,
  patientTimer,
  recordRemoteHop,
  type RequestScope,
} from '../../../../src/libraries/actors/request-deadline.js';
import { createManualClock } from '../../../../src/libraries/clock/clock.js';
import { DeadlineExpiredError } from '../../../../src/libraries/errors/internal-errors.js';

const realMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('request deadlines', () => {
  const clock = createManualClock(Date.parse('2026-06-01T00:00:00Z'));

  it('when a request has a deadline, then each ask carries it, capped by the ask timeout; a lifted one leaves only the ask timeout', () => {
    const now = clock.now();
    expect(askDeadline(now, 5_000)).to.equal(now + 5_000);
    const scope: RequestScope = { deadline: now + 1_000, hops: { hops: 0 } };
    expect(askDeadline(now, 5_000, scope.deadline)).to.equal(now + 1_000);
    expect(askDeadline(now, 500, scope.deadline)).to.equal(now + 500);
    const lifted = liftDeadline(scope);
    expect(askDeadline(now, 5_000, lifted.deadline)).to.equal(now + 5_000);
    // lifting the deadline keeps the rest of the request: its hops still count
    recordRemoteHop(lifted);
    expect(scope.hops?.hops).to.equal(1);
    expect(liftDeadline(NO_SCOPE)).to.equal(NO_SCOPE);
  });

  it('when work runs outside a request, then its hops are counted nowhere', () => {
    expect(() => {
      recordRemoteHop(NO_SCOPE);
    }).to.not.throw();
    expect(NO_SCOPE).to.deep.equal({ deadline: null });
  });

  it('when the deadline has passed, then no step starts', () => {
    const now = clock.now();
    expect(() => {
      beforeDeadline(now + 10, now + 9, 'the charge');
    }).to.not.throw();
    expect(() => {
      beforeDeadline(now + 10, now + 10, 'the charge');
    }).to.throw(DeadlineExpiredError);
    expect(() => {
      beforeDeadline(null, now + 10_000, 'the charge');
    }).to.not.throw();
  });

  it('when a patient timer fires late (the process was frozen), then it waits its time again before expiring', async () => {
    let expired = 0;
    patientTimer(clock, 20, () => expired++);
    // the process "freezes": by the time the timer runs, the clock has moved far past it
    clock.advance(60_000);
    // timers fire in order of expiry: the first (20 ms) has fired and re-armed by now, the second (40 ms) not yet
    await realMs(30);
    expect(expired).to.equal(0);
    await realMs(40);
    expect(expired).to.equal(1);
  });

  it('when a patient timer fires on time, then it expires once; cancelled, never', async () => {
    let expired = 0;
    patientTimer(clock, 10, () => expired++);
    const cancel = patientTimer(clock, 10, () => expired++);
    cancel();
    await realMs(40);
    expect(expired).to.equal(1);
  });

  it('when a decided step runs, then it gets the request without its deadline and is retried until it succeeds', async () => {
    const manual = createManualClock(clock.now());
    const scope: RequestScope = { deadline: manual.now() + 100, hops: { hops: 0 } };
    const seen: RequestScope[] = [];
    const sleeps: number[] = [];
    const sleep = (ms: number) => {
      sleeps.push(ms);
      manual.advance(ms);
      return Promise.resolve();
    };
    const finished = await finishDecided(
      manual,
      10_000,
      scope,
      (decided) => {
        seen.push(decided);
        recordRemoteHop(decided);
        return seen.length < 3 ? Promise.reject(new Error('wallet busy')) : Promise.resolve();
      },
      sleep,
    );
    expect(finished).to.equal(true);
    expect(seen.map((s) => s.deadline)).to.deep.equal([null, null, null]);
    // the request's hops are still its own
    expect(scope.hops?.hops).to.equal(3);
    expect(sleeps).to.deep.equal([25, 50]);
  });

  it('when a decided step keeps failing past its bound, then it gives up and says so', async () => {
    const manual = createManualClock(clock.now());
    let attempts = 0;
    const sleep = (ms: number) => {
      manual.advance(ms);
      return Promise.resolve();
    };
    const finished = await finishDecided(
      manual,
      500,
      NO_SCOPE,
      () => {
        attempts++;
        return Promise.reject(new Error('wallet down'));
      },
      sleep,
    );
    expect(finished).to.equal(false);
    // 25 + 50 + 100 + 200 = 375 ms slept; the next wait (400 ms) would pass the 500 ms bound
    expect(attempts).to.equal(5);
  });
});
