import type { Behaviour, CommandOf, Companion, Decision, Effect } from '../libraries/actors/behaviour.js';
import { add, min, subtract, ZERO, type Money } from '../pricing/money.js';

/**
 * WalletActor (`wallet:<merchantId>`): the merchant's prepaid wallet and postpaid credit line. Every movement is a
 * ledger event and the balances are the fold of the ledger. A charge takes prepaid first, then postpaid,
 * all-or-nothing, never below 0; a refund returns money where it came from (postpaid first, then prepaid).
 * The merchant's Idempotency-Keys live here too, so "charged once per key" is decided in the same step as the
 * charge.
 */

export type WalletKind = 'prepaid' | 'postpaid';

export interface WalletBalance {
  readonly open: boolean;
  readonly balance: Money;
}

/** A charge that may still be refunded (scheduled and recurring sends), until settled. */
export interface OpenCharge {
  readonly prepaid: Money;
  readonly postpaid: Money;
  readonly refundedPrepaid: Money;
  readonly refundedPostpaid: Money;
  readonly refundIds: readonly string[];
}

export interface IdempotencyEntry {
  readonly bodyHash: string;
  readonly chargeId: string;
  /** What the first request answered, returned again on a replay. */
  readonly receipt: unknown;
  readonly at: number;
}

export interface WalletState {
  readonly merchantId: string;
  readonly prepaid: WalletBalance;
  readonly postpaid: WalletBalance;
  readonly openCharges: Readonly<Record<string, OpenCharge>>;
  readonly idempotency: Readonly<Record<string, IdempotencyEntry>>;
}

export type WalletEvent =
  | { readonly type: 'wallet_opened'; readonly wallet: WalletKind; readonly at: number }
  | { readonly type: 'topped_up'; readonly wallet: WalletKind; readonly amount: Money; readonly reference: string; readonly at: number }
  | {
      readonly type: 'charged';
      readonly chargeId: string;
      readonly prepaid: Money;
      readonly postpaid: Money;
      readonly refundable: boolean;
      readonly idempotency: { readonly key: string; readonly bodyHash: string; readonly receipt: unknown } | null;
      readonly at: number;
    }
  | {
      readonly type: 'refunded';
      readonly chargeId: string;
      readonly refundId: string;
      readonly prepaid: Money;
      readonly postpaid: Money;
      readonly at: number;
    }
  | { readonly type: 'charge_settled'; readonly chargeId: string; readonly at: number };

export type WalletCommand =
  | { readonly type: 'open'; readonly wallet: WalletKind }
  | { readonly type: 'top_up'; readonly wallet: WalletKind; readonly amount: Money; readonly reference: string }
  | {
      readonly type: 'charge';
      readonly chargeId: string;
      readonly amount: Money;
      readonly refundable: boolean;
      readonly idempotency: { readonly key: string; readonly bodyHash: string; readonly receipt: unknown } | null;
      /** What must follow the charge (creating the message), recorded in the same append. */
      readonly followUp: Effect | null;
    }
  | {
      /**
       * A charge that creates what it pays for (the message) in its own write, as that actor's first record
       * (behaviour.ts, Companion), where the journal writes companions. A type of its own, so that a node that does
       * not know it refuses it whole instead of charging without creating.
       */
      readonly type: 'charge_and_create';
      readonly chargeId: string;
      readonly amount: Money;
      readonly refundable: boolean;
      readonly idempotency: { readonly key: string; readonly bodyHash: string; readonly receipt: unknown } | null;
      readonly creates: Companion;
    }
  | { readonly type: 'refund'; readonly chargeId: string; readonly refundId: string; readonly amount: Money }
  | { readonly type: 'settle'; readonly chargeId: string }
  | { readonly type: 'lookup_idempotency'; readonly key: string; readonly bodyHash: string }
  | { readonly type: 'balance' };

export interface BalanceView {
  readonly prepaid: WalletBalance;
  readonly postpaid: WalletBalance;
  readonly total: Money;
}

export type IdempotencyVerdict =
  | { readonly outcome: 'new' }
  | { readonly outcome: 'replay'; readonly chargeId: string; readonly receipt: unknown }
  | { readonly outcome: 'mismatch' };

