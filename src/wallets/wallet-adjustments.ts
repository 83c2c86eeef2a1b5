import type { ActorRouter } from '../cluster/actor-router.js';
import { NO_SCOPE, type RequestScope } from '../libraries/actors/request-deadline.js';
import type { EffectOf } from '../libraries/actors/behaviour.js';
import { isFlag, isRecord, isText } from '../libraries/validation/guards.js';
import { isMoney, type Money } from '../pricing/money.js';

/** Outbox topic of the refunds and settlements a message owes its wallet. */
export const WALLET_ADJUST_TOPIC = 'wallet.adjust';

/** Payload of a `wallet.adjust` outbox entry: return money for occurrences that never go, and/or close the charge. */
export interface WalletAdjustment {
  readonly merchantId: string;
  readonly chargeId: string;
  readonly refundId: string;
  readonly amount: Money;
  /** No refund can follow: the wallet forgets the charge. */
  readonly settle: boolean;
}

export type WalletAdjustmentEffect = EffectOf<typeof WALLET_ADJUST_TOPIC, WalletAdjustment>;

/** A `wallet.adjust` payload read back from the outbox. */
export function isWalletAdjustment(value: unknown): value is WalletAdjustment {
  return (
    isRecord(value) &&
    isText(value.merchantId) &&
    isText(value.chargeId) &&
    isText(value.refundId) &&
    isMoney(value.amount) &&
    isFlag(value.settle)
  );
}

/**
 * Carries a message's wallet adjustment to its wallet: the refund (idempotent per refund id), then settling the
 * charge. Run right after the message journals it (in the request's `scope`, its deadline lifted), and again by the
 * outbox relay after a crash.
 */
export async function applyWalletAdjustment(
  router: ActorRouter,
  adjustment: WalletAdjustment,
  scope: RequestScope = NO_SCOPE,
): Promise<void> {
  const wallet = router.wallet(adjustment.merchantId);
  if (adjustment.amount > 0) {
    await wallet.ask(
      { type: 'refund', chargeId: adjustment.chargeId, refundId: adjustment.refundId, amount: adjustment.amount },
      { scope },
    );
  }
  if (adjustment.settle) await wallet.ask({ type: 'settle', chargeId: adjustment.chargeId }, { scope });
}

export function adjustmentOutboxId(adjustment: WalletAdjustment): string {
  return `adjust:${adjustment.chargeId}:${adjustment.refundId}`;
}
