import { createHash } from 'node:crypto';
import type { ActorRouter } from '../cluster/actor-router.js';
import type { GatewayEnvironment } from '../libraries/config/config.js';
import { AppError, failure, success, type Result } from '../libraries/errors/app-error.js';
import type { Clock, IdGenerator } from '../libraries/clock/clock.js';
import type { MerchantCatalog } from '../merchants/merchant-catalog.js';
import { costOfSend } from '../pricing/pricing-table.js';
import type { EffectOf } from '../libraries/actors/behaviour.js';
import { NO_SCOPE, beforeDeadline, finishDecided, type RequestScope } from '../libraries/actors/request-deadline.js';
import { MESSAGE_KIND, sendReceipt, type MessageCommand, type MessageSpec, type SendReceipt } from './message/message-types.js';
import { validateSendRequest } from './send-request.js';
import { checkWebhookUrl, type HostLookup, type WebhookUrlPolicy } from '../webhooks/url-guard.js';

/** Outbox topic of a send charged but not yet created: the message's spec, created from it after a crash. */
export const MESSAGE_CREATE_TOPIC = 'message.create';

export type MessageCreateEffect = EffectOf<typeof MESSAGE_CREATE_TOPIC, MessageSpec>;
export const SANDBOX_CARRIER = 'simulator';

export interface SendMessageInput {
  readonly merchantId: string;
  readonly keyId: string;
  readonly body: unknown;
  readonly idempotencyKey: string | null;
}

export interface SendMessageOutcome {
  readonly receipt: SendReceipt;
  /** True when an Idempotency-Key replay returned the original answer. */
  readonly replayed: boolean;
}

export interface SendMessageDependencies {
  readonly router: ActorRouter;
  readonly catalog: MerchantCatalog;
  readonly clock: Clock;
  readonly newMessageId: IdGenerator;
  readonly environment: GatewayEnvironment;
  readonly defaultCarrier: string;
  readonly scheduling: { readonly horizonDays: number; readonly maxScheduledSms: number };
  /** Where a callback_url may point: the policy a key's webhook is held to as well (`webhookUrlPolicyOf`). */
  readonly webhookUrlPolicy: WebhookUrlPolicy;
  /** Resolves a callback_url's host under the public-only policy (DNS by default). */
  readonly hostLookup?: HostLookup;
  /**
   * How long a request whose charge was decided keeps trying to create its message before leaving it to the
   * outbox (and answering 201 all the same: the creation is journaled with the charge).
   */
  readonly decidedWaitMs: number;
  /**
   * The message is created in the charge's own write, as the message's first record (the journal writes
   * companions): one write per send, nothing to finish after it. Otherwise the charge records a `message.create`
   * follow-up and the message is created by a second write.
   */
  readonly creationWithCharge: boolean;
  /**
   * The message exists: its owner (recorded with its creation) may be remembered in memory, so its receipts and
   * status reads find it without a lookup.
   */
  readonly ownerKnown?: (messageId: string, merchantId: string) => void;
  /** Marks the charge's follow-up done once the message exists (batched by the caller). */
  readonly followUpDone: (outboxId: string) => void;
  /** Test-only fault injection between the two writes of a send. */
  readonly faults?: { readonly afterCharge?: (messageId: string) => Promise<void> };
}

/** Canonical body hash: the same JSON in another key order or spacing is the same request. */
export function bodyHash(body: unknown): string {
  return createHash('sha256').update(canonicalJson(body)).digest('hex');
}

function canonicalJson(value: unknown): string {
  if (Array.isArray(value)) return `[${value.map(canonicalJson).join(',')}]`;
  if (value !== null && typeof value === 'object') {
    const entries = Object.entries(value as Record<string, unknown>).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0));
    return `{${entries.map(([k, v]) => `${JSON.stringify(k)}:${canonicalJson(v)}`).join(',')}}`;
  }
  // no body at all hashes like JSON null (JSON.stringify would give undefined)
  return value === undefined ? 'null' : JSON.stringify(value);
}

