import type { ActorRouter } from '../cluster/actor-router.js';
import type { WalletAdjustment } from '../messaging/message-behaviour.js';

/**
 * Carries a message's wallet adjustment to its wallet: the refund (idempotent per refund id), then settling the
 * charge. Run right after the message journals it, and again by the outbox relay after a crash.
 */
export async function applyWalletAdjustment(router: ActorRouter, adjustment: WalletAdjustment): Promise<void> {
  const wallet = router.wallet(adjustment.merchantId);
  if (adjustment.amount > 0) {
    await wallet.ask({ type: 'refund', chargeId: adjustment.chargeId, refundId: adjustment.refundId, amount: adjustment.amount });
  }
  if (adjustment.settle) await wallet.ask({ type: 'settle', chargeId: adjustment.chargeId });
}

export function adjustmentOutboxId(adjustment: WalletAdjustment): string {
  return `adjust:${adjustment.chargeId}:${adjustment.refundId}`;
}
