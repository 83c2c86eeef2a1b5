import { expect } from 'chai';
import fc from 'fast-check';
import {
  admissionsOf,
  EMPTY_RATE_STATE,
  RATE_BUCKETS,
  decide,
  ratePolicyOf,
  type AdmissionLog,
  type RateBucket,
  type RateDecision,
  type RateLimitPolicy,
  type RateState,
} from '../../../src/api-keys/rate-limiter.js';
import { loadConfig } from '../../../src/libraries/config/config.js';

/** v1's caps (send, status, balance) and the product's own (calculate, management, 1302 suspension). */
const POLICY: RateLimitPolicy = {
  windowMs: 60_000,
  limits: { send: 60, status: 120, balance: 30, calculate: 60, management: 60 },
  suspendAfterRejections: 20,
  suspensionMs: 900_000,
};

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0);

interface Step {
  readonly decision: RateDecision;
  readonly state: RateState;
}

/** Feeds the requests in order, threading the state; returns every decision. */
function run(start: RateState, requests: readonly (readonly [RateBucket, number])[], policy: RateLimitPolicy = POLICY): Step[] {
  let state = start;
  return requests.map(([bucket, now]) => {
    const decision = decide(state, bucket, now, policy);
    state = decision.state;
    return { decision, state };
  });
}

function lastState(steps: readonly Step[], fallback: RateState = EMPTY_RATE_STATE): RateState {
  return steps.at(-1)?.state ?? fallback;
}

/** `count` requests to one bucket, one per millisecond from `from`. */
function burst(bucket: RateBucket, count: number, from: number): [RateBucket, number][] {
  return Array.from({ length: count }, (_, i) => [bucket, from + i] as [RateBucket, number]);
}

/** State with `bucket` filled to its cap at `at` (all admissions at the same instant). */
function filled(bucket: RateBucket, at: number, policy: RateLimitPolicy = POLICY, start: RateState = EMPTY_RATE_STATE): RateState {
  const steps = run(
    start,
    Array.from({ length: policy.limits[bucket] }, () => [bucket, at] as [RateBucket, number]),
    policy,
  );
  expect(steps.every((s) => s.decision.outcome === 'admitted')).to.equal(true);
  return lastState(steps, start);
}

function limited(decision: RateDecision): Extract<RateDecision, { outcome: 'limited' }> {
  expect(decision.outcome).to.equal('limited');
  return decision as Extract<RateDecision, { outcome: 'limited' }>;
}

function suspended(decision: RateDecision): Extract<RateDecision, { outcome: 'suspended' }> {
  expect(decision.outcome).to.equal('suspended');
  return decision as Extract<RateDecision, { outcome: 'suspended' }>;
}

