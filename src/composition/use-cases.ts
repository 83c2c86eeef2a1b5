import { createApiKeyUseCases } from '../api-keys/api-key-use-cases.js';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { Clock, IdGenerator } from '../libraries/clock/clock.js';
import type { Config } from '../libraries/config/config.js';
import { withMessageOwnerCache } from '../libraries/persistence/message-owner-cache.js';
import type { Metrics } from '../libraries/observability/metrics.js';
import type { Persistence } from '../libraries/persistence/persistence.js';
import type { SecretBox } from '../libraries/secrets/secret-box.js';
import { createMerchantCatalog } from '../merchants/merchant-catalog.js';
import { createMerchantUseCases } from '../merchants/merchant-use-cases.js';
import { createGetStatusUseCase } from '../messaging/get-status-use-case.js';
import { createManageScheduleUseCase } from '../messaging/manage-schedule-use-case.js';
import { createSendMessageUseCase, type SendMessageDependencies } from '../messaging/send-message-use-case.js';
import { createCalculateUseCase } from '../pricing/calculate-use-case.js';
import { createWalletUseCases } from '../wallets/wallet-use-cases.js';
import { webhookUrlPolicyOf } from '../webhooks/url-guard.js';
import type { UseCases } from '../entry-points/use-cases.js';

/** What the use cases read besides the actors: who owns a message, and the merchants with their pricing. */
export function createReadModels(options: {
  readonly config: Config;
  readonly persistence: Persistence;
  readonly clock: Clock;
  readonly metrics?: Pick<Metrics, 'messageOwnerLookups'>;
}) {
  const { config, persistence, clock, metrics } = options;
  // a message's owner never changes: status reads and receipts ask the database once per message at most
  const directory = withMessageOwnerCache(persistence.directory, config.tuning.messageOwnerCacheSize, (messageIds) => {
    metrics?.messageOwnerLookups(messageIds);
  });
  const catalog = createMerchantCatalog({
    directory,
    clock,
    ttlMs: config.tuning.merchantCatalogTtlMs,
    defaultUnitPrice: config.merchantDefaults.unitPrice,
  });
  return { directory, catalog };
}

export type ReadModels = ReturnType<typeof createReadModels>;

export interface UseCaseOptions {
  readonly config: Config;
  readonly router: ActorRouter;
  readonly readModels: ReadModels;
  readonly clock: Clock;
  readonly ids: { readonly messageId: IdGenerator; readonly keyId: IdGenerator; readonly merchantId: IdGenerator };
  readonly secrets: SecretBox;
  /** How long a decided request may take to finish (see the request budget). */
  readonly requestBudgetMs: number;
  /** A request finished its own follow-up: its outbox entry is done. */
  readonly followUpDone: (id: string) => void;
  /** The journal writes a send's message in the charge's own write (Journal.writesCompanions). */
  readonly creationWithCharge: boolean;
  readonly faults?: SendMessageDependencies['faults'];
}

/** Every use case the HTTP API and the CLI call, over the actors' router and the read models. */
export function createUseCases(options: UseCaseOptions) {
  const { config, router, clock, ids, requestBudgetMs, followUpDone } = options;
  const { directory, catalog } = options.readModels;
  const sending = createSendMessageUseCase({
    router,
    catalog,
    clock,
    newMessageId: ids.messageId,
    environment: config.environment,
    defaultCarrier: config.carriers.defaultCarrier,
    scheduling: { horizonDays: config.scheduling.openEndedHorizonDays, maxScheduledSms: config.scheduling.maxScheduledSms },
    webhookUrlPolicy: webhookUrlPolicyOf(config),
    decidedWaitMs: requestBudgetMs,
    creationWithCharge: options.creationWithCharge,
    followUpDone,
    ownerKnown: (messageId, merchantId) => {
      directory.rememberOwner(messageId, merchantId);
    },
    ...(options.faults ? { faults: options.faults } : {}),
  });
  const useCases: UseCases = {
    sendMessage: sending.sendMessage,
    getStatus: createGetStatusUseCase({ router, directory }),
    manageSchedule: createManageScheduleUseCase({ router, directory, clock, decidedWaitMs: requestBudgetMs, followUpDone }),
    calculate: createCalculateUseCase({ catalog }),
    wallets: createWalletUseCases({ router, directory, catalog }),
    apiKeys: createApiKeyUseCases({
      router,
      directory,
      clock,
      newKeyId: ids.keyId,
      environment: config.environment,
      lookupCacheMs: config.tuning.apiKeyLookupCacheMs,
      secrets: options.secrets,
      guards: config.auth,
    }),
    merchants: createMerchantUseCases({ directory, catalog, clock, newMerchantId: ids.merchantId, defaults: config.merchantDefaults }),
  };
  return { useCases, completeCreation: sending.completeCreation };
}

export type { UseCases };
