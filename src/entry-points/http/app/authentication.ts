import type { RequestHandler, Response } from 'express';
import type { RateBucket } from '../../../api-keys/rate-limiter.js';
import type { Authentication } from '../../../api-keys/api-key-use-cases.js';
import type { AppError } from '../../../libraries/errors/app-error.js';
import { DETAILS, sendDetail, sendError, writeAnswer } from '../envelopes.js';
import { authenticationAnswer, toAppError } from '../merchant-operations.js';
import type { HttpAppDependencies } from './dependencies.js';
import { locals, underDeadline } from './request-context.js';

/** The key checks of the merchant API: authentication comes first, before any answer about the request itself. */
export interface MerchantAuthentication {
  /** The middleware that checks the `app-key` header against `bucket`'s rate limit. */
  readonly authenticate: (bucket: RateBucket) => RequestHandler;
  /** Writes the refusal of a key that did not pass; true when it passed (the request goes on as this merchant's). */
  readonly admit: (res: Response, auth: Authentication, clientAddress: string | undefined) => boolean;
  /** An input error's answer, after the key's verification when it is pending. */
  readonly refuse: (res: Response, error: AppError) => void;
}

export function createMerchantAuthentication(
  deps: Pick<HttpAppDependencies, 'useCases' | 'forwarding' | 'deadline'>,
): MerchantAuthentication {
  /**
   * A key identified here for a shard another node owns is checked by its actor there. Before answering anything
   * else (an input error), that check is made on its own, so a bad key still beats a bad body. False when it
   * answered the key's refusal.
   */
  async function verifyPending(res: Response): Promise<boolean> {
    const { pending } = locals(res);
    if (!pending) return true;
    locals(res).pending = undefined;
    try {
      const auth = await underDeadline(deps.deadline, res, (scope) => deps.useCases.apiKeys.verify(pending.key, pending.bucket, scope));
      return admit(res, auth, pending.clientAddress);
    } catch (error) {
      answerVerificationFailure(res, error);
      return false;
    }
  }

  function refuse(res: Response, error: AppError): void {
    if (res.headersSent || locals(res).refusing) return;
    locals(res).refusing = true;
    verifyPending(res).then(
      (admitted) => {
        if (admitted && !res.headersSent) sendError(res, error, locals(res).requestId);
      },
      (failure: unknown) => {
        locals(res).logger.error({ err: failure }, 'request failed');
      },
    );
  }

  function admit(res: Response, auth: Authentication, clientAddress: string | undefined): boolean {
    if (auth.outcome === 'authenticated') {
      locals(res).auth = { merchantId: auth.merchantId, keyId: auth.keyId };
      return true;
    }
    // the key's actor says unauthorized (rotated, deleted): it counts against the address like an unknown key
    if (auth.outcome === 'unauthorized') deps.useCases.apiKeys.unauthorized(clientAddress);
    const refusal = authenticationAnswer(auth, locals(res).requestId);
    if (refusal) writeAnswer(res, refusal);
    return false;
  }

  /**
   * A step refused at its deadline or a dependency out of reach is the service's 503/1402 like on any other step (a
   * key check charges nothing); only the unexpected is the authentication table's 500 {detail}.
   */
  function answerVerificationFailure(res: Response, error: unknown): void {
    const appError = toAppError(error, true);
    if (appError.errorName === 'SERVICE_UNAVAILABLE') {
      sendError(res, appError, locals(res).requestId);
      return;
    }
    locals(res).logger.error({ err: error }, 'key verification failed');
    sendDetail(res, 500, DETAILS.verificationFailed);
  }

  function authenticate(bucket: RateBucket): RequestHandler {
    return (req, res, next) => {
      const header = req.get('app-key');
      if (header === undefined || header.trim() === '') {
        sendDetail(res, 401, DETAILS.missingKey);
        return;
      }
      // the TCP peer (express's req.ip: no proxy is trusted): 401s are limited per address
      const clientAddress = req.ip ?? req.socket.remoteAddress;
      const { apiKeys } = deps.useCases;
      // a verifier that throws synchronously must still end in the table's 500 {detail}, not the generic 1401
      Promise.resolve()
        .then(() => underDeadline(deps.deadline, res, () => apiKeys.identify(header, clientAddress)))
        .then(async (identified) => {
          if (identified.outcome !== 'identified') {
            admit(res, identified, undefined);
            return;
          }
          if (deps.forwarding && !deps.forwarding.ownsMerchant(identified.merchantId)) {
            locals(res).pending = { key: identified, bucket, clientAddress };
            next();
            return;
          }
          const auth = await underDeadline(deps.deadline, res, (scope) => apiKeys.verify(identified, bucket, scope));
          if (admit(res, auth, clientAddress)) next();
        })
        .catch((error: unknown) => {
          answerVerificationFailure(res, error);
        });
    };
  }

  return { authenticate, admit, refuse };
}
