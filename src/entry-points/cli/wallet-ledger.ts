import type { JournalRecord } from '../../libraries/persistence/journal-port.js';
import { isRecord } from '../../libraries/validation/guards.js';
import { createWalletBehaviour, type WalletEvent, type WalletKind, type WalletState } from '../../wallets/wallet-behaviour.js';

/** One wallet movement with the balances right after it (money in integer 1/10 000). */
export interface LedgerLine {
  readonly seq: number;
  readonly at: number;
  readonly movement: WalletEvent['type'] | 'unknown';
  readonly wallet: WalletKind | null;
  /** Signed change of each wallet. */
  readonly prepaid: number;
  readonly postpaid: number;
  readonly reference: string | null;
  readonly chargeId: string | null;
  readonly refundId: string | null;
  readonly balance: { readonly prepaid: number; readonly postpaid: number; readonly total: number };
}

const MOVEMENTS: ReadonlySet<string> = new Set<WalletEvent['type']>([
  'wallet_opened',
  'topped_up',
  'charged',
  'refunded',
  'charge_settled',
]);

function isWalletEvent(value: unknown): value is WalletEvent {
  return isRecord(value) && MOVEMENTS.has(String(value.type));
}

/** What a movement is: its kind, wallet and references (the amounts come from the wallet's own fold). */
type Description = Pick<LedgerLine, 'movement' | 'wallet' | 'reference' | 'chargeId' | 'refundId'>;

const UNKNOWN: Description = { movement: 'unknown', wallet: null, reference: null, chargeId: null, refundId: null };

function describe(event: WalletEvent): Description {
  switch (event.type) {
    case 'wallet_opened':
      return { ...UNKNOWN, movement: event.type, wallet: event.wallet };
    case 'topped_up':
      return { ...UNKNOWN, movement: event.type, wallet: event.wallet, reference: event.reference };
    case 'charged':
      return { ...UNKNOWN, movement: event.type, chargeId: event.chargeId };
    case 'refunded':
      return { ...UNKNOWN, movement: event.type, chargeId: event.chargeId, refundId: event.refundId };
    case 'charge_settled':
      return { ...UNKNOWN, movement: event.type, chargeId: event.chargeId };
  }
}

/**
 * The ledger is the journal of `wallet:<merchantId>`, folded with the WalletActor's own fold (wallet-behaviour.ts):
 * each line's signed changes are the balances after it less those before it. Idempotency keys do not move money, so
 * how long they are remembered does not matter here.
 */
export function ledgerLines(records: readonly JournalRecord[]): LedgerLine[] {
  const wallet = createWalletBehaviour({ idempotencyTtlMs: Number.POSITIVE_INFINITY });
  let state: WalletState = wallet.initialState('ledger');
  const lines: LedgerLine[] = [];
  for (const record of records) {
    for (const event of record.events) {
      const before = balancesOf(state);
      if (isWalletEvent(event)) state = wallet.apply(state, event);
      const after = balancesOf(state);
      const { movement, wallet: kind, reference, chargeId, refundId } = isWalletEvent(event) ? describe(event) : UNKNOWN;
      lines.push({
        seq: record.seq,
        at: isWalletEvent(event) ? event.at : record.at,
        movement,
        wallet: kind,
        prepaid: after.prepaid - before.prepaid,
        postpaid: after.postpaid - before.postpaid,
        reference,
        chargeId,
        refundId,
        balance: { prepaid: after.prepaid, postpaid: after.postpaid, total: after.prepaid + after.postpaid },
      });
    }
  }
  return lines;
}

function balancesOf(state: WalletState): { readonly prepaid: number; readonly postpaid: number } {
  return { prepaid: state.prepaid.balance, postpaid: state.postpaid.balance };
}