export type ChargeReply =
  | { readonly ok: true; readonly prepaid: Money; readonly postpaid: Money; readonly balance: BalanceView }
  | { readonly ok: false; readonly code: 'INSUFFICIENT_BALANCE'; readonly available: Money }
  | { readonly ok: false; readonly code: 'IDEMPOTENCY_REPLAY'; readonly chargeId: string; readonly receipt: unknown }
  | { readonly ok: false; readonly code: 'IDEMPOTENCY_KEY_REUSED' };

export interface WalletReplies {
  readonly open: { readonly ok: true; readonly opened: boolean };
  readonly top_up: { readonly ok: true; readonly balance: BalanceView } | { readonly ok: false; readonly code: 'NO_WALLET' };
  readonly charge: ChargeReply;
  readonly charge_and_create: ChargeReply;
  readonly refund: { readonly ok: true; readonly prepaid: Money; readonly postpaid: Money; readonly duplicate: boolean };
  readonly settle: { readonly ok: true };
  readonly lookup_idempotency: IdempotencyVerdict;
  readonly balance: BalanceView;
}

const CLOSED: WalletBalance = { open: false, balance: ZERO };

export function balanceView(state: WalletState): BalanceView {
  return { prepaid: state.prepaid, postpaid: state.postpaid, total: add(state.prepaid.balance, state.postpaid.balance) };
}

function idempotencyVerdict(state: WalletState, key: string, bodyHash: string): IdempotencyVerdict {
  const entry = state.idempotency[key];
  if (!entry) return { outcome: 'new' };
  return entry.bodyHash === bodyHash ? { outcome: 'replay', chargeId: entry.chargeId, receipt: entry.receipt } : { outcome: 'mismatch' };
}

function withBalance(state: WalletState, wallet: WalletKind, change: (balance: Money) => Money): WalletState {
  const current = state[wallet];
  return { ...state, [wallet]: { open: current.open, balance: change(current.balance) } };
}

export interface WalletBehaviourOptions {
  /** How long an Idempotency-Key is remembered (24 h by default). */
  readonly idempotencyTtlMs: number;
}

