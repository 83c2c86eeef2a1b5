import { expect } from 'chai';
import fc from 'fast-check';
import { decide, foldEvents, type BehaviourContext, type Decision, type Effect } from '../../../src/libraries/actors/behaviour.js';
import { createManualClock, createSequentialIds } from '../../../src/libraries/clock/clock.js';
import { fromUnits, mustParseMoney, ZERO, type Money } from '../../../src/pricing/money.js';
import {
  createWalletBehaviour,
  type ChargeReply,
  type WalletCommand,
  type WalletEvent,
  type WalletKind,
  type WalletReplies,
  type WalletState,
} from '../../../src/wallets/wallet-behaviour.js';

const T0 = Date.UTC(2025, 0, 15, 12, 0, 0);
const DAY_MS = 24 * 60 * 60 * 1000;
const TTL_MS = DAY_MS; // an Idempotency-Key is remembered 24 h
const MERCHANT = 'merchant-1';

const behaviour = createWalletBehaviour({ idempotencyTtlMs: TTL_MS });
const apply = (state: WalletState, event: WalletEvent): WalletState => behaviour.apply(state, event);

const money = (text: string): Money => mustParseMoney(text);

/**
 * Runs commands the way the actor wrapper does: decide, then fold the events into `decision.state ?? state`.
 * Keeps the journal (every event, in order) so recovery can be replayed from it.
 */
function createStory(start: WalletState = behaviour.initialState(MERCHANT), startAt = T0) {
  const clock = createManualClock(startAt);
  const newId = createSequentialIds('id');
  const journal: WalletEvent[] = [];
  let state = start;
  return {
    clock,
    journal,
    get state(): WalletState {
      return state;
    },
    run<C extends WalletCommand>(command: C): Decision<WalletState, WalletEvent, WalletReplies[C['type']]> {
      const context: BehaviourContext = { now: clock.now(), newId, shard: 0 };
      const decision = decide<WalletState, WalletCommand, WalletEvent, WalletReplies, WalletCommand['type']>(
        behaviour,
        state,
        command,
        context,
      ) as Decision<WalletState, WalletEvent, WalletReplies[C['type']]>;
      state = foldEvents(apply, decision.state ?? state, decision.events);
      journal.push(...decision.events);
      return decision;
    },
  };
}

type Story = ReturnType<typeof createStory>;

/** A wallet with both sides open and funded: the usual start of a story. */
function funded(prepaid: string, postpaid: string): Story {
  const story = createStory();
  story.run({ type: 'open', wallet: 'prepaid' });
  story.run({ type: 'open', wallet: 'postpaid' });
  if (prepaid !== '0') story.run({ type: 'top_up', wallet: 'prepaid', amount: money(prepaid), reference: 'seed-prepaid' });
  if (postpaid !== '0') story.run({ type: 'top_up', wallet: 'postpaid', amount: money(postpaid), reference: 'seed-postpaid' });
  return story;
}

function charge(
  chargeId: string,
  amount: Money,
  extra: Partial<Pick<Extract<WalletCommand, { type: 'charge' }>, 'refundable' | 'idempotency' | 'followUp'>> = {},
): Extract<WalletCommand, { type: 'charge' }> {
  return {
    type: 'charge',
    chargeId,
    amount,
    refundable: extra.refundable ?? false,
    idempotency: extra.idempotency ?? null,
    followUp: extra.followUp ?? null,
  };
}

function balances(story: Story): { prepaid: Money; postpaid: Money } {
  return { prepaid: story.state.prepaid.balance, postpaid: story.state.postpaid.balance };
}

const FOLLOW_UP: Effect = { id: 'msg-1', topic: 'message.create', payload: { messageId: 'msg-1' } };

