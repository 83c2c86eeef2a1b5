import { parseMoney } from '../../pricing/money.js';
import type { BalanceView, WalletKind } from '../../wallets/wallet-behaviour.js';
import { done, rejected, type CliGateway, type CommandOutcome, type CommandSpec } from './command.js';
import { decimal, decimalNumber, fields, humanTime, isoTime, signedDecimal, table } from './format.js';
import { ledgerLines, type LedgerLine } from './wallet-ledger.js';

const WALLETS: readonly WalletKind[] = ['prepaid', 'postpaid'];
export const DEFAULT_TOP_UP_REFERENCE = 'operator-cli';

const isWalletKind = (value: string): value is WalletKind => (WALLETS as readonly string[]).includes(value);

function balanceJson(view: BalanceView) {
  return {
    prepaid: view.prepaid.open ? decimalNumber(view.prepaid.balance) : null,
    postpaid: view.postpaid.open ? decimalNumber(view.postpaid.balance) : null,
    total: decimalNumber(view.total),
  };
}

function balanceText(view: BalanceView, currency: string): string {
  const of = (wallet: WalletKind) => (view[wallet].open ? `${decimal(view[wallet].balance)} ${currency}` : 'not open');
  return fields([
    ['Prepaid', of('prepaid')],
    ['Postpaid', of('postpaid')],
    ['Total', `${decimal(view.total)} ${currency}`],
  ]);
}

export async function openWallet(
  gateway: CliGateway,
  options: { readonly merchantId: string; readonly wallet: WalletKind },
): Promise<CommandOutcome> {
  const merchant = await gateway.persistence.directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const wasOpen = merchant.wallets[options.wallet];
  await gateway.useCases.wallets.openWallet(merchant.id, options.wallet);
  const text = `The ${options.wallet} wallet of ${merchant.id} ${wasOpen ? 'was already open' : 'is open'}.`;
  return done(text, { merchant_id: merchant.id, wallet: options.wallet, opened: !wasOpen });
}

export interface TopUpOptions {
  readonly merchantId: string;
  readonly wallet: WalletKind;
  /** Decimal text, at most 4 decimals. */
  readonly amount: string;
  readonly reference?: string | undefined;
}

/** Credits the prepaid wallet, or extends the postpaid credit line. */
export async function topUp(gateway: CliGateway, options: TopUpOptions): Promise<CommandOutcome> {
  const amount = parseMoney(options.amount);
  if (amount === null || amount === 0) return rejected(`amount "${options.amount}" must be a positive amount with at most 4 decimals`);
  const reference = options.reference ?? DEFAULT_TOP_UP_REFERENCE;
  if (reference.trim() === '') return rejected('--reference must not be empty');
  const merchant = await gateway.persistence.directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const reply = await gateway.useCases.wallets.topUp(merchant.id, options.wallet, amount, reference);
  if (!reply.ok)
    return rejected(`the ${options.wallet} wallet of ${merchant.id} is not open (wallet open ${merchant.id} ${options.wallet})`);
  const text = [
    `Topped up the ${options.wallet} wallet of ${merchant.id} by ${decimal(amount)} ${merchant.currency}.`,
    balanceText(reply.balance, merchant.currency),
  ].join('\n');
  const json = {
    merchant_id: merchant.id,
    wallet: options.wallet,
    amount: decimalNumber(amount),
    reference,
    currency: merchant.currency,
    balance: balanceJson(reply.balance),
  };
  return done(text, json);
}

export async function walletBalance(gateway: CliGateway, options: { readonly merchantId: string }): Promise<CommandOutcome> {
  const merchant = await gateway.persistence.directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const balance = await gateway.useCases.wallets.getBalance(merchant.id);
  if (!balance.ok) return rejected(`${merchant.id} has no open wallet (wallet open ${merchant.id} prepaid|postpaid)`);
  const data = balance.value;
  const text = fields([
    ['Prepaid', `${data.sms_wallet_balance} ${data.currency}`],
    ['Postpaid', `${data.postpaid_wallet_balance} ${data.currency}`],
    ['Total', `${data.balance} ${data.currency}`],
    ['Unit price', `${data.unit_price} ${data.currency}`],
    ['Available SMS', String(data.available_sms)],
  ]);
  return done(text, { merchant_id: merchant.id, ...data });
}

