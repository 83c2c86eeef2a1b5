import { expect } from 'chai';
import fc from 'fast-check';
import {
  apiKeyHostPolicy,
  createApiKeyBehaviour,
  type ApiKeyCommand,
  type ApiKeyEvent,
  type ApiKeyReplies,
  type ApiKeyState,
  type KeyView,
} from '../../../src/api-keys/api-key-behaviour.js';
import { hashApiKey, KEY_STATUSES, type KeyStatus } from '../../../src/api-keys/api-key.js';
import { RATE_BUCKETS, type RateBucket, type RateLimitPolicy } from '../../../src/api-keys/rate-limiter.js';
import { decide, foldEvents, type BehaviourContext, type Decision } from '../../../src/libraries/actors/behaviour.js';
import { createManualClock, createSequentialIds } from '../../../src/libraries/clock/clock.js';

/** v1's caps (send, status, balance) and the product's own (calculate, management, 1302 suspension). */
const POLICY: RateLimitPolicy = {
  windowMs: 60_000,
  limits: { send: 60, status: 120, balance: 30, calculate: 60, management: 60 },
  suspendAfterRejections: 20,
  suspensionMs: 900_000,
};

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0);
const KEY_ID = 'key-1';
const MERCHANT = 'merchant-1';
const CLEARTEXT = 'sk_test_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY';
const HASH = hashApiKey(CLEARTEXT);
const ROTATED_HASH = hashApiKey('sk_test_Zz9yX8wV7uT6sR5qP4oN3mL2kJ1iH0gF');
const DISPLAY = 'sk_test_…W0xY';

const behaviour = createApiKeyBehaviour(POLICY);
const apply = (state: ApiKeyState, event: ApiKeyEvent): ApiKeyState => behaviour.apply(state, event);

/**
 * Runs commands the way the actor wrapper does: decide, then fold the events into `decision.state ?? state`.
 * The journal is what a restart replays.
 */
function createStory(start: ApiKeyState = behaviour.initialState(KEY_ID), startAt = T0) {
  const clock = createManualClock(startAt);
  const newId = createSequentialIds('id');
  const journal: ApiKeyEvent[] = [];
  let state = start;
  return {
    clock,
    journal,
    get state(): ApiKeyState {
      return state;
    },
    run<C extends ApiKeyCommand>(command: C): Decision<ApiKeyState, ApiKeyEvent, ApiKeyReplies[C['type']]> {
      const context: BehaviourContext = { now: clock.now(), newId, shard: 0 };
      const decision = decide<ApiKeyState, ApiKeyCommand, ApiKeyEvent, ApiKeyReplies, ApiKeyCommand['type']>(
        behaviour,
        state,
        command,
        context,
      ) as Decision<ApiKeyState, ApiKeyEvent, ApiKeyReplies[C['type']]>;
      state = foldEvents(apply, decision.state ?? state, decision.events);
      journal.push(...decision.events);
      return decision;
    },
    /** `count` authentications of the right key on one bucket at the current instant; their replies. */
    burst(bucket: RateBucket, count: number): ApiKeyReplies['authenticate'][] {
      return Array.from({ length: count }, () => this.run({ type: 'authenticate', hash: HASH, bucket }).reply);
    },
  };
}

type Story = ReturnType<typeof createStory>;

/** A restart: a fresh actor that replays the journal. */
function restart(story: Story): Story {
  const recovered = createStory(foldEvents(apply, behaviour.initialState(KEY_ID), story.journal), story.clock.now());
  recovered.journal.push(...story.journal);
  return recovered;
}

function created(status: KeyStatus = 'allowed', expiresAt: number | null = null): Story {
  const story = createStory();
  const decision = story.run({
    type: 'create',
    merchantId: MERCHANT,
    environment: 'sandbox',
    hash: HASH,
    display: DISPLAY,
    status,
    expiresAt,
  });
  expect(decision.reply).to.deep.equal({ ok: true, created: true });
  return story;
}

