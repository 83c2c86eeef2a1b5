import express, { type Request, type RequestHandler } from 'express';
import { AppError } from '../../../libraries/errors/app-error.js';
import type { ScheduleAction } from '../../../messaging/manage-schedule-use-case.js';
import { writeAnswer } from '../envelopes.js';
import {
  createdMessageOf,
  forwardedReplyOf,
  performOperation,
  type ForwardedRequest,
  type MerchantOperation,
} from '../merchant-operations.js';
import { ROUTES, type RouteName } from '../routes.js';
import type { MerchantAuthentication } from './authentication.js';
import { bodyReaders } from './body-reading.js';
import type { HttpAppDependencies } from './dependencies.js';
import { healthHandler } from './health.js';
import { locals, underDeadline } from './request-context.js';

export const IDEMPOTENCY_KEY = /^[\x21-\x7E]{1,255}$/;

/**
 * The routes of ROUTES, mounted under the API root. Order for every authenticated endpoint: authenticate → rate
 * limit → read and validate the body → act. A route is a few lines: read the request, call one use case, map the
 * result.
 */
export function createMerchantRouter(deps: HttpAppDependencies, authentication: MerchantAuthentication): express.Router {
  const { admit, refuse } = authentication;
  const readBody = bodyReaders(deps.bodyLimitBytes, refuse);

  /**
   * An authenticated route: reads its operation from the request (or an input error), then serves it here or, for
   * a merchant whose shard another node owns, forwards it there whole with the key to verify.
   */
  const route =
    (name: RouteName, operationOf: (req: Request) => MerchantOperation | AppError): RequestHandler =>
    (req, res, next) => {
      locals(res).route = name;
      const operation = operationOf(req);
      if (operation instanceof AppError) {
        refuse(res, operation);
        return;
      }
      const { pending, requestId } = locals(res);
      if (pending && deps.forwarding) {
        const forwarding = deps.forwarding;
        locals(res).pending = undefined;
        const request: ForwardedRequest = { key: pending.key, bucket: pending.bucket, requestId, operation };
        underDeadline(deps.deadline, res, (scope) => forwarding.forward(pending.key.merchantId, request, scope))
          .then((value) => {
            const reply = forwardedReplyOf(value);
            if (!admit(res, reply.auth, pending.clientAddress) || !('answer' in reply)) return;
            const created = operation.route === 'send' ? createdMessageOf(reply.answer) : null;
            if (created !== null) forwarding.messageCreated?.(created, pending.key.merchantId);
            writeAnswer(res, reply.answer);
          })
          .catch(next);
        return;
      }
      const auth = locals(res).auth ?? { merchantId: '', keyId: '' };
      underDeadline(deps.deadline, res, (scope) => performOperation(deps.useCases, auth, operation, requestId, scope))
        .then((answer) => {
          writeAnswer(res, answer);
        })
        .catch(next);
    };

  const handlers: Record<RouteName, RequestHandler> = {
    health: healthHandler(deps),
    send: route('send', (req) => {
      const idempotencyKey = req.get('idempotency-key') ?? null;
      if (idempotencyKey !== null && !IDEMPOTENCY_KEY.test(idempotencyKey)) {
        return AppError.invalid([{ field: 'Idempotency-Key', message: 'must be 1–255 visible ASCII characters', type: 'header.invalid' }]);
      }
      return { route: 'send', body: req.body as unknown, idempotencyKey };
    }),
    status: route('status', (req) => ({ route: 'status', messageId: String(req.params.messageId) })),
    balance: route('balance', () => ({ route: 'balance' })),
    calculate: route('calculate', (req) => ({ route: 'calculate', body: req.body as unknown })),
    cancel: scheduleRoute('cancel'),
    pause: scheduleRoute('pause'),
    resume: scheduleRoute('resume'),
  };

  function scheduleRoute(action: ScheduleAction): RequestHandler {
    return route(action, (req) => ({ route: action, messageId: String(req.params.messageId) }));
  }

  const api = express.Router({ strict: false, caseSensitive: true });
  for (const definition of ROUTES) {
    // named before authentication, so a 401/403/429 is logged and counted under its route
    const chain: RequestHandler[] = [
      (_req, res, next) => {
        locals(res).route = definition.name;
        next();
      },
    ];
    if (definition.bucket !== null) chain.push(authentication.authenticate(definition.bucket));
    if (definition.body) chain.push(...readBody);
    chain.push(handlers[definition.name]);
    api[definition.method](definition.path, ...chain);
  }
  return api;
}