/** Every movement of the merchant's wallets, read from the journal, with the balances after each. */
export async function walletLedger(gateway: CliGateway, options: { readonly merchantId: string }): Promise<CommandOutcome> {
  const merchant = await gateway.persistence.directory.merchant(options.merchantId);
  if (!merchant) return rejected(`unknown merchant ${options.merchantId}`);
  const lines = ledgerLines(await gateway.persistence.journal.read(`wallet:${merchant.id}`, 0));
  // a top-up moves one wallet; a charge or refund shows its prepaid/postpaid split
  const change = (line: LedgerLine, wallet: WalletKind) => {
    const touched = line.movement === 'topped_up' ? line.wallet === wallet : line.movement === 'charged' || line.movement === 'refunded';
    return touched ? signedDecimal(line[wallet]) : '';
  };
  const text = [
    `Ledger of ${merchant.id} (${merchant.currency})`,
    table(
      ['TIME', 'MOVEMENT', 'WALLET', 'PREPAID', 'POSTPAID', 'PREPAID BAL', 'POSTPAID BAL', 'TOTAL', 'REFERENCE'],
      lines.map((l) => [
        humanTime(l.at),
        l.movement,
        l.wallet ?? '',
        change(l, 'prepaid'),
        change(l, 'postpaid'),
        decimal(l.balance.prepaid),
        decimal(l.balance.postpaid),
        decimal(l.balance.total),
        [l.reference, l.chargeId, l.refundId].filter((part) => part !== null).join(' '),
      ]),
      'No movements.',
    ),
  ].join('\n');
  const json = {
    merchant_id: merchant.id,
    currency: merchant.currency,
    movements: lines.map((l) => ({
      seq: l.seq,
      at: isoTime(l.at),
      movement: l.movement,
      wallet: l.wallet,
      prepaid: decimalNumber(l.prepaid),
      postpaid: decimalNumber(l.postpaid),
      reference: l.reference,
      charge_id: l.chargeId,
      refund_id: l.refundId,
      balance: {
        prepaid: decimalNumber(l.balance.prepaid),
        postpaid: decimalNumber(l.balance.postpaid),
        total: decimalNumber(l.balance.total),
      },
    })),
  };
  return done(text, json);
}

const walletArg = (value: string): WalletKind | { readonly usageError: string } =>
  isWalletKind(value) ? value : { usageError: `the wallet must be prepaid or postpaid, not "${value}"` };

export const WALLET_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['wallet', 'open'],
    args: ['merchantId', 'prepaid|postpaid'],
    summary: 'open a wallet (idempotent)',
    prepare(args) {
      const wallet = walletArg(args.arg('prepaid|postpaid'));
      if (typeof wallet !== 'string') return wallet;
      return (gateway) => openWallet(gateway, { merchantId: args.arg('merchantId'), wallet });
    },
  },
  {
    words: ['wallet', 'top-up'],
    args: ['merchantId', 'prepaid|postpaid', 'amount'],
    usage: `[--reference <text>]`,
    summary: `credit the prepaid wallet or extend the postpaid credit line (reference defaults to "${DEFAULT_TOP_UP_REFERENCE}")`,
    options: { reference: { type: 'string' } },
    prepare(args) {
      const wallet = walletArg(args.arg('prepaid|postpaid'));
      if (typeof wallet !== 'string') return wallet;
      const options: TopUpOptions = {
        merchantId: args.arg('merchantId'),
        wallet,
        amount: args.arg('amount'),
        reference: args.option('reference'),
      };
      return (gateway) => topUp(gateway, options);
    },
  },
  {
    words: ['wallet', 'balance'],
    args: ['merchantId'],
    summary: 'balances, unit price and available SMS, as GET /balance reports them',
    prepare: (args) => (gateway) => walletBalance(gateway, { merchantId: args.arg('merchantId') }),
  },
  {
    words: ['wallet', 'ledger'],
    args: ['merchantId'],
    summary: 'every wallet movement with the running balances',
    prepare: (args) => (gateway) => walletLedger(gateway, { merchantId: args.arg('merchantId') }),
  },
];