const AUTHENTICATED = { outcome: 'authenticated', merchantId: MERCHANT, keyId: KEY_ID } as const;
const UNAUTHORIZED = { outcome: 'unauthorized' } as const;

function authenticate(story: Story, bucket: RateBucket = 'send', hash = HASH) {
  return story.run({ type: 'authenticate', hash, bucket });
}

function view(story: Story): KeyView {
  const reply = story.run({ type: 'describe' }).reply;
  if (!reply.ok) throw new Error('expected the key to be described');
  return reply.key;
}

/** Makes the 20th rejection within one minute happen at the current instant, on the balance bucket (30/min). */
function suspendNow(story: Story): Decision<ApiKeyState, ApiKeyEvent, ApiKeyReplies['authenticate']> {
  const admitted = story.burst('balance', POLICY.limits.balance);
  expect(admitted.every((r) => r.outcome === 'authenticated')).to.equal(true);
  const rejected = story.burst('balance', POLICY.suspendAfterRejections - 1);
  expect(rejected.every((r) => r.outcome === 'rate_limited')).to.equal(true);
  return authenticate(story, 'balance');
}

describe('api key behaviour', () => {
  describe('create', () => {
    it('when a key is created, then key_created is journaled with its record', () => {
      const story = createStory();

      const decision = story.run({
        type: 'create',
        merchantId: MERCHANT,
        environment: 'production',
        hash: HASH,
        display: DISPLAY,
        status: 'allowed',
        expiresAt: T0 + 1000,
      });

      expect(decision.reply).to.deep.equal({ ok: true, created: true });
      expect(decision.events).to.deep.equal([
        {
          type: 'key_created',
          merchantId: MERCHANT,
          environment: 'production',
          hash: HASH,
          display: DISPLAY,
          status: 'allowed',
          expiresAt: T0 + 1000,
          at: T0,
        },
      ]);
      expect(story.state).to.deep.include({ created: true, merchantId: MERCHANT, environment: 'production', hash: HASH, createdAt: T0 });
    });

    it('when the key is created again, then nothing changes: the first hash still authenticates, the second does not', () => {
      const story = created();
      story.clock.advance(1000);

      const again = story.run({
        type: 'create',
        merchantId: 'other',
        environment: 'sandbox',
        hash: ROTATED_HASH,
        display: 'x',
        status: 'allowed',
        expiresAt: null,
      });

      expect(again.reply).to.deep.equal({ ok: true, created: false });
      expect(again.events).to.deep.equal([]);
      expect(authenticate(story).reply).to.deep.equal(AUTHENTICATED);
      expect(authenticate(story, 'send', ROTATED_HASH).reply).to.deep.equal(UNAUTHORIZED);
    });
  });

  describe('authenticate', () => {
    it('when the key was never created, then it is unauthorized', () => {
      const story = createStory();

      const decision = authenticate(story);

      expect(decision.reply).to.deep.equal(UNAUTHORIZED);
      expect(decision.events).to.deep.equal([]);
      expect(decision.state).to.equal(undefined);
    });

    it('when the hash does not match, then it is unauthorized and the rate state is untouched', () => {
      const story = created();

      const decision = authenticate(story, 'send', ROTATED_HASH);

      expect(decision.reply).to.deep.equal(UNAUTHORIZED);
      expect(decision.state).to.equal(undefined);
      expect(story.state.rate.admitted).to.deep.equal({});
    });

    it('when the hash is not a SHA-256 hex string, then it is unauthorized', () => {
      const story = created();

      expect(authenticate(story, 'send', '').reply).to.deep.equal(UNAUTHORIZED);
      expect(authenticate(story, 'send', HASH.toUpperCase()).reply).to.deep.equal(UNAUTHORIZED);
    });

    it('when the key was rotated, then the old hash is unauthorized at once and the new one authenticates', () => {
      const story = created();
      expect(authenticate(story).reply).to.deep.equal(AUTHENTICATED);

      const rotation = story.run({ type: 'rotate', hash: ROTATED_HASH, display: 'sk_test_…gF' });

      expect(rotation.reply).to.deep.equal({ ok: true });
      expect(rotation.events).to.deep.equal([{ type: 'key_rotated', hash: ROTATED_HASH, display: 'sk_test_…gF', at: T0 }]);
      expect(authenticate(story).reply).to.deep.equal(UNAUTHORIZED);
      expect(authenticate(story, 'send', ROTATED_HASH).reply).to.deep.equal(AUTHENTICATED);
    });

    it('when the key was deleted, then it answers unauthorized like an unknown key', () => {
      const story = created();

      const deletion = story.run({ type: 'delete' });

      expect(deletion.events).to.deep.equal([{ type: 'key_deleted', at: T0 }]);
      expect(authenticate(story).reply).to.deep.equal(UNAUTHORIZED);
    });

    for (const status of KEY_STATUSES.filter((s) => s !== 'allowed')) {
      it(`when the key status is ${status}, then it is forbidden with that status and the rate state is untouched`, () => {
        const story = created(status);

        const decision = authenticate(story);

        expect(decision.reply).to.deep.equal({ outcome: 'forbidden', status });
        expect(decision.events).to.deep.equal([]);
        expect(decision.state).to.equal(undefined);
      });
    }

    it('when an operator changes the status, then authentication follows it', () => {
      const story = created('pending_validation');
      expect(authenticate(story).reply).to.deep.equal({ outcome: 'forbidden', status: 'pending_validation' });

      const allowed = story.run({ type: 'set_status', status: 'allowed' });
      const afterAllowed = authenticate(story).reply;
      story.run({ type: 'set_status', status: 'locked' });

      expect(allowed.events).to.deep.equal([{ type: 'status_changed', status: 'allowed', at: T0 }]);
      expect(afterAllowed).to.deep.equal(AUTHENTICATED);
      expect(authenticate(story).reply).to.deep.equal({ outcome: 'forbidden', status: 'locked' });
    });

    // expires_at <= now answers as expired: one ms before, exactly at, one ms after
    const EXPIRY_CASES: readonly { offset: number; expected: ApiKeyReplies['authenticate'] }[] = [
      { offset: -1, expected: AUTHENTICATED },
      { offset: 0, expected: { outcome: 'forbidden', status: 'expired' } },
      { offset: 1, expected: { outcome: 'forbidden', status: 'expired' } },
    ];
    for (const { offset, expected } of EXPIRY_CASES) {
      it(`when now is expires_at ${offset >= 0 ? '+' : ''}${offset} ms, then the answer is ${JSON.stringify(expected)}`, () => {
        const expiresAt = T0 + 3_600_000;
        const story = created('allowed', expiresAt);
        story.clock.set(expiresAt + offset);

        expect(authenticate(story).reply).to.deep.equal(expected);
      });
    }

    it('when the expiry is moved or cleared, then an expired key authenticates again', () => {
      const story = created('allowed', T0);
      expect(authenticate(story).reply).to.deep.equal({ outcome: 'forbidden', status: 'expired' });

      const decision = story.run({ type: 'set_expiry', expiresAt: null });

      expect(decision.events).to.deep.equal([{ type: 'expiry_set', expiresAt: null, at: T0 }]);
      expect(authenticate(story).reply).to.deep.equal(AUTHENTICATED);
    });

    it('when a non-allowed key is past its expiry, then it keeps its own status', () => {
      const story = created('revoqued', T0 - 1);

      expect(authenticate(story).reply).to.deep.equal({ outcome: 'forbidden', status: 'revoqued' });
    });
  });

  describe('rate limits', () => {
    for (const bucket of RATE_BUCKETS) {
      const limit = POLICY.limits[bucket];
      it(`when ${limit + 1} ${bucket} calls arrive within a minute, then ${limit} pass and the next is rate limited for 60 s`, () => {
        const story = created();

        const replies = story.burst(bucket, limit);
        const over = authenticate(story, bucket);

        expect(replies.filter((r) => r.outcome === 'authenticated')).to.have.length(limit);
        expect(over.reply).to.deep.equal({ outcome: 'rate_limited', retryAfterSeconds: 60 });
        expect(over.events).to.deep.equal([]);
      });
    }

    it('when one bucket is full, then the other buckets still admit calls', () => {
      const story = created();
      story.burst('balance', POLICY.limits.balance);
      expect(authenticate(story, 'balance').reply).to.deep.include({ outcome: 'rate_limited' });

      for (const bucket of RATE_BUCKETS.filter((b) => b !== 'balance')) {
        expect(authenticate(story, bucket).reply, bucket).to.deep.equal(AUTHENTICATED);
      }
    });

    it('when the oldest admission leaves the minute, then exactly one more call is admitted (continuous window)', () => {
      const story = created();
      story.burst('balance', 1);
      story.clock.advance(1000);
      story.burst('balance', POLICY.limits.balance - 1);

      story.clock.set(T0 + 59_999);
      const justBefore = authenticate(story, 'balance').reply;
      story.clock.set(T0 + 60_000);
      const atEdge = authenticate(story, 'balance').reply;
      const next = authenticate(story, 'balance').reply;

      expect(justBefore).to.deep.equal({ outcome: 'rate_limited', retryAfterSeconds: 1 });
      expect(atEdge).to.deep.equal(AUTHENTICATED);
      expect(next).to.deep.equal({ outcome: 'rate_limited', retryAfterSeconds: 1 });
    });
  });

  describe('suspension (1302)', () => {
    it('when a key gets its 19th rejection, then nothing is journaled; the 20th journals key_suspended for 15 minutes', () => {
      const story = created();
      story.burst('balance', POLICY.limits.balance);
      const nineteen = Array.from({ length: 19 }, () => authenticate(story, 'balance'));

      const twentieth = authenticate(story, 'balance');

      expect(nineteen.every((d) => d.events.length === 0 && d.reply.outcome === 'rate_limited')).to.equal(true);
      expect(twentieth.reply).to.deep.equal({ outcome: 'rate_limited', retryAfterSeconds: 900 });
      expect(twentieth.events).to.deep.equal([{ type: 'key_suspended', until: T0 + 900_000, at: T0 }]);
      expect(story.state.rate.suspendedUntil).to.equal(T0 + 900_000);
    });

    it('when suspended, then every call on any bucket answers suspended with the seconds left, and nothing is journaled', () => {
      const story = created();
      suspendNow(story);
      story.clock.advance(60_000);

      const replies = RATE_BUCKETS.map((bucket) => authenticate(story, bucket));

      for (const decision of replies) {
        expect(decision.reply).to.deep.equal({ outcome: 'suspended', retryAfterSeconds: 840 });
        expect(decision.events).to.deep.equal([]);
      }
    });

    // the suspension lasts 900 000 ms: one ms before its end, exactly at, one ms after
    const END_CASES: readonly { at: number; expected: ApiKeyReplies['authenticate'] }[] = [
      { at: 899_999, expected: { outcome: 'suspended', retryAfterSeconds: 1 } },
      { at: 900_000, expected: AUTHENTICATED },
      { at: 900_001, expected: AUTHENTICATED },
    ];
    for (const { at, expected } of END_CASES) {
      it(`when a call comes ${at} ms after the suspension, then it is ${expected.outcome}`, () => {
        const story = created();
        suspendNow(story);
        story.clock.set(T0 + at);

        expect(authenticate(story, 'balance').reply).to.deep.equal(expected);
      });
    }

    it('when the key restarts while suspended, then replaying the journal keeps it suspended', () => {
      const story = created();
      suspendNow(story);
      story.clock.advance(300_000);

      const recovered = restart(story);

      expect(recovered.state.rate.admitted).to.deep.equal({});
      expect(authenticate(recovered, 'send').reply).to.deep.equal({ outcome: 'suspended', retryAfterSeconds: 600 });
      recovered.clock.set(T0 + 900_000);
      expect(authenticate(recovered, 'send').reply).to.deep.equal(AUTHENTICATED);
    });

    it('when the 20th rejection comes one ms before the first leaves the minute, then the key is suspended', () => {
      const story = created();
      story.burst('balance', POLICY.limits.balance);
      story.burst('balance', 19);
      story.clock.set(T0 + 59_999);

      expect(authenticate(story, 'balance').events).to.deep.equal([
        { type: 'key_suspended', until: T0 + 59_999 + 900_000, at: T0 + 59_999 },
      ]);
    });

    it('when the 20th rejection comes a full minute after the first 19, then they no longer count and nothing is suspended', () => {
      const story = created();
      story.burst('balance', POLICY.limits.balance);
      story.burst('balance', 19);
      story.clock.set(T0 + 60_000);
      story.burst('calculate', POLICY.limits.calculate);

      const rejection = authenticate(story, 'calculate');

      expect(rejection.reply).to.deep.equal({ outcome: 'rate_limited', retryAfterSeconds: 60 });
      expect(rejection.events).to.deep.equal([]);
      expect(story.state.rate.suspendedUntil).to.equal(null);
    });

    it('when rejections spread over several buckets, then they count together', () => {
      const story = created();
      story.burst('balance', POLICY.limits.balance);
      story.burst('balance', 10);
      story.burst('calculate', POLICY.limits.calculate);
      story.burst('calculate', 9);

      const twentieth = authenticate(story, 'calculate');

      expect(twentieth.events).to.have.length(1);
      expect(twentieth.events[0]).to.deep.include({ type: 'key_suspended' });
    });

    it('when a suspension has ended, then rejections start counting from zero', () => {
      const story = created();
      suspendNow(story);
      story.clock.set(T0 + 900_000);
      story.burst('balance', POLICY.limits.balance);

      const rejection = authenticate(story, 'balance');

      expect(rejection.reply).to.deep.equal({ outcome: 'rate_limited', retryAfterSeconds: 60 });
      expect(rejection.events).to.deep.equal([]);
    });
  });

  describe('last_used_at', () => {
    it('when the key is first used, then key_used is journaled', () => {
      const story = created();

      const decision = authenticate(story);

      expect(decision.events).to.deep.equal([{ type: 'key_used', at: T0 }]);
      expect(story.state.lastUsedAt).to.equal(T0);
      expect(story.state.lastUsedJournaledAt).to.equal(T0);
    });

    // journaled at most once per 60 s, counted from the last journaled use
    const CASES: readonly { after: number; journaled: boolean }[] = [
      { after: 59_999, journaled: false },
      { after: 60_000, journaled: true },
      { after: 60_001, journaled: true },
    ];
    for (const { after, journaled } of CASES) {
      it(`when the key is used again ${after} ms later, then key_used is ${journaled ? '' : 'not '}journaled but lastUsedAt advances`, () => {
        const story = created();
        authenticate(story);
        story.clock.set(T0 + 30_000);
        const between = authenticate(story);
        story.clock.set(T0 + after);

        const decision = authenticate(story);

        expect(between.events).to.deep.equal([]);
        expect(decision.events).to.deep.equal(journaled ? [{ type: 'key_used', at: T0 + after }] : []);
        expect(story.state.lastUsedAt).to.equal(T0 + after);
        expect(story.state.lastUsedJournaledAt).to.equal(journaled ? T0 + after : T0);
      });
    }

    it('when a call is refused, then lastUsedAt does not advance', () => {
      const story = created();
      authenticate(story);
      story.run({ type: 'set_status', status: 'locked' });
      story.clock.advance(120_000);

      const decision = authenticate(story);

      expect(decision.events).to.deep.equal([]);
      expect(story.state.lastUsedAt).to.equal(T0);
    });

    it('when the key restarts, then lastUsedAt is the last journaled use', () => {
      const story = created();
      authenticate(story);
      story.clock.advance(10_000);
      authenticate(story);

      const recovered = restart(story);

      expect(story.state.lastUsedAt).to.equal(T0 + 10_000);
      expect(recovered.state.lastUsedAt).to.equal(T0);
    });
  });

  describe('management commands', () => {
    const CHANGES: readonly ApiKeyCommand[] = [
      { type: 'set_status', status: 'allowed' },
      { type: 'set_expiry', expiresAt: T0 },
      { type: 'rotate', hash: ROTATED_HASH, display: 'x' },
      { type: 'delete' },
      { type: 'set_webhook', webhook: { url: 'https://example.com/hook', username: null, password: null } },
      { type: 'set_signing_secret', secret: 'whsec' },
    ];
    for (const command of CHANGES) {
      it(`when ${command.type} targets a never-created key, then it is NOT_FOUND and nothing is journaled`, () => {
        const story = createStory();

        const decision = story.run(command);

        expect(decision.reply).to.deep.equal({ ok: false, code: 'NOT_FOUND' });
        expect(decision.events).to.deep.equal([]);
      });

      it(`when ${command.type} targets a deleted key, then it is NOT_FOUND and nothing is journaled`, () => {
        const story = created();
        story.run({ type: 'delete' });

        const decision = story.run(command);

        expect(decision.reply).to.deep.equal({ ok: false, code: 'NOT_FOUND' });
        expect(decision.events).to.deep.equal([]);
      });
    }

    it('when the webhook and signing secret are set, then they are journaled and webhook_target returns them', () => {
      const story = created();
      const webhook = { url: 'https://merchant.example/hook', username: 'user', password: 's3cret' };

      const setWebhook = story.run({ type: 'set_webhook', webhook });
      const setSecret = story.run({ type: 'set_signing_secret', secret: 'whsec_1' });
      const target = story.run({ type: 'webhook_target' });

      expect(setWebhook.events).to.deep.equal([{ type: 'webhook_set', webhook, at: T0 }]);
      expect(setSecret.events).to.deep.equal([{ type: 'signing_secret_set', secret: 'whsec_1', at: T0 }]);
      expect(target.reply).to.deep.equal({ ok: true, target: { merchantId: MERCHANT, webhook, signingSecret: 'whsec_1' } });
    });

    it('when the webhook is cleared, then webhook_target has none', () => {
      const story = created();
      story.run({ type: 'set_webhook', webhook: { url: 'https://merchant.example/hook', username: null, password: null } });

      story.run({ type: 'set_webhook', webhook: null });

      expect(story.run({ type: 'webhook_target' }).reply).to.deep.equal({
        ok: true,
        target: { merchantId: MERCHANT, webhook: null, signingSecret: null },
      });
    });

    it('when webhook_target asks for a never-created key, then it is NOT_FOUND', () => {
      expect(createStory().run({ type: 'webhook_target' }).reply).to.deep.equal({ ok: false, code: 'NOT_FOUND' });
    });
  });

  describe('describe', () => {
    it('when the key is described, then the view shows its record but never the hash nor the webhook password', () => {
      const story = created('allowed', T0 + 86_400_000);
      story.run({ type: 'set_webhook', webhook: { url: 'https://merchant.example/hook', username: 'user', password: 'p4ssw0rd-secret' } });
      story.run({ type: 'set_signing_secret', secret: 'whsec_1' });
      authenticate(story);

      const key = view(story);

      expect(key).to.deep.equal({
        keyId: KEY_ID,
        merchantId: MERCHANT,
        environment: 'sandbox',
        display: DISPLAY,
        status: 'allowed',
        expiresAt: T0 + 86_400_000,
        deleted: false,
        createdAt: T0,
        lastUsedAt: T0,
        suspendedUntil: null,
        webhookUrl: 'https://merchant.example/hook',
        webhookBasicAuthUsername: 'user',
        webhookBasicAuthPasswordSet: true,
        signing: true,
      });
      const text = JSON.stringify(key);
      expect(text).not.to.include(HASH);
      expect(text).not.to.include('p4ssw0rd-secret');
      expect(text).not.to.include('whsec_1');
    });

    it('when the webhook has no password, then webhookBasicAuthPasswordSet is false', () => {
      const story = created();
      story.run({ type: 'set_webhook', webhook: { url: 'https://merchant.example/hook', username: 'user', password: null } });

      expect(view(story).webhookBasicAuthPasswordSet).to.equal(false);
    });

    it('when the key is past its expiry, then its status shows as expired', () => {
      const story = created('allowed', T0);

      expect(view(story).status).to.equal('expired');
    });

    it('when the key is suspended, then the view shows until when, and null once it has ended', () => {
      const story = created();
      suspendNow(story);

      const during = view(story).suspendedUntil;
      story.clock.set(T0 + 900_000);
      const after = view(story).suspendedUntil;

      expect(during).to.equal(T0 + 900_000);
      expect(after).to.equal(null);
    });

    it('when the key was deleted, then the view says so', () => {
      const story = created();
      story.run({ type: 'delete' });

      expect(view(story).deleted).to.equal(true);
    });

    it('when the key was never created, then describe is NOT_FOUND', () => {
      expect(createStory().run({ type: 'describe' }).reply).to.deep.equal({ ok: false, code: 'NOT_FOUND' });
    });
  });

  describe('toSnapshot', () => {
    it('when snapshotted, then rate windows are dropped, the suspension kept and lastUsedAt falls back to the journaled one', () => {
      const story = created();
      authenticate(story, 'send');
      story.clock.advance(10_000);
      suspendNow(story);
      const snapshot = apiKeyHostPolicy.toSnapshot!(story.state);

      expect(story.state.lastUsedAt).to.equal(T0 + 10_000);
      expect(snapshot.rate).to.deep.equal({ admitted: {}, rejections: [], suspendedUntil: T0 + 10_000 + 900_000 });
      expect(snapshot.lastUsedAt).to.equal(T0);
      expect(snapshot.lastUsedJournaledAt).to.equal(T0);
      expect({ ...snapshot, rate: null, lastUsedAt: null }).to.deep.equal({ ...story.state, rate: null, lastUsedAt: null });
    });

    it('when restored from a snapshot during a suspension, then calls still answer suspended', () => {
      const story = created();
      suspendNow(story);
      const restored = createStory(apiKeyHostPolicy.toSnapshot!(story.state), T0 + 1000);

      expect(authenticate(restored, 'status').reply).to.deep.equal({ outcome: 'suspended', retryAfterSeconds: 899 });
    });

    it('when the key was never used, then the snapshot has no lastUsedAt', () => {
      const story = created();

      expect(apiKeyHostPolicy.toSnapshot!(story.state).lastUsedAt).to.equal(null);
    });
  });

  describe('recovery property', () => {
    type Op =
      | { readonly kind: 'auth'; readonly bucket: RateBucket; readonly count: number; readonly rightHash: boolean }
      | { readonly kind: 'wait'; readonly ms: number }
      | { readonly kind: 'status'; readonly status: KeyStatus }
      | { readonly kind: 'expiry'; readonly inMs: number | null }
      | { readonly kind: 'rotate'; readonly back: boolean }
      | { readonly kind: 'webhook'; readonly password: string | null }
      | { readonly kind: 'secret'; readonly secret: string | null }
      | { readonly kind: 'delete' };

    const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 8,
        arbitrary: fc.record({
          kind: fc.constant('auth' as const),
          bucket: fc.constantFrom(...RATE_BUCKETS),
          count: fc.integer({ min: 1, max: 80 }),
          rightHash: fc.boolean(),
        }),
      },
      {
        weight: 5,
        arbitrary: fc.record({
          kind: fc.constant('wait' as const),
          ms: fc.oneof(fc.integer({ min: 0, max: 2_000 }), fc.integer({ min: 0, max: 1_000_000 })),
        }),
      },
      { weight: 2, arbitrary: fc.record({ kind: fc.constant('status' as const), status: fc.constantFrom(...KEY_STATUSES) }) },
      {
        weight: 1,
        arbitrary: fc.record({
          kind: fc.constant('expiry' as const),
          inMs: fc.option(fc.integer({ min: -60_000, max: 600_000 }), { nil: null }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('rotate' as const), back: fc.boolean() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('webhook' as const), password: fc.option(fc.constant('pw'), { nil: null }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('secret' as const), secret: fc.option(fc.constant('whsec'), { nil: null }) }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('delete' as const) }) },
    );

    function play(story: Story, op: Op): void {
      const now = story.clock.now();
      switch (op.kind) {
        case 'auth': {
          const hash = op.rightHash ? story.state.hash : HASH.replace(/^./, (c) => (c === '0' ? '1' : '0'));
          for (let i = 0; i < op.count; i++) story.run({ type: 'authenticate', hash, bucket: op.bucket });
          return;
        }
        case 'wait':
          story.clock.advance(op.ms);
          return;
        case 'status':
          story.run({ type: 'set_status', status: op.status });
          return;
        case 'expiry':
          story.run({ type: 'set_expiry', expiresAt: op.inMs === null ? null : now + op.inMs });
          return;
        case 'rotate':
          story.run({ type: 'rotate', hash: op.back ? HASH : ROTATED_HASH, display: op.back ? DISPLAY : 'rotated' });
          return;
        case 'webhook':
          story.run({ type: 'set_webhook', webhook: { url: 'https://merchant.example/hook', username: 'u', password: op.password } });
          return;
        case 'secret':
          story.run({ type: 'set_signing_secret', secret: op.secret });
          return;
        case 'delete':
          story.run({ type: 'delete' });
          return;
      }
    }

    /** The state without what is deliberately volatile: rate windows and the in-memory lastUsedAt. */
    function durable(state: ApiKeyState, now: number) {
      const { rate, lastUsedAt: _lastUsedAt, ...rest } = state;
      // an ended suspension is the same as none (the live state forgets it on the next rate decision)
      const suspendedUntil = rate.suspendedUntil !== null && rate.suspendedUntil > now ? rate.suspendedUntil : null;
      return { ...rest, suspendedUntil };
    }

    it('for any sequence of commands, folding the journal from the initial state gives the live state, except the volatile parts', () => {
      fc.assert(
        fc.property(fc.array(opArbitrary, { maxLength: 40 }), (ops) => {
          const story = created();
          for (const op of ops) play(story, op);
          const now = story.clock.now();

          const recovered = restart(story);

          expect(durable(recovered.state, now)).to.deep.equal(durable(story.state, now));
          expect(recovered.state.lastUsedAt).to.equal(story.state.lastUsedJournaledAt);
          // what the journal lost of lastUsedAt is less than the journaling interval
          if (story.state.lastUsedAt !== null) expect(story.state.lastUsedAt - recovered.state.lastUsedAt!).to.be.within(0, 59_999);
          // once every window and suspension has passed, the restarted key answers a fresh call like the live one
          const later = POLICY.windowMs + POLICY.suspensionMs;
          story.clock.advance(later);
          recovered.clock.advance(later);
          const live = story.run({ type: 'authenticate', hash: story.state.hash, bucket: 'status' }).reply;
          expect(recovered.run({ type: 'authenticate', hash: story.state.hash, bucket: 'status' }).reply).to.deep.equal(live);
          // key_used is journaled at most once a minute
          const uses = story.journal.filter((e) => e.type === 'key_used').map((e) => e.at);
          uses.slice(1).forEach((at, i) => expect(at - uses[i]!).to.be.at.least(60_000));
        }),
        { numRuns: 200 },
      );
    });

    it('for any sequence, a snapshot plus nothing else recovers the same durable state as the journal', () => {
      fc.assert(
        fc.property(fc.array(opArbitrary, { maxLength: 30 }), (ops) => {
          const story = created();
          for (const op of ops) play(story, op);
          const now = story.clock.now();

          const fromSnapshot = apiKeyHostPolicy.toSnapshot!(story.state);
          const fromJournal = restart(story).state;

          expect(durable(fromSnapshot, now)).to.deep.equal(durable(fromJournal, now));
          expect(fromSnapshot.lastUsedAt).to.equal(fromJournal.lastUsedAt);
        }),
        { numRuns: 200 },
      );
    });
  });
});