describe('rate limiter', () => {
  describe('caps within one window', () => {
    for (const bucket of RATE_BUCKETS) {
      const cap = POLICY.limits[bucket];

      it(`when ${bucket} gets ${cap - 1} requests (cap − 1), then all are admitted and one more is admitted too`, () => {
        const steps = run(EMPTY_RATE_STATE, burst(bucket, cap, T0));

        expect(steps.slice(0, cap - 1).every((s) => s.decision.outcome === 'admitted')).to.equal(true);
        expect(steps[cap - 1]!.decision.outcome).to.equal('admitted');
      });

      it(`when ${bucket} gets exactly ${cap} requests (cap), then all ${cap} are admitted and logged`, () => {
        const steps = run(EMPTY_RATE_STATE, burst(bucket, cap, T0));

        expect(steps.map((s) => s.decision.outcome)).to.deep.equal(Array.from({ length: cap }, () => 'admitted'));
        expect(admissionsOf(lastState(steps), bucket)).to.have.length(cap);
      });

      it(`when ${bucket} gets ${cap + 1} requests (cap + 1), then the last one is limited with Retry-After 60 and is not logged`, () => {
        const steps = run(EMPTY_RATE_STATE, burst(bucket, cap + 1, T0));

        const last = limited(steps[cap]!.decision);
        expect(steps.slice(0, cap).every((s) => s.decision.outcome === 'admitted')).to.equal(true);
        // the first admission (T0) leaves at T0 + 60 000; the rejection is at T0 + cap ms
        expect(last.retryAfterSeconds).to.equal(60);
        expect(last.suspendedNow).to.equal(false);
        expect(admissionsOf(last.state, bucket)).to.have.length(cap);
        expect(last.state.rejections).to.deep.equal([T0 + cap]);
      });
    }

    it('uses the caps of v1 and of the product', () => {
      expect(RATE_BUCKETS).to.deep.equal(['send', 'status', 'balance', 'calculate', 'management']);
    });
  });

  describe('continuous window', () => {
    const spread = Array.from({ length: 30 }, (_, i) => ['balance', T0 + i * 1000] as [RateBucket, number]);

    it('when 30 balance requests arrive at t = 0..29 s, then the 31st at t = 59.999 s is limited for 1 s', () => {
      const steps = run(EMPTY_RATE_STATE, [...spread, ['balance', T0 + 59_999]]);

      expect(steps.slice(0, 30).every((s) => s.decision.outcome === 'admitted')).to.equal(true);
      expect(limited(steps[30]!.decision).retryAfterSeconds).to.equal(1);
    });

    it('when the first of them leaves at t = 60 s, then exactly one more is admitted, and the next slot opens at t = 61 s', () => {
      const steps = run(EMPTY_RATE_STATE, [
        ...spread,
        ['balance', T0 + 59_999],
        ['balance', T0 + 60_000],
        ['balance', T0 + 60_000],
        ['balance', T0 + 60_999],
        ['balance', T0 + 61_000],
      ]);

      expect(steps.slice(30).map((s) => s.decision.outcome)).to.deep.equal(['limited', 'admitted', 'limited', 'limited', 'admitted']);
      expect(limited(steps[32]!.decision).retryAfterSeconds).to.equal(1);
      expect(limited(steps[33]!.decision).retryAfterSeconds).to.equal(1);
    });

    it('when 30 requests arrive in the last second of a minute, then the next minute boundary does not reset the window', () => {
      const late = Array.from({ length: 30 }, (_, i) => ['balance', T0 + 59_000 + i] as [RateBucket, number]);

      const steps = run(EMPTY_RATE_STATE, [...late, ['balance', T0 + 60_000], ['balance', T0 + 118_999], ['balance', T0 + 119_000]]);

      expect(limited(steps[30]!.decision).retryAfterSeconds).to.equal(59);
      expect(limited(steps[31]!.decision).retryAfterSeconds).to.equal(1);
      expect(steps[32]!.decision.outcome).to.equal('admitted');
    });

    it('when admissions are spread, then Retry-After counts down to the oldest admission leaving, not to the end of the burst', () => {
      const steps = run(EMPTY_RATE_STATE, [...spread, ['balance', T0 + 30_000], ['balance', T0 + 60_000]]);

      expect(limited(steps[30]!.decision).retryAfterSeconds).to.equal(30);
      expect(steps[31]!.decision.outcome).to.equal('admitted');
    });
  });

  describe('Retry-After', () => {
    // balance is full at T0 + 250 ms; its first slot frees at T0 + 60 250
    const full = filled('balance', T0 + 250);
    const rows: readonly (readonly [number, number])[] = [
      [1, 60], // 59 999 ms left
      [999, 60], // 59 001 ms left
      [1_000, 59], // exactly 59 000 ms left
      [1_001, 59], // 58 999 ms left
      [10_100, 50], // 49 900 ms left
      [30_000, 30],
      [58_999, 2], // 1 001 ms left
      [59_000, 1], // exactly 1 000 ms left
      [59_999, 1], // 1 ms left
    ];

    for (const [offset, seconds] of rows) {
      it(`when the bucket filled ${offset} ms ago, then Retry-After is ${seconds} s, and waiting exactly that long is admitted`, () => {
        const now = T0 + 250 + offset;

        const decision = limited(decide(full, 'balance', now, POLICY));

        expect(decision.retryAfterSeconds).to.equal(seconds);
        expect(decide(decision.state, 'balance', now + seconds * 1000, POLICY).outcome).to.equal('admitted');
        if (seconds > 1) expect(decide(decision.state, 'balance', now + (seconds - 1) * 1000, POLICY).outcome).to.equal('limited');
      });
    }

    it('when a client retries before Retry-After, then it gets another 429 with a fresh, smaller Retry-After', () => {
      const steps = run(full, [
        ['balance', T0 + 10_250],
        ['balance', T0 + 30_250],
        ['balance', T0 + 59_750],
        ['balance', T0 + 60_250],
      ]);

      expect(limited(steps[0]!.decision).retryAfterSeconds).to.equal(50);
      expect(limited(steps[1]!.decision).retryAfterSeconds).to.equal(30);
      expect(limited(steps[2]!.decision).retryAfterSeconds).to.equal(1);
      expect(steps[3]!.decision.outcome).to.equal('admitted');
      // the three rejections were not logged as admissions
      expect(admissionsOf(steps[2]!.state, 'balance')).to.have.length(30);
      expect(steps[2]!.state.rejections).to.deep.equal([T0 + 10_250, T0 + 30_250, T0 + 59_750]);
    });
  });

  describe('the admission log', () => {
    it('when two decisions branch from one state, then each sees only its own admission and the parent is unchanged', () => {
      const parent = run(EMPTY_RATE_STATE, [
        ['send', T0],
        ['send', T0 + 1],
      ]).at(-1)!.state;
      const left = decide(parent, 'send', T0 + 2, POLICY).state;
      const right = decide(parent, 'send', T0 + 3, POLICY).state;

      expect(admissionsOf(parent, 'send')).to.deep.equal([T0, T0 + 1]);
      expect(admissionsOf(left, 'send')).to.deep.equal([T0, T0 + 1, T0 + 2]);
      expect(admissionsOf(right, 'send')).to.deep.equal([T0, T0 + 1, T0 + 3]);
      expect(admissionsOf(decide(left, 'send', T0 + 4, POLICY).state, 'send')).to.deep.equal([T0, T0 + 1, T0 + 2, T0 + 4]);
    });

    it('when a limit of 5 000 a minute sees 20 000 requests over four minutes, then the window holds exactly the last minute and the cap holds', () => {
      const policy: RateLimitPolicy = { ...POLICY, limits: { ...POLICY.limits, status: 5_000 }, suspendAfterRejections: 1_000_000 };
      let state = EMPTY_RATE_STATE;
      let admitted = 0;
      // 5 000 requests per minute, evenly spread: every one fits, and old instants leave (the log is compacted)
      for (let i = 0; i < 20_000; i++) {
        const decision = decide(state, 'status', T0 + i * 12, policy);
        if (decision.outcome === 'admitted') admitted++;
        state = decision.state;
      }
      expect(admitted).to.equal(20_000);
      const last = T0 + 19_999 * 12;
      const logged = admissionsOf(state, 'status');
      expect(logged).to.have.length(5_000);
      expect(logged[0]).to.equal(last - 59_988);
      expect(logged.at(-1)).to.equal(last);
      // a burst in the same instant is cut at the cap
      const burst = run(
        state,
        Array.from({ length: 10 }, () => ['status', last + 12] as [RateBucket, number]),
        policy,
      );
      expect(burst.filter((s) => s.decision.outcome === 'admitted')).to.have.length(1);
    });
  });

  describe('the admission log storage', () => {
    /** Short windows and a high cap, so that many admissions leave the window without any rejection. */
    const roomy: RateLimitPolicy = { ...POLICY, windowMs: 1_000, limits: { ...POLICY.limits, status: 5_000 } };

    function logOf(state: RateState, bucket: RateBucket): AdmissionLog {
      const log = state.admitted[bucket];
      expect(log, bucket).to.not.equal(undefined);
      return log!;
    }

    /** `count` status admissions at the instant `at`, from `start`. */
    function admittedAt(count: number, at: number, start: RateState = EMPTY_RATE_STATE): RateState {
      const steps = run(
        start,
        Array.from({ length: count }, () => ['status', at] as [RateBucket, number]),
        roomy,
      );
      expect(steps.every((s) => s.decision.outcome === 'admitted')).to.equal(true);
      return lastState(steps, start);
    }

    it('when admissions follow one another, then each extends the same storage instead of copying the log', () => {
      const steps = run(EMPTY_RATE_STATE, burst('send', 4, T0));

      const second = logOf(steps[1]!.state, 'send');
      const fourth = logOf(steps[3]!.state, 'send');
      expect(fourth.instants).to.equal(second.instants);
      expect([fourth.start, fourth.end]).to.deep.equal([second.start, second.end + 2]);
    });

    it('when a limited request finds no admission leaving the window, then the bucket keeps the very same log', () => {
      const full = filled('balance', T0);

      const decision = limited(decide(full, 'balance', T0 + 1, POLICY));

      expect(decision.state.admitted.balance).to.equal(full.admitted.balance);
    });

    it('when only a few admissions have left the window, then the log still grows in place', () => {
      const before = run(EMPTY_RATE_STATE, burst('send', 3, T0)).at(-1)!.state;

      // T0 and T0 + 1 leave; two of the three stored instants are dead, but far fewer than 1 024
      const after = decide(before, 'send', T0 + 60_001, POLICY).state;

      expect(logOf(after, 'send').instants).to.equal(logOf(before, 'send').instants);
      expect(admissionsOf(after, 'send')).to.deep.equal([T0 + 2, T0 + 60_001]);
    });

    it('when exactly 1 024 dead instants are held, then the log still grows in place; at 1 025 it is compacted', () => {
      const at1024 = admittedAt(1_024, T0);
      const at1025 = admittedAt(1_025, T0);

      const kept = decide(at1024, 'status', T0 + 1_000, roomy).state;
      const compacted = decide(at1025, 'status', T0 + 1_000, roomy).state;

      expect(logOf(kept, 'status').instants).to.equal(logOf(at1024, 'status').instants);
      expect(logOf(compacted, 'status')).to.deep.equal({ instants: [T0 + 1_000], start: 0, end: 1 });
      expect(admissionsOf(kept, 'status')).to.deep.equal([T0 + 1_000]);
    });

    it('when exactly half of the held instants are dead, then the log still grows in place; past half it is compacted', () => {
      // 1 025 at T0 and 1 025 at T0 + 500: at T0 + 1 000 the first 1 025 leave, exactly half of 2 050
      const half = admittedAt(1_025, T0 + 500, admittedAt(1_025, T0));
      // 1 026 at T0 and 1 025 at T0 + 500: at T0 + 1 000, 1 026 of 2 051 leave
      const past = admittedAt(1_025, T0 + 500, admittedAt(1_026, T0));

      const kept = decide(half, 'status', T0 + 1_000, roomy).state;
      const compacted = decide(past, 'status', T0 + 1_000, roomy).state;

      expect(logOf(kept, 'status').instants).to.equal(logOf(half, 'status').instants);
      expect(logOf(compacted, 'status')).to.include({ start: 0, end: 1_026 });
      expect(logOf(compacted, 'status').instants).to.have.length(1_026);
      expect(admissionsOf(kept, 'status')).to.have.length(1_026);
    });

    it('when a cap of 1 sees 3 000 admissions one window apart, then the storage never holds more than 1 025 instants', () => {
      const policy: RateLimitPolicy = { ...roomy, limits: { ...roomy.limits, balance: 1 } };
      let state = EMPTY_RATE_STATE;
      let largest = 0;
      for (let i = 0; i < 3_000; i++) {
        const decision = decide(state, 'balance', T0 + i * 1_000, policy);
        expect(decision.outcome).to.equal('admitted');
        state = decision.state;
        largest = Math.max(largest, logOf(state, 'balance').instants.length);
      }

      expect(largest).to.equal(1_025);
      expect(admissionsOf(state, 'balance')).to.deep.equal([T0 + 2_999_000]);
    });
  });

  describe('the configured policy', () => {
    it('when the rate limits are configured, then the policy carries the window, every bucket cap and the suspension rule', () => {
      const config = loadConfig({
        env: {
          RATE_LIMIT_WINDOW_MS: '30000',
          RATE_LIMIT_SEND: '7',
          RATE_LIMIT_STATUS: '8',
          RATE_LIMIT_BALANCE: '9',
          RATE_LIMIT_CALCULATE: '10',
          RATE_LIMIT_MANAGEMENT: '11',
          SUSPEND_AFTER_REJECTIONS: '5',
          SUSPENSION_MS: '120000',
        },
      });

      expect(ratePolicyOf(config)).to.deep.equal({
        windowMs: 30_000,
        limits: { send: 7, status: 8, balance: 9, calculate: 10, management: 11 },
        suspendAfterRejections: 5,
        suspensionMs: 120_000,
      });
    });
  });

  describe('buckets', () => {
    it('when balance is exhausted, then send, status, calculate and management are still admitted', () => {
      const full = filled('balance', T0);

      expect(decide(full, 'balance', T0 + 1, POLICY).outcome).to.equal('limited');
      for (const bucket of ['send', 'status', 'calculate', 'management'] as const) {
        expect(decide(full, bucket, T0 + 1, POLICY).outcome, bucket).to.equal('admitted');
      }
    });

    it('when every bucket is filled to its cap, then each bucket limits only its own overflow', () => {
      let state = EMPTY_RATE_STATE;
      for (const bucket of RATE_BUCKETS) state = filled(bucket, T0, POLICY, state);

      for (const bucket of RATE_BUCKETS) {
        expect(admissionsOf(state, bucket), bucket).to.have.length(POLICY.limits[bucket]);
        expect(decide(state, bucket, T0 + 1, POLICY).outcome, bucket).to.equal('limited');
      }
    });

    it('when send admissions happen, then they do not count against status', () => {
      const steps = run(filled('send', T0), burst('status', 120, T0 + 1));

      expect(steps.every((s) => s.decision.outcome === 'admitted')).to.equal(true);
      expect(limited(decide(lastState(steps), 'status', T0 + 200, POLICY)).retryAfterSeconds).to.equal(60);
    });
  });

  describe('suspension (1302)', () => {
    /** balance full at T0, then `count` rejected balance requests one per 100 ms from T0 + 1000. */
    function rejectedTimes(count: number): number[] {
      return Array.from({ length: count }, (_, i) => T0 + 1000 + i * 100);
    }

    it('when a key is rejected 19 times within a window, then it is not suspended and other buckets still admit', () => {
      const steps = run(
        filled('balance', T0),
        rejectedTimes(19).map((t) => ['balance', t] as [RateBucket, number]),
      );

      expect(steps.every((s) => s.decision.outcome === 'limited' && !s.decision.suspendedNow)).to.equal(true);
      expect(lastState(steps).suspendedUntil).to.equal(null);
      expect(lastState(steps).rejections).to.have.length(19);
      expect(decide(lastState(steps), 'send', T0 + 5000, POLICY).outcome).to.equal('admitted');
    });

    it('when the 20th rejection within a window comes, then it is limited with suspendedNow and the key is suspended for exactly 15 minutes', () => {
      const times = rejectedTimes(20);
      const steps = run(
        filled('balance', T0),
        times.map((t) => ['balance', t] as [RateBucket, number]),
      );

      const twentieth = limited(steps[19]!.decision);
      expect(steps.slice(0, 19).every((s) => s.decision.outcome === 'limited' && !s.decision.suspendedNow)).to.equal(true);
      expect(twentieth.suspendedNow).to.equal(true);
      expect(twentieth.retryAfterSeconds).to.equal(900);
      expect(twentieth.state.suspendedUntil).to.equal(times[19]! + 900_000);
    });

    it('when the 20th rejection suspends the key, then the rejection log is emptied and the admissions are kept', () => {
      const times = rejectedTimes(20);
      const full = filled('balance', T0);
      const steps = run(
        full,
        times.map((t) => ['balance', t] as [RateBucket, number]),
      );

      expect(steps[18]!.state.rejections).to.deep.equal(times.slice(0, 19));
      expect(steps[19]!.state).to.deep.equal({ admitted: full.admitted, rejections: [], suspendedUntil: times[19]! + 900_000 });
    });

    it('when rejections come from different buckets, then together they trigger the suspension at the 20th', () => {
      let state = filled('balance', T0);
      state = filled('send', T0, POLICY, state);
      state = filled('management', T0, POLICY, state);
      const buckets: RateBucket[] = ['balance', 'send', 'management'];
      const requests = rejectedTimes(20).map((t, i) => [buckets[i % 3]!, t] as [RateBucket, number]);

      const steps = run(state, requests);

      expect(steps.slice(0, 19).every((s) => s.decision.outcome === 'limited' && !s.decision.suspendedNow)).to.equal(true);
      expect(limited(steps[19]!.decision).suspendedNow).to.equal(true);
      expect(steps[19]!.state.suspendedUntil).to.equal(requests[19]![1] + 900_000);
    });

    it('when the first of 20 rejections has left the window, then the 20th does not suspend; 1 ms earlier it does', () => {
      // 19 rejections: the first at r0, 18 more within the next 2 s
      const r0 = T0 + 1000;
      const times = [r0, ...Array.from({ length: 18 }, (_, i) => r0 + 100 + i * 100)];
      const base = run(
        filled('balance', T0),
        times.map((t) => ['balance', t] as [RateBucket, number]),
      );
      const state = lastState(base);
      expect(state.rejections).to.have.length(19);
      // keep balance full at the late instants by refilling it right after T0's admissions leave
      const refilled = filled('balance', T0 + 60_000, POLICY, state);

      expect(limited(decide(refilled, 'balance', r0 + 60_000, POLICY)).suspendedNow).to.equal(false);
      expect(limited(decide(refilled, 'balance', r0 + 59_999, POLICY)).suspendedNow).to.equal(true);
    });

    describe('while suspended', () => {
      const times = rejectedTimes(20);
      const steps = run(
        filled('balance', T0),
        times.map((t) => ['balance', t] as [RateBucket, number]),
      );
      const s = times[19]!;
      const state = lastState(steps);

      for (const bucket of RATE_BUCKETS) {
        it(`when ${bucket} is called right after the suspension, then it answers suspended with Retry-After 900`, () => {
          const decision = suspended(decide(state, bucket, s, POLICY));

          expect(decision.retryAfterSeconds).to.equal(900);
          expect(decision.state).to.equal(state);
        });
      }

      const rows: readonly (readonly [number, number])[] = [
        [1, 900],
        [1_000, 899],
        [450_500, 450],
        [899_000, 1],
        [899_999, 1],
      ];
      for (const [offset, seconds] of rows) {
        it(`when called ${offset} ms into the suspension, then it is still suspended with Retry-After ${seconds}`, () => {
          expect(suspended(decide(state, 'send', s + offset, POLICY)).retryAfterSeconds).to.equal(seconds);
        });
      }

      it('when called many times during the suspension, then its end does not move', () => {
        const during = run(
          state,
          RATE_BUCKETS.map((b, i) => [b, s + 100_000 * (i + 1)] as [RateBucket, number]),
        );

        expect(during.every((d) => d.decision.outcome === 'suspended')).to.equal(true);
        expect(lastState(during).suspendedUntil).to.equal(s + 900_000);
        expect(decide(lastState(during), 'balance', s + 900_000, POLICY).outcome).to.equal('admitted');
      });

      it('when exactly 15 minutes have passed, then requests are admitted again and the suspension is cleared', () => {
        const decision = decide(state, 'balance', s + 900_000, POLICY);

        expect(decision.outcome).to.equal('admitted');
        expect(decision.state.suspendedUntil).to.equal(null);
        expect(decision.state.rejections).to.deep.equal([]);
      });

      it('when the suspension has ended, then the rejection count starts afresh (19 new rejections do not suspend)', () => {
        const after = filled('balance', s + 900_000, POLICY, state);

        const again = run(
          after,
          Array.from({ length: 19 }, (_, i) => ['balance', s + 900_001 + i] as [RateBucket, number]),
        );

        expect(again.every((d) => d.decision.outcome === 'limited' && !d.decision.suspendedNow)).to.equal(true);
        expect(lastState(again).suspendedUntil).to.equal(null);
      });
    });
  });

  describe('properties', () => {
    const bucketArb = fc.constantFrom(...RATE_BUCKETS);
    /** Dense enough traffic to hit the contract caps: many simultaneous requests, some gaps of seconds. */
    const gapArb = fc.oneof(
      fc.constant(0),
      fc.integer({ min: 0, max: 50 }),
      fc.integer({ min: 0, max: 3_000 }),
      fc.integer({ min: 0, max: 70_000 }),
    );
    const contractTraffic = fc.array(fc.tuple(gapArb, fc.oneof(bucketArb, fc.constant<RateBucket>('balance'))), {
      minLength: 1,
      maxLength: 500,
    });

    const smallPolicyArb: fc.Arbitrary<RateLimitPolicy> = fc.record({
      windowMs: fc.integer({ min: 1, max: 10_000 }),
      limits: fc.record({
        send: fc.integer({ min: 1, max: 5 }),
        status: fc.integer({ min: 1, max: 5 }),
        balance: fc.integer({ min: 1, max: 5 }),
        calculate: fc.integer({ min: 1, max: 5 }),
        management: fc.integer({ min: 1, max: 5 }),
      }),
      suspendAfterRejections: fc.integer({ min: 1, max: 40 }),
      suspensionMs: fc.integer({ min: 1, max: 20_000 }),
    });
    const smallTraffic = fc.array(fc.tuple(fc.oneof(fc.constant(0), fc.integer({ min: 0, max: 3_000 })), bucketArb), {
      minLength: 1,
      maxLength: 200,
    });

    function toRequests(traffic: readonly (readonly [number, RateBucket])[]): [RateBucket, number][] {
      let now = T0;
      return traffic.map(([gap, bucket]) => {
        now += gap;
        return [bucket, now];
      });
    }

    /** For every bucket, every window of `windowMs` starting at an admission instant holds at most `cap` admissions. */
    function assertCapsHold(requests: readonly (readonly [RateBucket, number])[], steps: readonly Step[], policy: RateLimitPolicy): void {
      for (const bucket of RATE_BUCKETS) {
        const admittedAt = requests.filter(([b], i) => b === bucket && steps[i]!.decision.outcome === 'admitted').map(([, t]) => t);
        for (const start of admittedAt) {
          const inWindow = admittedAt.filter((t) => t >= start && t < start + policy.windowMs).length;
          expect(inWindow, `${bucket} window from ${start}`).to.be.at.most(policy.limits[bucket]);
        }
      }
    }

    /** Limiting is justified: a limited request finds its bucket's window full; an unsuspended request with room is admitted. */
    function assertNoNeedlessRejection(
      requests: readonly (readonly [RateBucket, number])[],
      steps: readonly Step[],
      policy: RateLimitPolicy,
    ): void {
      requests.forEach(([bucket, now], i) => {
        const before = i === 0 ? EMPTY_RATE_STATE : steps[i - 1]!.state;
        const inWindow = requests.filter(
          ([b, t], j) => j < i && b === bucket && t > now - policy.windowMs && steps[j]!.decision.outcome === 'admitted',
        ).length;
        const isSuspended = before.suspendedUntil !== null && now < before.suspendedUntil;
        const expected = isSuspended ? 'suspended' : inWindow < policy.limits[bucket] ? 'admitted' : 'limited';
        expect(steps[i]!.decision.outcome, `request ${i}`).to.equal(expected);
      });
    }

    /**
     * A limited (not newly suspending) request retried after exactly Retry-After, with no other traffic, is admitted;
     * one second sooner it is not. A suspended request's Retry-After points at the end of the suspension.
     */
    function assertRetryAfterWorks(
      requests: readonly (readonly [RateBucket, number])[],
      steps: readonly Step[],
      policy: RateLimitPolicy,
    ): void {
      requests.forEach(([bucket, now], i) => {
        const decision = steps[i]!.decision;
        if (decision.outcome === 'admitted') return;
        expect(decision.retryAfterSeconds).to.be.at.least(1);
        if (decision.outcome === 'suspended') {
          // Retry-After of a suspension points at its end: then the key is no longer suspended
          expect(
            decide(decision.state, bucket, now + decision.retryAfterSeconds * 1000, policy).outcome,
            `retry of request ${i}`,
          ).to.not.equal('suspended');
          if (decision.retryAfterSeconds > 1) {
            expect(decide(decision.state, bucket, now + (decision.retryAfterSeconds - 1) * 1000, policy).outcome).to.equal('suspended');
          }
          return;
        }
        if (decision.suspendedNow) {
          expect(decision.state.suspendedUntil).to.equal(now + policy.suspensionMs);
          return;
        }
        expect(decide(decision.state, bucket, now + decision.retryAfterSeconds * 1000, policy).outcome, `retry of request ${i}`).to.equal(
          'admitted',
        );
        if (decision.retryAfterSeconds > 1) {
          expect(
            decide(decision.state, bucket, now + (decision.retryAfterSeconds - 1) * 1000, policy).outcome,
            `early retry of request ${i}`,
          ).to.not.equal('admitted');
        }
      });
    }

    it('with the contract caps, no bucket ever admits more than its cap in any 60 s window', () => {
      fc.assert(
        fc.property(contractTraffic, (traffic) => {
          const requests = toRequests(traffic);
          assertCapsHold(requests, run(EMPTY_RATE_STATE, requests), POLICY);
        }),
        { numRuns: 150 },
      );
    });

    it('with the contract caps, a request is limited only when its window is full, and admitted whenever there is room', () => {
      fc.assert(
        fc.property(contractTraffic, (traffic) => {
          const requests = toRequests(traffic);
          assertNoNeedlessRejection(requests, run(EMPTY_RATE_STATE, requests), POLICY);
        }),
        { numRuns: 100 },
      );
    });

    it('with the contract caps, retrying a limited request after exactly Retry-After is admitted (unless the key was just suspended)', () => {
      fc.assert(
        fc.property(contractTraffic, (traffic) => {
          const requests = toRequests(traffic);
          assertRetryAfterWorks(requests, run(EMPTY_RATE_STATE, requests), POLICY);
        }),
        { numRuns: 150 },
      );
    });

    it('with arbitrary small policies, caps hold in every window, limits are justified and Retry-After is exact', () => {
      fc.assert(
        fc.property(smallPolicyArb, smallTraffic, (policy, traffic) => {
          const requests = toRequests(traffic);
          const steps = run(EMPTY_RATE_STATE, requests, policy);
          assertCapsHold(requests, steps, policy);
          assertNoNeedlessRejection(requests, steps, policy);
          assertRetryAfterWorks(requests, steps, policy);
        }),
        { numRuns: 300 },
      );
    });
  });
});
