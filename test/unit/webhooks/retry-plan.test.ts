import { expect } from 'chai';
import fc from 'fast-check';
import { attemptOutcome, judgeAttempt, maxAttempts, type AttemptResult, type AttemptVerdict } from '../../../src/webhooks/retry-plan.js';

// The contract's backoff: 30 s, 2 min, 10 min, 1 h.
const DELAYS = [30_000, 120_000, 600_000, 3_600_000] as const;

const ok = (status = 200): AttemptResult => ({ type: 'response', status });
const status = (code: number): AttemptResult => ({ type: 'response', status: code });
const TIMEOUT: AttemptResult = { type: 'timeout' };
const CONNECTION_ERROR: AttemptResult = {
  type: 'connection_error',
  kind: 'connection_refused',
  reason: 'connect ECONNREFUSED 127.0.0.1:1',
};

interface DeliveryRun {
  readonly attempts: number;
  readonly delays: readonly number[];
  readonly outcome: 'acknowledged' | 'rejected' | 'dropped';
}

/** Delivers one event to a receiver answering `answers` in turn (the last answer repeats). */
function deliver(answers: readonly AttemptResult[], delays: readonly number[] = DELAYS): DeliveryRun {
  const waited: number[] = [];
  for (let attempt = 1; ; attempt++) {
    const answer = answers[Math.min(attempt - 1, answers.length - 1)]!;
    const verdict: AttemptVerdict = judgeAttempt(answer, attempt, delays);
    if (verdict.verdict !== 'retry') return { attempts: attempt, delays: waited, outcome: verdict.verdict };
    expect(verdict.retryNumber).to.equal(attempt);
    waited.push(verdict.delayMs);
    if (attempt > delays.length + 1) throw new Error('the plan never ends');
  }
}

const failures = (n: number, kind: AttemptResult): AttemptResult[] => Array.from({ length: n }, () => kind);

