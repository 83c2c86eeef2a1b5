import type { Authentication, IdentifiedKey } from '../../api-keys/api-key-use-cases.js';
import { RATE_BUCKETS, type RateBucket } from '../../api-keys/rate-limiter.js';
import { isNotApplied } from '../../cluster/cluster-router.js';
import type { RequestScope } from '../../libraries/actors/request-deadline.js';
import type { UseCases } from '../use-cases.js';
import { AppError, isAppError, type Result } from '../../libraries/errors/app-error.js';
import { dependencyOf } from '../../libraries/errors/dependency-failure.js';
import type { Logger } from '../../libraries/logger/logger.js';
import type { ScheduleAction } from '../../messaging/manage-schedule-use-case.js';
import { DETAILS, dataAnswer, detailAnswer, errorAnswer, type Answer } from './envelopes.js';
import { ActorFailureError, DeadlineExpiredError } from '../../libraries/errors/internal-errors.js';

/**
 * What an authenticated merchant request asks for, once read from HTTP: the same value whether it is served here or
 * forwarded, in one hop, to the node owning the merchant's shard (every ask it makes is then local there).
 */
export type MerchantOperation =
  | { readonly route: 'send'; readonly body: unknown; readonly idempotencyKey: string | null }
  | { readonly route: 'status'; readonly messageId: string }
  | { readonly route: 'balance' }
  | { readonly route: 'calculate'; readonly body: unknown }
  | { readonly route: ScheduleAction; readonly messageId: string };

const SCHEDULE_ACTIONS: readonly string[] = ['cancel', 'pause', 'resume'] satisfies ScheduleAction[];

/** Reads change nothing: an unanswered read is unavailable (503), never an unknown outcome. */
export const isReadOnly = (operation: MerchantOperation): boolean => operation.route === 'status' || operation.route === 'balance';

/**
 * 503/1402 only when nothing was applied: a step refused at its deadline, no owner, a failed or fenced write. An
 * ask taken but never answered (`timeout`) may have been applied: 500/1401, unless the request only reads.
 */
export function toAppError(error: unknown, readOnly = false): AppError {
  if (isAppError(error)) return error;
  const unavailable = () => new AppError('SERVICE_UNAVAILABLE', { retryAfterSeconds: 1, cause: error });
  if (error instanceof DeadlineExpiredError) return unavailable();
  // the database or NATS out of reach: the step failed before anything was written, retry later
  if (dependencyOf(error) !== null) return unavailable();
  if (error instanceof ActorFailureError && error.reason !== 'crashed' && (error.reason !== 'timeout' || readOnly)) return unavailable();
  return new AppError('INTERNAL_ERROR', { cause: error });
}

function resultAnswer<T>(status: number, result: Result<T>, requestId: string): Answer {
  return result.ok ? dataAnswer(status, result.value) : errorAnswer(result.error, requestId);
}

/**
 * Runs one operation with this node's use cases, in the request's `scope`. Throws what it cannot answer (the caller
 * maps it with toAppError).
 */
export async function performOperation(
  useCases: UseCases,
  auth: { merchantId: string; keyId: string },
  operation: MerchantOperation,
  requestId: string,
  scope: RequestScope,
): Promise<Answer> {
  switch (operation.route) {
    case 'send': {
      const result = await useCases.sendMessage(
        {
          merchantId: auth.merchantId,
          keyId: auth.keyId,
          body: operation.body,
          idempotencyKey: operation.idempotencyKey,
        },
        scope,
      );
      if (!result.ok) return errorAnswer(result.error, requestId);
      return dataAnswer(201, result.value.receipt, result.value.replayed ? { 'Idempotent-Replayed': 'true' } : undefined);
    }
    case 'status': {
      const outcome = await useCases.getStatus(auth.merchantId, operation.messageId, scope);
      return outcome.found ? dataAnswer(200, outcome.view) : detailAnswer(404, DETAILS.messageNotFound);
    }
    case 'balance':
      return resultAnswer(200, await useCases.wallets.getBalance(auth.merchantId, scope), requestId);
    case 'calculate':
      return resultAnswer(200, await useCases.calculate(auth.merchantId, operation.body), requestId);
    case 'cancel':
    case 'pause':
    case 'resume': {
      const outcome = await useCases.manageSchedule(auth.merchantId, operation.messageId, operation.route, scope);
      return outcome.found ? resultAnswer(200, outcome.result, requestId) : detailAnswer(404, DETAILS.messageNotFound);
    }
  }
}

/** The answer to a request whose key did not pass (null: it did). */
export function authenticationAnswer(auth: Authentication, requestId: string): Answer | null {
  switch (auth.outcome) {
    case 'authenticated':
      return null;
    case 'unauthorized':
      return detailAnswer(401, DETAILS.invalidKey);
    case 'forbidden':
      return detailAnswer(403, DETAILS.forbidden(auth.status));
    case 'rate_limited':
      return errorAnswer(new AppError('RATE_LIMIT_EXCEEDED', { retryAfterSeconds: auth.retryAfterSeconds }), requestId);
    case 'suspended':
      return errorAnswer(new AppError('SUSPICIOUS_ACTIVITY', { retryAfterSeconds: auth.retryAfterSeconds }), requestId);
  }
}

