import { AppError, failure, success, type Result } from '../libraries/errors/app-error.js';
import type { MerchantCatalog } from '../merchants/merchant-catalog.js';
import { calculate, currencySymbol } from './calculate.js';
import { validateCalculateRequest } from './calculate-request.js';

/** `POST /calculate` data, exactly the contract's fields. */
export interface CalculationData {
  readonly mode: 'amount_to_sms' | 'sms_to_amount';
  readonly amount: number;
  readonly sms_count: number;
  readonly average_price: number;
  readonly currency: string;
  readonly currency_symbol: string;
}

export function createCalculateUseCase(deps: { catalog: MerchantCatalog }) {
  return async function calculateForMerchant(merchantId: string, body: unknown): Promise<Result<CalculationData>> {
    const validation = validateCalculateRequest(body);
    if (!validation.ok) return failure(AppError.invalid(validation.issues));
    const merchant = await deps.catalog.merchant(merchantId);
    if (!merchant) return failure(new AppError('NO_PRICING'));
    const result = calculate(validation.value, await deps.catalog.pricingRows(merchantId));
    if (!result) return failure(new AppError('NO_PRICING'));
    return success({
      mode: result.mode,
      amount: result.amount,
      sms_count: result.smsCount,
      average_price: result.averagePrice,
      currency: merchant.currency,
      currency_symbol: merchant.currencySymbol ?? currencySymbol(merchant.currency, merchant.locale),
    });
  };
}