describe('webhook retry plan', () => {
  it('when the delays are the contract ones, then at most 5 deliveries are made', () => {
    expect(maxAttempts(DELAYS)).to.equal(5);
    expect(maxAttempts([])).to.equal(1);
  });

  for (let n = 0; n <= 4; n++) {
    it(`when the receiver fails ${n} times then answers 200, then it gets ${n + 1} attempts after ${n} delays`, () => {
      const run = deliver([...failures(n, status(503)), ok()]);

      expect(run).to.deep.equal({ attempts: n + 1, delays: DELAYS.slice(0, n), outcome: 'acknowledged' });
    });
  }

  for (const [name, failure] of [
    ['500', status(500)],
    ['a timeout', TIMEOUT],
    ['a connection error', CONNECTION_ERROR],
  ] as const) {
    it(`when the receiver always fails with ${name}, then it gets 5 attempts and the event is dropped`, () => {
      const run = deliver([failure]);

      expect(run).to.deep.equal({ attempts: 5, delays: [...DELAYS], outcome: 'dropped' });
    });
  }

  it('when the 5th attempt also fails, then the event is dropped rather than retried', () => {
    expect(judgeAttempt(status(500), 4, DELAYS)).to.deep.equal({ verdict: 'retry', delayMs: 3_600_000, retryNumber: 4 });
    expect(judgeAttempt(status(500), 5, DELAYS)).to.deep.equal({ verdict: 'dropped' });
    expect(judgeAttempt(TIMEOUT, 5, DELAYS)).to.deep.equal({ verdict: 'dropped' });
    expect(judgeAttempt(CONNECTION_ERROR, 5, DELAYS)).to.deep.equal({ verdict: 'dropped' });
  });

  describe('4xx ends delivery at once', () => {
    for (const code of [400, 404, 410, 499]) {
      for (let attempt = 1; attempt <= 5; attempt++) {
        it(`when attempt ${attempt} gets ${code}, then the event is rejected`, () => {
          expect(judgeAttempt(status(code), attempt, DELAYS)).to.deep.equal({ verdict: 'rejected' });
        });
      }
    }

    it('when the receiver fails twice then answers 410, then delivery stops after 3 attempts', () => {
      expect(deliver([status(502), TIMEOUT, status(410), ok()])).to.deep.equal({
        attempts: 3,
        delays: [30_000, 120_000],
        outcome: 'rejected',
      });
    });
  });

  describe('2xx acknowledges', () => {
    for (const code of [200, 201, 204, 299]) {
      for (const attempt of [1, 5]) {
        it(`when attempt ${attempt} gets ${code}, then the event is acknowledged`, () => {
          expect(judgeAttempt(status(code), attempt, DELAYS)).to.deep.equal({ verdict: 'acknowledged' });
        });
      }
    }
  });

  describe('other answers retry', () => {
    const retried: readonly (readonly [string, AttemptResult])[] = [
      ['199', status(199)],
      ['300', status(300)],
      ['302', status(302)],
      ['399', status(399)],
      ['500', status(500)],
      ['503', status(503)],
      ['599', status(599)],
      ['a timeout', TIMEOUT],
      ['a connection error', CONNECTION_ERROR],
    ];
    for (const [name, result] of retried) {
      it(`when attempt 1 gets ${name}, then it is retried after 30 s`, () => {
        expect(judgeAttempt(result, 1, DELAYS)).to.deep.equal({ verdict: 'retry', delayMs: 30_000, retryNumber: 1 });
      });
    }

    for (let attempt = 1; attempt <= 4; attempt++) {
      it(`when attempt ${attempt} fails, then the next one waits ${DELAYS[attempt - 1]!} ms`, () => {
        expect(judgeAttempt(status(503), attempt, DELAYS)).to.deep.equal({
          verdict: 'retry',
          delayMs: DELAYS[attempt - 1],
          retryNumber: attempt,
        });
      });
    }
  });

  it('when the receiver answers anything, then the run ends within maxAttempts with the delays in order', () => {
    const answer = fc.oneof(fc.integer({ min: 100, max: 599 }).map(status), fc.constant(TIMEOUT), fc.constant(CONNECTION_ERROR));
    fc.assert(
      fc.property(fc.array(answer, { minLength: 1, maxLength: 8 }), (answers) => {
        const run = deliver(answers);

        expect(run.attempts).to.be.at.most(maxAttempts(DELAYS));
        expect(run.delays).to.deep.equal(DELAYS.slice(0, run.attempts - 1));
        const last = answers[Math.min(run.attempts - 1, answers.length - 1)]!;
        const lastStatus = last.type === 'response' ? last.status : null;
        if (lastStatus !== null && lastStatus >= 200 && lastStatus < 300) expect(run.outcome).to.equal('acknowledged');
        else if (lastStatus !== null && lastStatus >= 400 && lastStatus < 500) expect(run.outcome).to.equal('rejected');
        else expect(run).to.include({ outcome: 'dropped', attempts: 5 });
      }),
    );
  });

  it('when other delays are configured, then they are used in order and maxAttempts follows them', () => {
    const run = deliver([TIMEOUT], [10, 20]);

    expect(run).to.deep.equal({ attempts: 3, delays: [10, 20], outcome: 'dropped' });
    expect(maxAttempts([10, 20])).to.equal(3);
  });
});

describe("webhook retry plan: an attempt's outcome in one word", () => {
  it('when the endpoint answered, then the outcome is http_ and its status', () => {
    expect([ok(204), status(301), status(404), status(503)].map(attemptOutcome)).to.deep.equal([
      'http_204',
      'http_301',
      'http_404',
      'http_503',
    ]);
  });

  it("when there was no answer, then the outcome is timeout or the connection failure's kind, never its text", () => {
    expect(attemptOutcome(TIMEOUT)).to.equal('timeout');
    expect(attemptOutcome(CONNECTION_ERROR)).to.equal('connection_refused');
    expect(attemptOutcome({ type: 'connection_error', kind: 'secret_unreadable', reason: 'secret_unreadable: no key k1' })).to.equal(
      'secret_unreadable',
    );
  });
});