export function createWalletBehaviour(options: WalletBehaviourOptions): Behaviour<WalletState, WalletCommand, WalletEvent, WalletReplies> {
  function forgetExpiredKeys(state: WalletState, now: number): WalletState {
    const horizon = now - options.idempotencyTtlMs;
    const kept = Object.entries(state.idempotency).filter(([, entry]) => entry.at > horizon);
    return kept.length === Object.keys(state.idempotency).length ? state : { ...state, idempotency: Object.fromEntries(kept) };
  }

  function apply(state: WalletState, event: WalletEvent): WalletState {
    switch (event.type) {
      case 'wallet_opened':
        return { ...state, [event.wallet]: { open: true, balance: state[event.wallet].balance } };
      case 'topped_up':
        return withBalance(state, event.wallet, (b) => add(b, event.amount));
      case 'charged': {
        let next = withBalance(state, 'prepaid', (b) => subtract(b, event.prepaid));
        next = withBalance(next, 'postpaid', (b) => subtract(b, event.postpaid));
        if (event.refundable) {
          const charge: OpenCharge = {
            prepaid: event.prepaid,
            postpaid: event.postpaid,
            refundedPrepaid: ZERO,
            refundedPostpaid: ZERO,
            refundIds: [],
          };
          next = { ...next, openCharges: { ...next.openCharges, [event.chargeId]: charge } };
        }
        next = forgetExpiredKeys(next, event.at);
        if (event.idempotency) {
          const entry: IdempotencyEntry = {
            bodyHash: event.idempotency.bodyHash,
            chargeId: event.chargeId,
            receipt: event.idempotency.receipt,
            at: event.at,
          };
          next = { ...next, idempotency: { ...next.idempotency, [event.idempotency.key]: entry } };
        }
        return next;
      }
      case 'refunded': {
        const charge = state.openCharges[event.chargeId];
        let next = withBalance(state, 'prepaid', (b) => add(b, event.prepaid));
        next = withBalance(next, 'postpaid', (b) => add(b, event.postpaid));
        if (!charge) return next;
        const updated: OpenCharge = {
          ...charge,
          refundedPrepaid: add(charge.refundedPrepaid, event.prepaid),
          refundedPostpaid: add(charge.refundedPostpaid, event.postpaid),
          refundIds: [...charge.refundIds, event.refundId],
        };
        return { ...next, openCharges: { ...next.openCharges, [event.chargeId]: updated } };
      }
      case 'charge_settled': {
        const { [event.chargeId]: _settled, ...rest } = state.openCharges;
        return { ...state, openCharges: rest };
      }
    }
  }

  /** A charge's terms decided: the `charged` event and its reply, or a refusal that records nothing. */
  function decideCharge(
    state: WalletState,
    command: Pick<CommandOf<WalletCommand, 'charge'>, 'chargeId' | 'amount' | 'refundable' | 'idempotency'>,
    now: number,
  ): Decision<WalletState, WalletEvent, ChargeReply> {
    if (command.idempotency) {
      const verdict = idempotencyVerdict(forgetExpiredKeys(state, now), command.idempotency.key, command.idempotency.bodyHash);
      if (verdict.outcome === 'replay')
        return { events: [], reply: { ok: false, code: 'IDEMPOTENCY_REPLAY', chargeId: verdict.chargeId, receipt: verdict.receipt } };
      if (verdict.outcome === 'mismatch') return { events: [], reply: { ok: false, code: 'IDEMPOTENCY_KEY_REUSED' } };
    }
    const available = add(state.prepaid.balance, state.postpaid.balance);
    if (command.amount > available) return { events: [], reply: { ok: false, code: 'INSUFFICIENT_BALANCE', available } };
    const prepaid = min(state.prepaid.balance, command.amount);
    const postpaid = subtract(command.amount, prepaid);
    const event: WalletEvent = {
      type: 'charged',
      chargeId: command.chargeId,
      prepaid,
      postpaid,
      refundable: command.refundable,
      idempotency: command.idempotency,
      at: now,
    };
    return { events: [event], reply: { ok: true, prepaid, postpaid, balance: balanceView(apply(state, event)) } };
  }

  return {
    kind: 'wallet',
    initialState: (merchantId) => ({ merchantId, prepaid: CLOSED, postpaid: CLOSED, openCharges: {}, idempotency: {} }),
    apply,
    handlers: {
      open: (state, command, { now }) =>
        state[command.wallet].open
          ? { events: [], reply: { ok: true, opened: false } }
          : { events: [{ type: 'wallet_opened', wallet: command.wallet, at: now }], reply: { ok: true, opened: true } },

      top_up: (state, command, { now }) => {
        if (!state[command.wallet].open) return { events: [], reply: { ok: false, code: 'NO_WALLET' } };
        const event: WalletEvent = {
          type: 'topped_up',
          wallet: command.wallet,
          amount: command.amount,
          reference: command.reference,
          at: now,
        };
        return { events: [event], reply: { ok: true, balance: balanceView(apply(state, event)) } };
      },

      charge: (state, command, { now }) => {
        const decision = decideCharge(state, command, now);
        return decision.events.length > 0 ? { ...decision, effects: command.followUp ? [command.followUp] : [] } : decision;
      },

      charge_and_create: (state, command, { now }) => {
        const decision = decideCharge(state, command, now);
        return decision.events.length > 0 ? { ...decision, companions: [command.creates] } : decision;
      },

      refund: (state, command, { now }) => {
        const charge = state.openCharges[command.chargeId];
        if (!charge || charge.refundIds.includes(command.refundId) || command.amount <= 0) {
          return { events: [], reply: { ok: true, prepaid: ZERO, postpaid: ZERO, duplicate: true } };
        }
        const refundablePostpaid = subtract(charge.postpaid, charge.refundedPostpaid);
        const refundablePrepaid = subtract(charge.prepaid, charge.refundedPrepaid);
        const amount = min(command.amount, add(refundablePostpaid, refundablePrepaid));
        if (amount <= 0) return { events: [], reply: { ok: true, prepaid: ZERO, postpaid: ZERO, duplicate: false } };
        const postpaid = min(amount, refundablePostpaid);
        const prepaid = subtract(amount, postpaid);
        const event: WalletEvent = { type: 'refunded', chargeId: command.chargeId, refundId: command.refundId, prepaid, postpaid, at: now };
        return { events: [event], reply: { ok: true, prepaid, postpaid, duplicate: false } };
      },

      settle: (state, command, { now }) =>
        state.openCharges[command.chargeId]
          ? { events: [{ type: 'charge_settled', chargeId: command.chargeId, at: now }], reply: { ok: true } }
          : { events: [], reply: { ok: true } },

      lookup_idempotency: (state, command, { now }) => ({
        events: [],
        reply: idempotencyVerdict(forgetExpiredKeys(state, now), command.key, command.bodyHash),
      }),

      balance: (state) => ({ events: [], reply: balanceView(state) }),
    },
  };
}