/** The name of the cluster operation that carries merchants' requests to their shard's owner. */
export const MERCHANT_REQUEST = 'merchant-request';

/** A request forwarded to the owner of the merchant's shard: the key to verify there, then the operation. */
export interface ForwardedRequest {
  readonly key: IdentifiedKey;
  readonly bucket: RateBucket;
  readonly requestId: string;
  readonly operation: MerchantOperation;
}

/** The owner's reply: the key's verdict, and the operation's answer when the key passed. */
export type ForwardedReply =
  | { readonly auth: Exclude<Authentication, { outcome: 'authenticated' }> }
  | { readonly auth: Extract<Authentication, { outcome: 'authenticated' }>; readonly answer: Answer };

const isRecord = (value: unknown): value is Record<string, unknown> => typeof value === 'object' && value !== null && !Array.isArray(value);
const isString = (value: unknown): value is string => typeof value === 'string';

function operationOf(value: unknown): MerchantOperation | null {
  if (!isRecord(value) || !isString(value.route)) return null;
  switch (value.route) {
    case 'send':
      return value.idempotencyKey === null || isString(value.idempotencyKey)
        ? { route: 'send', body: value.body, idempotencyKey: value.idempotencyKey }
        : null;
    case 'calculate':
      return { route: 'calculate', body: value.body };
    case 'balance':
      return { route: 'balance' };
    case 'status':
      return isString(value.messageId) ? { route: 'status', messageId: value.messageId } : null;
    default:
      return SCHEDULE_ACTIONS.includes(value.route) && isString(value.messageId)
        ? { route: value.route as ScheduleAction, messageId: value.messageId }
        : null;
  }
}

/** A forwarded request off the wire, checked field by field (null: malformed). */
export function forwardedRequestOf(value: unknown): ForwardedRequest | null {
  if (!isRecord(value) || !isRecord(value.key) || !isString(value.requestId)) return null;
  const { merchantId, keyId, hash } = value.key;
  if (!isString(merchantId) || !isString(keyId) || !isString(hash)) return null;
  const bucket = RATE_BUCKETS.find((name) => name === value.bucket);
  const operation = operationOf(value.operation);
  if (bucket === undefined || operation === null) return null;
  return { key: { merchantId, keyId, hash }, bucket, requestId: value.requestId, operation };
}

const AUTH_OUTCOMES: readonly string[] = [
  'authenticated',
  'unauthorized',
  'forbidden',
  'rate_limited',
  'suspended',
] satisfies Authentication['outcome'][];

/** The message id of a send's 201 answer (a new message, or the replay of one), null for any other answer. */
export function createdMessageOf(answer: Answer): string | null {
  if (answer.status !== 201 || !isRecord(answer.body) || !isRecord(answer.body.data)) return null;
  const messageId = answer.body.data.message_id;
  return isString(messageId) ? messageId : null;
}

/** The owner's reply off the wire, checked (a malformed one is an error: the outcome of the request is unknown). */
export function forwardedReplyOf(value: unknown): ForwardedReply {
  const malformed = (): never => {
    throw new Error('the node owning the shard sent a malformed reply');
  };
  if (!isRecord(value) || !isRecord(value.auth) || !isString(value.auth.outcome) || !AUTH_OUTCOMES.includes(value.auth.outcome))
    return malformed();
  if (value.auth.outcome !== 'authenticated') return { auth: value.auth as Exclude<Authentication, { outcome: 'authenticated' }> };
  const answer = value.answer;
  if (!isRecord(answer) || typeof answer.status !== 'number' || (answer.headers !== undefined && !isRecord(answer.headers)))
    return malformed();
  const headers =
    answer.headers === undefined
      ? undefined
      : Object.fromEntries(Object.entries(answer.headers).filter((entry): entry is [string, string] => isString(entry[1])));
  return {
    auth: value.auth as Extract<Authentication, { outcome: 'authenticated' }>,
    answer: { status: answer.status, body: answer.body, ...(headers ? { headers } : {}) },
  };
}

/**
 * The owner's side: verifies the key with its actor (its rate buckets live there), then runs the operation. What the
 * operation throws becomes its answer here, where it was decided; an error of the key check is thrown back (the
 * receiving node answers it as it answers its own).
 */
export function createOperationHandler(useCases: UseCases, logger: Logger) {
  return async (merchantId: string, payload: unknown, scope: RequestScope): Promise<ForwardedReply> => {
    const request = forwardedRequestOf(payload);
    if (request === null || request.key.merchantId !== merchantId) throw new Error('malformed forwarded request');
    const auth = await useCases.apiKeys.verify(request.key, request.bucket, scope);
    if (auth.outcome !== 'authenticated') return { auth };
    try {
      return { auth, answer: await performOperation(useCases, auth, request.operation, request.requestId, scope) };
    } catch (error) {
      // the shard left this node mid-operation before anything was decided: the forwarder goes to its new owner
      if (isNotApplied(error)) throw error;
      const appError = toAppError(error, isReadOnly(request.operation));
      if (appError.httpStatus >= 500 && appError.errorName !== 'SERVICE_UNAVAILABLE') {
        logger.error({ err: error, request_id: request.requestId, merchant_id: merchantId }, 'forwarded request failed');
      }
      return { auth, answer: errorAnswer(appError, request.requestId) };
    }
  };
}
