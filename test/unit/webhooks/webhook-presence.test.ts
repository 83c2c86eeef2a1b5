import { expect } from 'chai';
import { hashApiKey } from '../../../src/api-keys/api-key.js';
import { createApiKeyBehaviour, type ApiKeyCommand, type ApiKeyState } from '../../../src/api-keys/api-key-behaviour.js';
import type { RateLimitPolicy } from '../../../src/api-keys/rate-limiter.js';
import { applyEvents, decide, type BehaviourContext, type Effect } from '../../../src/libraries/actors/behaviour.js';
import { createSequentialIds } from '../../../src/libraries/clock/clock.js';
import {
  createMessageBehaviour,
  messageHostPolicy,
  type CarrierReceipt,
  type MessageCommand,
  type MessageSpec,
  type MessageState,
} from '../../../src/messaging/message-behaviour.js';
import { eventsOf, WEBHOOK_TOPIC, type WebhookOutboxPayload } from '../../../src/webhooks/webhook-jobs.js';
import { fromUnits } from '../../../src/pricing/money.js';
import { createWebhookPresence, withWebhookPresence, type WebhookPresence } from '../../../src/webhooks/webhook-presence.js';

const T0 = Date.UTC(2026, 10, 2, 9, 0, 0);
const KEY_ID = 'key-1';
const SHARD = 5;
const POLICY: RateLimitPolicy = {
  windowMs: 60_000,
  limits: { send: 60, status: 120, balance: 30, calculate: 60, management: 60 },
  suspendAfterRejections: 20,
  suspensionMs: 900_000,
};
const HASH = hashApiKey('sk_test_aB3dE5fG7hJ9kL1mN2pQ4rS6tU8vW0xY');
const HOOK = { url: 'https://shop.example/hooks', username: null, password: null };

const context = (now = T0): BehaviourContext => ({ now, newId: createSequentialIds('evt'), shard: SHARD });