describe('wallet behaviour', () => {
  describe('open', () => {
    it('when a wallet is opened for the first time, then wallet_opened is journaled and only that side opens', () => {
      const story = createStory();

      const decision = story.run({ type: 'open', wallet: 'prepaid' });

      expect(decision.reply).to.deep.equal({ ok: true, opened: true });
      expect(decision.events).to.deep.equal([{ type: 'wallet_opened', wallet: 'prepaid', at: T0 }]);
      expect(story.state.prepaid).to.deep.equal({ open: true, balance: ZERO });
      expect(story.state.postpaid).to.deep.equal({ open: false, balance: ZERO });
    });

    it('when an open wallet is opened again, then nothing is journaled and its balance is kept', () => {
      const story = funded('5', '0');

      const decision = story.run({ type: 'open', wallet: 'prepaid' });

      expect(decision.reply).to.deep.equal({ ok: true, opened: false });
      expect(decision.events).to.deep.equal([]);
      expect(story.state.prepaid).to.deep.equal({ open: true, balance: money('5') });
    });
  });

  describe('top_up', () => {
    it('when the wallet is not open, then it is refused with NO_WALLET and nothing changes', () => {
      const story = createStory();
      story.run({ type: 'open', wallet: 'postpaid' });
      const before = story.state;

      const decision = story.run({ type: 'top_up', wallet: 'prepaid', amount: money('10'), reference: 'ref-1' });

      expect(decision.reply).to.deep.equal({ ok: false, code: 'NO_WALLET' });
      expect(decision.events).to.deep.equal([]);
      expect(story.state).to.equal(before);
    });

    it('when the wallet is open, then topped_up is journaled and the reply shows the new balances', () => {
      const story = funded('0', '3');
      story.clock.advance(1000);

      const decision = story.run({ type: 'top_up', wallet: 'prepaid', amount: money('12.3456'), reference: 'ref-1' });

      expect(decision.events).to.deep.equal([{ type: 'topped_up', wallet: 'prepaid', amount: 123_456, reference: 'ref-1', at: T0 + 1000 }]);
      expect(decision.reply).to.deep.equal({
        ok: true,
        balance: {
          prepaid: { open: true, balance: money('12.3456') },
          postpaid: { open: true, balance: money('3') },
          total: money('15.3456'),
        },
      });
      expect(balances(story)).to.deep.equal({ prepaid: 123_456, postpaid: 30_000 });
    });

    it('when topped up twice, then the amounts add up exactly', () => {
      const story = funded('0', '0');

      story.run({ type: 'top_up', wallet: 'postpaid', amount: money('0.0001'), reference: 'a' });
      story.run({ type: 'top_up', wallet: 'postpaid', amount: money('0.0002'), reference: 'b' });

      expect(story.state.postpaid.balance).to.equal(3);
    });
  });

  describe('charge', () => {
    it('when prepaid covers the amount, then it all comes from prepaid', () => {
      const story = funded('10', '5');

      const decision = story.run(charge('c-1', money('4')));

      expect(decision.events).to.deep.equal([
        { type: 'charged', chargeId: 'c-1', prepaid: money('4'), postpaid: ZERO, refundable: false, idempotency: null, at: T0 },
      ]);
      expect(decision.reply).to.deep.include({ ok: true, prepaid: money('4'), postpaid: ZERO });
      expect(balances(story)).to.deep.equal({ prepaid: money('6'), postpaid: money('5') });
    });

    it('when prepaid is short, then prepaid goes to 0 and the rest comes from postpaid, split recorded', () => {
      const story = funded('3', '5');

      const decision = story.run(charge('c-1', money('4.5')));

      expect(decision.events).to.have.length(1);
      expect(decision.events[0]).to.deep.include({ type: 'charged', prepaid: money('3'), postpaid: money('1.5') });
      expect(decision.reply).to.deep.equal({
        ok: true,
        prepaid: money('3'),
        postpaid: money('1.5'),
        balance: { prepaid: { open: true, balance: ZERO }, postpaid: { open: true, balance: money('3.5') }, total: money('3.5') },
      });
      expect(balances(story)).to.deep.equal({ prepaid: ZERO, postpaid: money('3.5') });
    });

    it('when only a postpaid wallet exists, then the charge comes from postpaid', () => {
      const story = createStory();
      story.run({ type: 'open', wallet: 'postpaid' });
      story.run({ type: 'top_up', wallet: 'postpaid', amount: money('2'), reference: 'r' });

      const decision = story.run(charge('c-1', money('2')));

      expect(decision.reply).to.deep.include({ ok: true, prepaid: ZERO, postpaid: money('2') });
      expect(balances(story)).to.deep.equal({ prepaid: ZERO, postpaid: ZERO });
    });

    // the limit is the sum of both wallets: one unit below, exactly, one unit above
    const LIMIT_CASES: readonly { amount: number; ok: boolean }[] = [
      { amount: 79_999, ok: true },
      { amount: 80_000, ok: true },
      { amount: 80_001, ok: false },
    ];
    for (const { amount, ok } of LIMIT_CASES) {
      it(`when ${amount} units are charged against 3 + 5 = 80000 units, then ${ok ? 'it succeeds down to at most 0' : 'it is refused whole'}`, () => {
        const story = funded('3', '5');

        const decision = story.run(charge('c-1', fromUnits(amount)));

        if (ok) {
          expect(decision.reply).to.deep.include({ ok: true, prepaid: money('3'), postpaid: fromUnits(amount - 30_000) });
          expect(balances(story)).to.deep.equal({ prepaid: ZERO, postpaid: fromUnits(80_000 - amount) });
        } else {
          expect(decision.reply).to.deep.equal({ ok: false, code: 'INSUFFICIENT_BALANCE', available: money('8') });
          expect(decision.events).to.deep.equal([]);
          expect(balances(story)).to.deep.equal({ prepaid: money('3'), postpaid: money('5') });
        }
      });
    }

    it('when the merchant has no wallet at all, then the charge is INSUFFICIENT_BALANCE with 0 available', () => {
      const story = createStory();

      const decision = story.run(charge('c-1', money('0.01')));

      expect(decision.reply).to.deep.equal({ ok: false, code: 'INSUFFICIENT_BALANCE', available: ZERO });
      expect(decision.events).to.deep.equal([]);
    });

    it('when the charge succeeds, then its followUp effect is emitted in the same decision', () => {
      const story = funded('1', '0');

      const decision = story.run(charge('c-1', money('1'), { followUp: FOLLOW_UP }));

      expect(decision.effects).to.deep.equal([FOLLOW_UP]);
    });

    it('when the charge is refused, then its followUp effect is not emitted', () => {
      const story = funded('1', '0');

      const decision = story.run(charge('c-1', money('1.0001'), { followUp: FOLLOW_UP }));

      expect(decision.reply).to.deep.include({ ok: false, code: 'INSUFFICIENT_BALANCE' });
      expect(decision.effects ?? []).to.deep.equal([]);
    });

    it('when the charge has no followUp, then no effect is emitted', () => {
      const story = funded('1', '0');

      const decision = story.run(charge('c-1', money('1')));

      expect(decision.effects).to.deep.equal([]);
    });

    describe('charging and creating in one write (charge_and_create)', () => {
      const CREATES = { kind: 'message', id: 'c-1', command: { type: 'create' } };
      const chargeAndCreate = (amount: Money, idempotency: Extract<WalletCommand, { type: 'charge' }>['idempotency'] = null) =>
        ({ type: 'charge_and_create', chargeId: 'c-1', amount, refundable: false, idempotency, creates: CREATES }) as const;

      it('when the charge succeeds, then it is decided as a charge is, with what it creates as its companion and no outbox effect', () => {
        const plain = funded('1', '2').run(charge('c-1', money('2')));
        const decision = funded('1', '2').run(chargeAndCreate(money('2')));
        expect(decision.events).to.deep.equal(plain.events);
        expect(decision.reply).to.deep.equal(plain.reply);
        expect(decision.companions).to.deep.equal([CREATES]);
        expect(decision.effects ?? []).to.deep.equal([]);
      });

      it('when the charge is refused or replayed, then nothing is created', () => {
        const poor = funded('1', '0').run(chargeAndCreate(money('1.0001')));
        expect(poor.reply).to.deep.include({ ok: false, code: 'INSUFFICIENT_BALANCE' });
        expect(poor.companions ?? []).to.deep.equal([]);
        const story = funded('10', '0');
        const idempotency = { key: 'k', bodyHash: 'h', receipt: { id: 'c-1' } };
        expect(story.run(chargeAndCreate(money('1'), idempotency)).companions).to.deep.equal([CREATES]);
        const replay = story.run(chargeAndCreate(money('1'), idempotency));
        expect(replay.reply).to.deep.include({ ok: false, code: 'IDEMPOTENCY_REPLAY' });
        expect(replay.companions ?? []).to.deep.equal([]);
      });
    });

    it('when the charge is refundable, then it is tracked as an open charge with its split', () => {
      const story = funded('1', '5');

      story.run(charge('c-1', money('3'), { refundable: true }));

      expect(story.state.openCharges).to.deep.equal({
        'c-1': { prepaid: money('1'), postpaid: money('2'), refundedPrepaid: ZERO, refundedPostpaid: ZERO, refundIds: [] },
      });
    });

    it('when the charge is not refundable, then no open charge is kept', () => {
      const story = funded('1', '5');

      story.run(charge('c-1', money('3')));

      expect(story.state.openCharges).to.deep.equal({});
    });
  });

  describe('refund', () => {
    /** 6 from prepaid, 4 from postpaid. */
    function chargedSplit(): Story {
      const story = funded('6', '10');
      const decision = story.run(charge('c-1', money('10'), { refundable: true }));
      expect(decision.reply).to.deep.include({ ok: true, prepaid: money('6'), postpaid: money('4') });
      return story;
    }

    it('when part of a split charge is refunded, then postpaid is returned first, then prepaid', () => {
      const story = chargedSplit();

      const decision = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-1', amount: money('5') });

      expect(decision.reply).to.deep.equal({ ok: true, prepaid: money('1'), postpaid: money('4'), duplicate: false });
      expect(decision.events).to.deep.equal([
        { type: 'refunded', chargeId: 'c-1', refundId: 'r-1', prepaid: money('1'), postpaid: money('4'), at: T0 },
      ]);
      expect(balances(story)).to.deep.equal({ prepaid: money('1'), postpaid: money('10') });
      expect(story.state.openCharges['c-1']).to.deep.equal({
        prepaid: money('6'),
        postpaid: money('4'),
        refundedPrepaid: money('1'),
        refundedPostpaid: money('4'),
        refundIds: ['r-1'],
      });
    });

    it('when refunds come in pieces, then each wallet gets back at most what the charge took from it', () => {
      const story = chargedSplit();

      const first = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-1', amount: money('3') });
      const second = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-2', amount: money('3') });
      const third = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-3', amount: money('100') });

      expect(first.reply).to.deep.include({ prepaid: ZERO, postpaid: money('3') });
      expect(second.reply).to.deep.include({ prepaid: money('2'), postpaid: money('1') });
      // capped at what remains of the charge
      expect(third.reply).to.deep.include({ prepaid: money('4'), postpaid: ZERO });
      expect(balances(story)).to.deep.equal({ prepaid: money('6'), postpaid: money('10') });
    });

    it('when the same refundId comes again, then it is a duplicate: nothing is journaled or returned twice', () => {
      const story = chargedSplit();
      story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-1', amount: money('2') });
      const before = story.state;

      const decision = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-1', amount: money('2') });

      expect(decision.reply).to.deep.equal({ ok: true, prepaid: ZERO, postpaid: ZERO, duplicate: true });
      expect(decision.events).to.deep.equal([]);
      expect(story.state).to.equal(before);
    });

    it('when the charge was fully refunded, then a further refund returns nothing', () => {
      const story = chargedSplit();
      story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-1', amount: money('10') });

      const decision = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-2', amount: money('1') });

      expect(decision.reply).to.deep.include({ ok: true, prepaid: ZERO, postpaid: ZERO });
      expect(balances(story)).to.deep.equal({ prepaid: money('6'), postpaid: money('10') });
    });

    it('when the charge is unknown, then the refund is a duplicate no-op', () => {
      const story = funded('1', '1');
      const before = story.state;

      const decision = story.run({ type: 'refund', chargeId: 'nope', refundId: 'r-1', amount: money('1') });

      expect(decision.reply).to.deep.equal({ ok: true, prepaid: ZERO, postpaid: ZERO, duplicate: true });
      expect(decision.events).to.deep.equal([]);
      expect(story.state).to.equal(before);
    });

    it('when the charge was not refundable, then a refund of it is a duplicate no-op', () => {
      const story = funded('5', '0');
      story.run(charge('c-1', money('2')));

      const decision = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-1', amount: money('2') });

      expect(decision.reply).to.deep.include({ duplicate: true, prepaid: ZERO, postpaid: ZERO });
      expect(balances(story).prepaid).to.equal(money('3'));
    });

    it('when the amount is 0, then nothing is journaled', () => {
      const story = chargedSplit();

      const decision = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-1', amount: ZERO });

      expect(decision.events).to.deep.equal([]);
      expect(decision.reply).to.deep.include({ prepaid: ZERO, postpaid: ZERO });
    });
  });

  describe('settle', () => {
    it('when an open charge is settled, then it is dropped and can no longer be refunded', () => {
      const story = funded('5', '0');
      story.run(charge('c-1', money('2'), { refundable: true }));
      story.clock.advance(5000);

      const decision = story.run({ type: 'settle', chargeId: 'c-1' });
      const refund = story.run({ type: 'refund', chargeId: 'c-1', refundId: 'r-1', amount: money('2') });

      expect(decision.events).to.deep.equal([{ type: 'charge_settled', chargeId: 'c-1', at: T0 + 5000 }]);
      expect(decision.reply).to.deep.equal({ ok: true });
      expect(story.state.openCharges).to.deep.equal({});
      expect(refund.reply).to.deep.include({ duplicate: true });
      expect(balances(story).prepaid).to.equal(money('3'));
    });

    it('when the charge is not open, then settling journals nothing', () => {
      const story = funded('5', '0');

      const decision = story.run({ type: 'settle', chargeId: 'c-1' });

      expect(decision.reply).to.deep.equal({ ok: true });
      expect(decision.events).to.deep.equal([]);
    });
  });

  describe('idempotency', () => {
    const KEY = 'idem-1';
    const RECEIPT = { message_id: 'msg-1', total_cost: 1 };

    function chargedWithKey(bodyHash = 'hash-a'): Story {
      const story = funded('10', '0');
      const decision = story.run(charge('c-1', money('1'), { idempotency: { key: KEY, bodyHash, receipt: RECEIPT }, followUp: FOLLOW_UP }));
      expect(decision.reply).to.deep.include({ ok: true });
      return story;
    }

    it('when a charge carries a key, then the key is stored with its hash, charge, receipt and event time', () => {
      const story = chargedWithKey();

      expect(story.state.idempotency).to.deep.equal({ [KEY]: { bodyHash: 'hash-a', chargeId: 'c-1', receipt: RECEIPT, at: T0 } });
    });

    it('when the same key comes with the same body, then it is IDEMPOTENCY_REPLAY with the stored receipt and nothing is charged', () => {
      const story = chargedWithKey();
      story.clock.advance(60_000);
      const before = story.state;

      const decision = story.run(
        charge('c-2', money('1'), { idempotency: { key: KEY, bodyHash: 'hash-a', receipt: { other: true } }, followUp: FOLLOW_UP }),
      );

      expect(decision.reply).to.deep.equal({ ok: false, code: 'IDEMPOTENCY_REPLAY', chargeId: 'c-1', receipt: RECEIPT });
      expect(decision.events).to.deep.equal([]);
      expect(decision.effects ?? []).to.deep.equal([]);
      expect(story.state).to.equal(before);
      expect(balances(story).prepaid).to.equal(money('9'));
    });

    it('when the same key comes with a different body, then it is IDEMPOTENCY_KEY_REUSED and nothing is charged', () => {
      const story = chargedWithKey();

      const decision = story.run(charge('c-2', money('1'), { idempotency: { key: KEY, bodyHash: 'hash-b', receipt: null } }));

      expect(decision.reply).to.deep.equal({ ok: false, code: 'IDEMPOTENCY_KEY_REUSED' });
      expect(decision.events).to.deep.equal([]);
      expect(balances(story).prepaid).to.equal(money('9'));
    });

    it('when a key is looked up, then the verdict is new, replay or mismatch', () => {
      const story = chargedWithKey();

      expect(story.run({ type: 'lookup_idempotency', key: 'other', bodyHash: 'hash-a' }).reply).to.deep.equal({ outcome: 'new' });
      expect(story.run({ type: 'lookup_idempotency', key: KEY, bodyHash: 'hash-a' }).reply).to.deep.equal({
        outcome: 'replay',
        chargeId: 'c-1',
        receipt: RECEIPT,
      });
      expect(story.run({ type: 'lookup_idempotency', key: KEY, bodyHash: 'hash-b' }).reply).to.deep.equal({ outcome: 'mismatch' });
    });

    // remembered for idempotencyTtlMs: one ms before, exactly at, one ms after
    const TTL_CASES: readonly { after: number; remembered: boolean }[] = [
      { after: TTL_MS - 1, remembered: true },
      { after: TTL_MS, remembered: false },
      { after: TTL_MS + 1, remembered: false },
    ];
    for (const { after, remembered } of TTL_CASES) {
      it(`when the key comes back ${after} ms later, then it is ${remembered ? 'still a replay' : 'forgotten and charged anew'}`, () => {
        const story = chargedWithKey();
        story.clock.advance(after);

        const lookup = story.run({ type: 'lookup_idempotency', key: KEY, bodyHash: 'hash-a' });
        const decision = story.run(charge('c-2', money('1'), { idempotency: { key: KEY, bodyHash: 'hash-a', receipt: 'second' } }));

        if (remembered) {
          expect(lookup.reply).to.deep.equal({ outcome: 'replay', chargeId: 'c-1', receipt: RECEIPT });
          expect(decision.reply).to.deep.include({ code: 'IDEMPOTENCY_REPLAY', chargeId: 'c-1' });
          expect(balances(story).prepaid).to.equal(money('9'));
        } else {
          expect(lookup.reply).to.deep.equal({ outcome: 'new' });
          expect(decision.reply).to.deep.include({ ok: true, prepaid: money('1') });
          expect(balances(story).prepaid).to.equal(money('8'));
          expect(story.state.idempotency[KEY]).to.deep.equal({ bodyHash: 'hash-a', chargeId: 'c-2', receipt: 'second', at: T0 + after });
        }
      });
    }

    it('when a different body reuses a key after the TTL, then it is charged as new', () => {
      const story = chargedWithKey();
      story.clock.advance(TTL_MS);

      const decision = story.run(charge('c-2', money('1'), { idempotency: { key: KEY, bodyHash: 'hash-b', receipt: null } }));

      expect(decision.reply).to.deep.include({ ok: true });
    });

    it('when later charges are folded, then expired keys are dropped by the event time, not by when the fold runs', () => {
      const story = chargedWithKey();
      story.clock.advance(TTL_MS);
      story.run(charge('c-2', money('1'), { idempotency: { key: 'idem-2', bodyHash: 'h', receipt: null } }));

      expect(Object.keys(story.state.idempotency)).to.deep.equal(['idem-2']);
      // a recovery replaying the same journal, whenever it happens, gets the same map
      const recovered = foldEvents(apply, behaviour.initialState(MERCHANT), story.journal);
      expect(recovered.idempotency).to.deep.equal(story.state.idempotency);
    });

    it('when a charge with a key is refused for balance, then the key is not stored and a retry after a top-up succeeds', () => {
      const story = funded('1', '0');
      const idempotency = { key: KEY, bodyHash: 'hash-a', receipt: RECEIPT };

      const refused = story.run(charge('c-1', money('2'), { idempotency }));
      story.run({ type: 'top_up', wallet: 'prepaid', amount: money('1'), reference: 'r' });
      const retried = story.run(charge('c-1', money('2'), { idempotency }));

      expect(refused.reply).to.deep.include({ code: 'INSUFFICIENT_BALANCE' });
      expect(retried.reply).to.deep.include({ ok: true, prepaid: money('2') });
      expect(story.state.idempotency[KEY]).to.deep.include({ chargeId: 'c-1' });
    });
  });

  describe('balance', () => {
    it('when asked, then total is prepaid + postpaid and each side says whether it is open', () => {
      const story = createStory();
      story.run({ type: 'open', wallet: 'postpaid' });
      story.run({ type: 'top_up', wallet: 'postpaid', amount: money('7.0001'), reference: 'r' });

      const decision = story.run({ type: 'balance' });

      expect(decision.reply).to.deep.equal({
        prepaid: { open: false, balance: ZERO },
        postpaid: { open: true, balance: money('7.0001') },
        total: money('7.0001'),
      });
      expect(decision.events).to.deep.equal([]);
    });

    it('when both sides hold money, then total is their exact sum', () => {
      const story = funded('0.0001', '1234.5678');

      expect(story.run({ type: 'balance' }).reply.total).to.equal(12_345_679);
    });
  });

  describe('properties', () => {
    type Op =
      | { readonly kind: 'top_up'; readonly wallet: WalletKind; readonly units: number }
      | { readonly kind: 'charge'; readonly units: number; readonly refundable: boolean }
      | { readonly kind: 'refund'; readonly pick: number; readonly refundNo: number; readonly units: number }
      | { readonly kind: 'settle'; readonly pick: number }
      | { readonly kind: 'wait'; readonly ms: number };

    const opArbitrary: fc.Arbitrary<Op> = fc.oneof(
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('top_up' as const),
          wallet: fc.constantFrom<WalletKind>('prepaid', 'postpaid'),
          units: fc.integer({ min: 1, max: 5_000_000 }),
        }),
      },
      {
        weight: 4,
        arbitrary: fc.record({
          kind: fc.constant('charge' as const),
          units: fc.integer({ min: 1, max: 8_000_000 }),
          refundable: fc.boolean(),
        }),
      },
      {
        weight: 3,
        arbitrary: fc.record({
          kind: fc.constant('refund' as const),
          pick: fc.nat(),
          refundNo: fc.integer({ min: 0, max: 2 }), // few ids per charge, so duplicates happen
          units: fc.integer({ min: 1, max: 8_000_000 }),
        }),
      },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('settle' as const), pick: fc.nat() }) },
      { weight: 1, arbitrary: fc.record({ kind: fc.constant('wait' as const), ms: fc.integer({ min: 0, max: DAY_MS }) }) },
    );

    interface Run {
      readonly story: Story;
      readonly toppedUp: number;
      readonly charged: number;
      readonly refunded: number;
    }

    /** Plays the ops on an open pair of wallets, checking the per-step invariants; returns reply-based totals. */
    function play(ops: readonly Op[]): Run {
      const story = funded('0', '0');
      const chargeIds: string[] = [];
      const taken = new Map<string, { prepaid: number; postpaid: number }>();
      const given = new Map<string, { prepaid: number; postpaid: number }>();
      let toppedUp = 0;
      let charged = 0;
      let refunded = 0;

      for (const op of ops) {
        const before = balances(story);
        switch (op.kind) {
          case 'top_up': {
            const decision = story.run({ type: 'top_up', wallet: op.wallet, amount: fromUnits(op.units), reference: `t-${toppedUp}` });
            expect(decision.reply.ok).to.equal(true);
            toppedUp += op.units;
            break;
          }
          case 'charge': {
            const chargeId = `c-${chargeIds.length}`;
            chargeIds.push(chargeId);
            const decision = story.run(charge(chargeId, fromUnits(op.units), { refundable: op.refundable, followUp: FOLLOW_UP }));
            const reply: ChargeReply = decision.reply;
            const after = balances(story);
            // (c) all or nothing
            if (reply.ok) {
              expect(reply.prepaid + reply.postpaid).to.equal(op.units);
              expect(before.prepaid + before.postpaid - (after.prepaid + after.postpaid)).to.equal(op.units);
              expect(before.prepaid - after.prepaid).to.equal(reply.prepaid);
              // prepaid first: postpaid is touched only once prepaid is empty
              if (reply.postpaid > 0) expect(after.prepaid).to.equal(0);
              expect(decision.events).to.have.length(1);
              expect(decision.effects).to.deep.equal([FOLLOW_UP]);
              charged += op.units;
              taken.set(chargeId, { prepaid: reply.prepaid, postpaid: reply.postpaid });
            } else {
              expect(reply).to.deep.equal({ ok: false, code: 'INSUFFICIENT_BALANCE', available: before.prepaid + before.postpaid });
              expect(op.units).to.be.greaterThan(before.prepaid + before.postpaid);
              expect(decision.events).to.deep.equal([]);
              expect(decision.effects ?? []).to.deep.equal([]);
              expect(after).to.deep.equal(before);
            }
            break;
          }
          case 'refund': {
            const chargeId = chargeIds.length === 0 ? 'c-none' : chargeIds[op.pick % chargeIds.length]!;
            const decision = story.run({ type: 'refund', chargeId, refundId: `${chargeId}-r-${op.refundNo}`, amount: fromUnits(op.units) });
            const { prepaid, postpaid } = decision.reply;
            expect(prepaid + postpaid).to.be.at.most(op.units);
            refunded += prepaid + postpaid;
            const sofar = given.get(chargeId) ?? { prepaid: 0, postpaid: 0 };
            const next = { prepaid: sofar.prepaid + prepaid, postpaid: sofar.postpaid + postpaid };
            given.set(chargeId, next);
            // never more back to a wallet than the charge took from it
            const took = taken.get(chargeId) ?? { prepaid: 0, postpaid: 0 };
            expect(next.prepaid).to.be.at.most(took.prepaid);
            expect(next.postpaid).to.be.at.most(took.postpaid);
            break;
          }
          case 'settle': {
            if (chargeIds.length > 0) story.run({ type: 'settle', chargeId: chargeIds[op.pick % chargeIds.length]! });
            break;
          }
          case 'wait':
            story.clock.advance(op.ms);
            break;
        }
        // (a) never below 0
        expect(story.state.prepaid.balance).to.be.at.least(0);
        expect(story.state.postpaid.balance).to.be.at.least(0);
      }
      return { story, toppedUp, charged, refunded };
    }

    /** Each wallet's balance recomputed from the journal alone, without the behaviour's apply. */
    function ledger(journal: readonly WalletEvent[]): Record<WalletKind, number> {
      const totals: Record<WalletKind, number> = { prepaid: 0, postpaid: 0 };
      for (const event of journal) {
        if (event.type === 'topped_up') totals[event.wallet] += event.amount;
        if (event.type === 'charged') {
          totals.prepaid -= event.prepaid;
          totals.postpaid -= event.postpaid;
        }
        if (event.type === 'refunded') {
          totals.prepaid += event.prepaid;
          totals.postpaid += event.postpaid;
        }
      }
      return totals;
    }

    const ops = fc.array(opArbitrary, { maxLength: 60 });

    it('for any sequence of top-ups, charges and refunds, balances never go below 0 and each charge takes its amount or nothing', () => {
      fc.assert(
        fc.property(ops, (sequence) => {
          play(sequence);
        }),
        { numRuns: 300 },
      );
    });

    it('for any sequence, each wallet balance equals the fold of its ledger events', () => {
      fc.assert(
        fc.property(ops, (sequence) => {
          const { story } = play(sequence);

          const fromLedger = ledger(story.journal);

          expect(story.state.prepaid.balance).to.equal(fromLedger.prepaid);
          expect(story.state.postpaid.balance).to.equal(fromLedger.postpaid);
        }),
        { numRuns: 300 },
      );
    });

    it('for any sequence, Σ top-ups = balance + Σ (charged − refunded)', () => {
      fc.assert(
        fc.property(ops, (sequence) => {
          const { story, toppedUp, charged, refunded } = play(sequence);

          const balance = story.run({ type: 'balance' }).reply.total;

          expect(toppedUp).to.equal(balance + charged - refunded);
        }),
        { numRuns: 300 },
      );
    });

    it('for any sequence with idempotency keys and waits, folding the journal from the initial state recovers the live state', () => {
      const keyedOps = fc.array(
        fc.tuple(opArbitrary, fc.option(fc.tuple(fc.integer({ min: 0, max: 3 }), fc.integer({ min: 0, max: 1 })), { nil: null })),
        { maxLength: 60 },
      );
      fc.assert(
        fc.property(keyedOps, (sequence) => {
          const story = funded('0', '0');
          sequence.forEach(([op, key], i) => {
            if (op.kind === 'charge') {
              const idempotency = key === null ? null : { key: `k-${key[0]}`, bodyHash: `h-${key[1]}`, receipt: { i } };
              story.run(charge(`c-${i}`, fromUnits(op.units), { refundable: op.refundable, idempotency }));
            } else if (op.kind === 'top_up') {
              story.run({ type: 'top_up', wallet: op.wallet, amount: fromUnits(op.units), reference: `t-${i}` });
            } else if (op.kind === 'refund') {
              story.run({ type: 'refund', chargeId: `c-${op.pick % (i + 1)}`, refundId: `r-${op.refundNo}`, amount: fromUnits(op.units) });
            } else if (op.kind === 'settle') {
              story.run({ type: 'settle', chargeId: `c-${op.pick % (i + 1)}` });
            } else {
              story.clock.advance(op.ms);
            }
          });

          const recovered = foldEvents(apply, behaviour.initialState(MERCHANT), story.journal);

          expect(recovered).to.deep.equal(story.state);
        }),
        { numRuns: 300 },
      );
    });
  });
});