export function createSendMessageUseCase(deps: SendMessageDependencies) {
  /**
   * Second half of a send, also run by the outbox relay after a crash between the charge and the creation: the
   * message, whose creation record also records its owner (so status finds it). Idempotent.
   */
  async function completeCreation(spec: MessageSpec, scope: RequestScope = NO_SCOPE): Promise<void> {
    await deps.router.message(spec.merchantId, spec.messageId).ask({ type: 'create', spec }, { scope });
    deps.ownerKnown?.(spec.messageId, spec.merchantId);
    deps.followUpDone(followUpId(spec.messageId));
  }

  /** `scope`: the request's (its deadline bounds every step up to the charge). */
  async function sendMessage(input: SendMessageInput, scope: RequestScope = NO_SCOPE): Promise<Result<SendMessageOutcome>> {
    const merchant = await deps.catalog.merchant(input.merchantId);
    if (!merchant) return failure(new AppError('INTERNAL_ERROR', { message: 'The key belongs to no known merchant.' }));
    const wallet = deps.router.wallet(merchant.id);

    // a replay answers what the first request answered, even if its dates have passed since
    const idempotency = input.idempotencyKey === null ? null : { key: input.idempotencyKey, bodyHash: bodyHash(input.body) };
    if (idempotency) {
      const verdict = await wallet.ask({ type: 'lookup_idempotency', key: idempotency.key, bodyHash: idempotency.bodyHash }, { scope });
      if (verdict.outcome === 'replay') return success({ receipt: verdict.receipt as SendReceipt, replayed: true });
      if (verdict.outcome === 'mismatch') return failure(new AppError('IDEMPOTENCY_KEY_REUSED'));
    }

    const validation = validateSendRequest(input.body, {
      now: deps.clock.now(),
      timezone: merchant.timezone,
      defaultCountry: merchant.defaultCountry,
      horizonDays: deps.scheduling.horizonDays,
      maxScheduledSms: deps.scheduling.maxScheduledSms,
      allowHttpLocalhostCallbacks: deps.webhookUrlPolicy.allowHttpLocalhost,
    });
    if (!validation.ok) return failure(AppError.invalid(validation.issues));
    const request = validation.value;
    beforeDeadline(scope.deadline, deps.clock.now(), 'the callback address check');
    if (request.callbackUrl !== null) {
      const verdict = await checkWebhookUrl(request.callbackUrl, deps.webhookUrlPolicy, deps.hostLookup);
      if (!verdict.accepted) {
        const type = verdict.refusal === 'address' ? 'string.uri.address' : 'string.uri';
        return failure(AppError.invalid([{ field: 'callback_url', message: verdict.message, type }]));
      }
    }

    beforeDeadline(scope.deadline, deps.clock.now(), 'pricing');
    const priceList = await deps.catalog.priceList(merchant);
    const occurrences = request.sendingType === 'immediate' ? 1 : request.occurrences.length;
    const cost = costOfSend(
      priceList,
      request.recipients.map((r) => r.phone),
      request.analysis.segments,
      occurrences,
    );
    const messageId = deps.newMessageId();
    const spec: MessageSpec = {
      messageId,
      merchantId: merchant.id,
      keyId: input.keyId,
      text: request.message,
      senderId: request.senderId,
      encoding: request.analysis.encoding,
      segments: request.analysis.segments,
      callbackUrl: request.callbackUrl,
      currency: merchant.currency,
      sendingType: request.sendingType,
      recipients: request.recipients.map((r, i) => ({
        index: r.index,
        phone: r.phone,
        price: cost.recipients[i]?.price ?? priceList.unitPrice,
        // the sandbox routes everything to the simulator
        carrier: deps.environment === 'sandbox' ? SANDBOX_CARRIER : (cost.recipients[i]?.carrier ?? deps.defaultCarrier),
      })),
      occurrences: request.occurrences,
      recurrence: request.recurrence,
      totalMessages: cost.totalMessages,
      totalCost: cost.totalCost,
      costPerOccurrence: cost.costPerOccurrence,
    };
    const receipt = sendReceipt(spec);
    const creation: MessageCommand = { type: 'create', spec };
    const terms = {
      chargeId: messageId,
      amount: cost.totalCost,
      refundable: request.sendingType !== 'immediate',
      idempotency: idempotency ? { ...idempotency, receipt } : null,
    };
    // the wallet refuses the charge if it has not taken it by the request's deadline: then nothing was applied
    beforeDeadline(scope.deadline, deps.clock.now(), 'the charge');
    const charge = deps.creationWithCharge
      ? await wallet.ask(
          { type: 'charge_and_create', ...terms, creates: { kind: MESSAGE_KIND, id: messageId, command: creation } },
          { scope },
        )
      : await wallet.ask(
          {
            type: 'charge',
            ...terms,
            followUp: { id: followUpId(messageId), topic: MESSAGE_CREATE_TOPIC, payload: spec } satisfies MessageCreateEffect,
          },
          { scope },
        );
    if (!charge.ok) {
      if (charge.code === 'IDEMPOTENCY_REPLAY') return success({ receipt: charge.receipt as SendReceipt, replayed: true });
      if (charge.code === 'IDEMPOTENCY_KEY_REUSED') return failure(new AppError('IDEMPOTENCY_KEY_REUSED'));
      return failure(new AppError('INSUFFICIENT_BALANCE'));
    }
    // decided: from here the request finishes, past its deadline if need be; never a 503 for a charged send
    await deps.faults?.afterCharge?.(messageId);
    // created with the charge, or by a second write now (the outbox's follow-up if this one cannot finish)
    if (deps.creationWithCharge) deps.ownerKnown?.(spec.messageId, spec.merchantId);
    else await finishDecided(deps.clock, deps.decidedWaitMs, scope, (decided) => completeCreation(spec, decided));
    return success({ receipt, replayed: false });
  }

  return { sendMessage, completeCreation };
}

export function followUpId(messageId: string): string {
  return `create:${messageId}`;
}

export type SendMessageUseCase = ReturnType<typeof createSendMessageUseCase>;
