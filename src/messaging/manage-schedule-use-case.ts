import type { ActorRouter } from '../cluster/actor-router.js';
import { NO_SCOPE, finishDecided, type RequestScope } from '../libraries/actors/request-deadline.js';
import type { Clock } from '../libraries/clock/clock.js';
import { AppError, failure, success, type Result } from '../libraries/errors/app-error.js';
import type { Directory } from '../libraries/persistence/directory-port.js';
import { toDecimalNumber } from '../pricing/money.js';
import { adjustmentOutboxId, applyWalletAdjustment } from '../wallets/wallet-adjustments.js';
import { messageStatusView, type ScheduleView } from './message-view.js';

export type ScheduleAction = 'cancel' | 'pause' | 'resume';

/** `data` of cancel, pause and resume. `refunded_amount` on cancel and resume. */
export interface ScheduleActionData {
  readonly message_id: string;
  readonly schedule: ScheduleView | null;
  readonly refunded_amount?: number;
}

export type ScheduleActionOutcome = { readonly found: false } | { readonly found: true; readonly result: Result<ScheduleActionData> };

const MESSAGE_ID = /^[A-Za-z0-9_-]{1,64}$/;

/**
 * `DELETE /cancel/{id}`, `POST /pause/{id}`, `POST /resume/{id}`. Unknown and foreign ids take the status path
 * (404 `{detail}`); an immediate send, or pause/resume of a finished schedule, is 409/1120. A refund reaches the
 * wallet before the answer; the outbox entry that also records it is then marked done.
 */
export interface ManageScheduleDependencies {
  readonly router: ActorRouter;
  readonly directory: Directory;
  readonly clock: Clock;
  /** How long a decided action keeps trying to reach the wallet before leaving its adjustment to the outbox. */
  readonly decidedWaitMs: number;
  readonly followUpDone: (outboxId: string) => void;
}

export function createManageScheduleUseCase(deps: ManageScheduleDependencies) {
  return async function manageSchedule(
    merchantId: string,
    messageId: string,
    action: ScheduleAction,
    scope: RequestScope = NO_SCOPE,
  ): Promise<ScheduleActionOutcome> {
    const owner = MESSAGE_ID.test(messageId) ? await deps.directory.messageOwner(messageId) : null;
    if (owner !== merchantId) return { found: false };
    const reply = await deps.router.message(merchantId, messageId).ask({ type: action, merchantId }, { scope });
    if (!reply.ok) {
      if (reply.code === 'NOT_FOUND') return { found: false };
      return { found: true, result: failure(new AppError('INVALID_STATE', { message: invalidStateMessage(action) })) };
    }
    const adjustment = reply.adjustment;
    // decided: the refund is journaled with the action; the answer waits for the wallet, past the deadline if need
    // be, or leaves it to the outbox entry, never answering 503 for an applied action
    if (
      adjustment &&
      (await finishDecided(deps.clock, deps.decidedWaitMs, scope, (decided) => applyWalletAdjustment(deps.router, adjustment, decided)))
    ) {
      deps.followUpDone(adjustmentOutboxId(adjustment));
    }
    const view = messageStatusView(reply.state);
    const data: ScheduleActionData = {
      message_id: messageId,
      schedule: view.schedule,
      ...(action === 'pause' ? {} : { refunded_amount: toDecimalNumber(reply.refunded) }),
    };
    return { found: true, result: success(data) };
  };
}

function invalidStateMessage(action: ScheduleAction): string {
  return action === 'cancel'
    ? 'Only scheduled and recurring sends can be cancelled.'
    : `Only an active or paused scheduled or recurring send can be ${action === 'pause' ? 'paused' : 'resumed'}.`;
}
