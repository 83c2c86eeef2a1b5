import type { ApiKeyUseCases } from '../api-keys/api-key-use-cases.js';
import type { MerchantUseCases } from '../merchants/merchant-use-cases.js';
import type { createGetStatusUseCase } from '../messaging/get-status-use-case.js';
import type { createManageScheduleUseCase } from '../messaging/manage-schedule-use-case.js';
import type { SendMessageUseCase } from '../messaging/send-message-use-case.js';
import type { createCalculateUseCase } from '../pricing/calculate-use-case.js';
import type { WalletUseCases } from '../wallets/wallet-use-cases.js';

/**
 * The business operations the entry points call (HTTP routes, the CLI's commands, forwarded requests): one per
 * area, each built by the composition root and handed in.
 */
export interface UseCases {
  readonly sendMessage: SendMessageUseCase['sendMessage'];
  readonly getStatus: ReturnType<typeof createGetStatusUseCase>;
  readonly manageSchedule: ReturnType<typeof createManageScheduleUseCase>;
  readonly calculate: ReturnType<typeof createCalculateUseCase>;
  readonly wallets: WalletUseCases;
  readonly apiKeys: ApiKeyUseCases;
  readonly merchants: MerchantUseCases;
}