describe('webhook presence: which keys have a webhook, as the key actors of this node saw them', () => {
  describe('the register', () => {
    it('when nothing is known of a key, then it may have a webhook (its events are recorded)', () => {
      expect(createWebhookPresence().mayHaveWebhook(KEY_ID)).to.equal(true);
    });

    it('when a key was seen without a webhook, then it has none, until it is seen with one', () => {
      const presence = createWebhookPresence();
      presence.note(KEY_ID, SHARD, false);
      expect(presence.mayHaveWebhook(KEY_ID)).to.equal(false);
      presence.note(KEY_ID, SHARD, true);
      expect(presence.mayHaveWebhook(KEY_ID)).to.equal(true);
    });

    it('when a shard leaves the node, then its keys are unknown again and the other shards’ keys stay known', () => {
      const presence = createWebhookPresence();
      presence.note(KEY_ID, SHARD, false);
      presence.note('key-2', SHARD + 1, false);
      presence.forgetShard(SHARD);
      expect(presence.mayHaveWebhook(KEY_ID)).to.equal(true);
      expect(presence.mayHaveWebhook('key-2')).to.equal(false);
    });
  });

  describe('the key actor telling it', () => {
    let presence: WebhookPresence;
    let behaviour: ReturnType<typeof withWebhookPresence>;
    let state: ApiKeyState;
    const run = (command: ApiKeyCommand): unknown => {
      const decision = decide(behaviour, state, command, context());
      state = applyEvents(behaviour, decision.state ?? state, decision.events);
      return decision.reply;
    };
    /** A fresh key actor: created without a webhook, then authenticated once. */
    beforeEach(() => {
      presence = createWebhookPresence();
      behaviour = withWebhookPresence(createApiKeyBehaviour(POLICY), presence);
      state = behaviour.initialState(KEY_ID);
      run({
        type: 'create',
        merchantId: 'merchant-1',
        environment: 'sandbox',
        hash: HASH,
        display: 'sk_test_…W0xY',
        status: 'allowed',
        expiresAt: null,
      });
    });

    it('when a key is created without a webhook and authenticates, then it is known to have none', () => {
      expect(run({ type: 'authenticate', hash: HASH, bucket: 'send' })).to.deep.include({ outcome: 'authenticated' });
      expect(presence.mayHaveWebhook(KEY_ID)).to.equal(false);
    });

    it('when its webhook is set, then it has one from that command on', () => {
      run({ type: 'authenticate', hash: HASH, bucket: 'send' });
      run({ type: 'set_webhook', webhook: HOOK });
      expect(presence.mayHaveWebhook(KEY_ID)).to.equal(true);
    });

    it('when its webhook is cleared, then it still counts until its next command (the clearing is journaled by then)', () => {
      run({ type: 'set_webhook', webhook: HOOK });
      run({ type: 'set_webhook', webhook: null });
      expect(presence.mayHaveWebhook(KEY_ID)).to.equal(true);
      run({ type: 'describe' });
      expect(presence.mayHaveWebhook(KEY_ID)).to.equal(false);
    });

    it('when the command names a key that does not exist, then that key is known to have none (the relay would find none)', () => {
      decide(behaviour, behaviour.initialState('key-404'), { type: 'webhook_target' }, context());
      expect(presence.mayHaveWebhook('key-404')).to.equal(false);
    });
  });

  describe('the message recording its events by it', () => {
    const spec = (callbackUrl: string | null): MessageSpec => ({
      messageId: 'msg-1',
      merchantId: 'merchant-1',
      keyId: KEY_ID,
      text: 'Your code is 123456',
      senderId: null,
      encoding: 'GSM-7',
      segments: 1,
      callbackUrl,
      currency: 'USD',
      sendingType: 'immediate',
      recipients: [{ index: 0, phone: '+243810000001', price: fromUnits(150), carrier: 'simulator' }],
      occurrences: [],
      recurrence: null,
      totalMessages: 1,
      totalCost: fromUnits(150),
      costPerOccurrence: fromUnits(150),
    });

    /** Creates the message, then applies `accepted` and `delivered`: the topics of every effect and the events recorded, in order. */
    function story(hasWebhook: boolean | null, callbackUrl: string | null): { topics: string[]; events: string[]; state: MessageState } {
      const presence = createWebhookPresence();
      if (hasWebhook !== null) presence.note(KEY_ID, SHARD, hasWebhook);
      const behaviour = createMessageBehaviour();
      const policy = messageHostPolicy(presence);
      let state = behaviour.initialState('msg-1');
      const effects: Effect[] = [];
      const run = (command: MessageCommand): void => {
        const decision = decide(behaviour, state, policy.withInputs?.(state, command) ?? command, context());
        state = applyEvents(behaviour, state, decision.events);
        effects.push(...(decision.effects ?? []));
      };
      const receipt = (status: CarrierReceipt['status']): CarrierReceipt => ({ occurrence: 0, recipient: 0, status, at: T0 });
      run({ type: 'create', spec: spec(callbackUrl) });
      run({ type: 'apply_receipts', receipts: [receipt('accepted')] });
      run({ type: 'apply_receipt', receipt: receipt('delivered') });
      const events = effects
        .filter((effect) => effect.topic === WEBHOOK_TOPIC)
        .flatMap((effect) => eventsOf(effect.payload as WebhookOutboxPayload).map((event) => event.event_type));
      return { topics: effects.map((effect) => effect.topic), events, state };
    }

    it('when the key has no webhook and the message no callback_url, then no event is recorded, and the message goes and is delivered all the same', () => {
      const { topics, events, state } = story(false, null);
      expect(events).to.deep.equal([]);
      expect(topics).to.include('carrier.dispatch');
      expect(state.occurrences[0]?.recipients?.[0]?.status).to.equal('delivered');
    });

    it('when nothing is known of the key, then its events are recorded (the relay asks the key): queued, sent, delivered and the steps between', () => {
      const events = story(null, null).events;
      expect(events[0]).to.equal('sms.queued');
      expect(events).to.include.members(['sms.sent', 'sms.delivered']);
    });

    it('when the key has a webhook, then every event is recorded', () => {
      expect(story(true, null).events).to.deep.equal(story(null, null).events);
    });

    it('when the message has a callback_url, then its events are recorded whatever the key has', () => {
      expect(story(false, 'https://shop.example/callback').events).to.deep.equal(story(null, null).events);
    });

    it('when the message behaviour has no register, then it records every event', () => {
      const behaviour = createMessageBehaviour();
      const decision = decide(behaviour, behaviour.initialState('msg-1'), { type: 'create', spec: spec(null) }, context());
      expect((decision.effects ?? []).filter((effect) => effect.topic === WEBHOOK_TOPIC)).to.have.length(1);
    });
  });
});
