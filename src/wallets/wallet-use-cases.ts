import type { ActorRouter } from '../cluster/actor-router.js';
import { NO_SCOPE, type RequestScope } from '../libraries/actors/request-deadline.js';
import { AppError, failure, success, type Result } from '../libraries/errors/app-error.js';
import type { Directory } from '../libraries/persistence/directory-port.js';
import type { MerchantCatalog } from '../merchants/merchant-catalog.js';
import { toDecimal, toDecimalNumber, type Money } from '../pricing/money.js';
import type { WalletKind } from './wallet-behaviour.js';

/** `GET /balance` data, exactly the contract's fields. */
export interface BalanceData {
  readonly balance: number;
  readonly sms_wallet_balance: number;
  readonly postpaid_wallet_balance: number;
  readonly currency: string;
  readonly unit_price: number;
  readonly available_sms: number;
}

export function createWalletUseCases(deps: { router: ActorRouter; directory: Directory; catalog: MerchantCatalog }) {
  async function getBalance(merchantId: string, scope: RequestScope = NO_SCOPE): Promise<Result<BalanceData>> {
    const merchant = await deps.catalog.merchant(merchantId);
    if (!merchant) return failure(new AppError('NO_WALLET'));
    const view = await deps.router.wallet(merchantId).ask({ type: 'balance' }, { scope });
    if (!view.prepaid.open && !view.postpaid.open) return failure(new AppError('NO_WALLET'));
    const unitPrice = deps.catalog.unitPrice(merchant);
    return success({
      balance: toDecimalNumber(view.total),
      sms_wallet_balance: toDecimalNumber(view.prepaid.balance),
      postpaid_wallet_balance: toDecimalNumber(view.postpaid.balance),
      currency: merchant.currency,
      unit_price: toDecimalNumber(unitPrice),
      available_sms: toDecimal(view.total).div(toDecimal(unitPrice)).floor().toNumber(),
    });
  }

  /** Operator: open a wallet (idempotent), recorded in the directory for listings. */
  async function openWallet(merchantId: string, wallet: WalletKind): Promise<void> {
    await deps.router.wallet(merchantId).ask({ type: 'open', wallet });
    const merchant = await deps.directory.merchant(merchantId);
    if (merchant && !merchant.wallets[wallet]) {
      await deps.directory.updateMerchant(merchantId, { wallets: { ...merchant.wallets, [wallet]: true } });
      deps.catalog.invalidate(merchantId);
    }
  }

  /** Operator: credit a prepaid wallet or extend the postpaid credit line. */
  async function topUp(merchantId: string, wallet: WalletKind, amount: Money, reference: string) {
    return deps.router.wallet(merchantId).ask({ type: 'top_up', wallet, amount, reference });
  }

  return { getBalance, openWallet, topUp };
}

export type WalletUseCases = ReturnType<typeof createWalletUseCases>;
