import type { JournalRecord } from '../../libraries/persistence/journal-port.js';
import type { WalletEvent, WalletKind } from '../../wallets/wallet-behaviour.js';

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

const MOVEMENTS: ReadonlySet<string> = new Set<WalletEvent['type']>(['wallet_opened', 'topped_up', 'charged', 'refunded', 'charge_settled']);

function isWalletEvent(value: unknown): value is WalletEvent {
  return typeof value === 'object' && value !== null && MOVEMENTS.has(String((value as { type?: unknown }).type));
}

type Change = Pick<LedgerLine, 'movement' | 'wallet' | 'prepaid' | 'postpaid' | 'reference' | 'chargeId' | 'refundId'>;

const NOTHING: Change = { movement: 'unknown', wallet: null, prepaid: 0, postpaid: 0, reference: null, chargeId: null, refundId: null };

function changeOf(event: WalletEvent): Change {
  switch (event.type) {
    case 'wallet_opened':
      return { ...NOTHING, movement: event.type, wallet: event.wallet };
    case 'topped_up':
      return { ...NOTHING, movement: event.type, wallet: event.wallet, [event.wallet]: event.amount, reference: event.reference };
    case 'charged':
      return { ...NOTHING, movement: event.type, prepaid: 0 - event.prepaid, postpaid: 0 - event.postpaid, chargeId: event.chargeId };
    case 'refunded':
      return { ...NOTHING, movement: event.type, prepaid: event.prepaid, postpaid: event.postpaid, chargeId: event.chargeId, refundId: event.refundId };
    case 'charge_settled':
      return { ...NOTHING, movement: event.type, chargeId: event.chargeId };
  }
}

/** The ledger is the journal of `wallet:<merchantId>`; folding it gives the same balances the WalletActor holds. */
export function ledgerLines(records: readonly JournalRecord[]): LedgerLine[] {
  let prepaid = 0;
  let postpaid = 0;
  const lines: LedgerLine[] = [];
  for (const record of records) {
    for (const event of record.events) {
      const change = isWalletEvent(event) ? changeOf(event) : NOTHING;
      prepaid += change.prepaid;
      postpaid += change.postpaid;
      const at = isWalletEvent(event) ? event.at : record.at;
      lines.push({ seq: record.seq, at, ...change, balance: { prepaid, postpaid, total: prepaid + postpaid } });
    }
  }
  return lines;
}
