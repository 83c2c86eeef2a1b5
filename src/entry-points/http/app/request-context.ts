import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';
import type { RequestHandler, Response } from 'express';
import type { RateBucket } from '../../../api-keys/rate-limiter.js';
import type { IdentifiedKey } from '../../../api-keys/api-key-use-cases.js';
import type { HopCount, RequestScope } from '../../../libraries/actors/request-deadline.js';
import { scrubSecrets, type Logger } from '../../../libraries/logger/logger.js';
import type { RouteName } from '../routes.js';
import type { HttpAppDependencies } from './dependencies.js';
import { DeadlineExpiredError } from '../../../libraries/errors/internal-errors.js';

/** What the app keeps about a request while it is served (Express's `res.locals`). */
export interface Locals {
  requestId: string;
  logger: Logger;
  route: RouteName | 'unmatched';
  auth?: { merchantId: string; keyId: string };
  /**
   * A key identified here whose actor lives on another node: it is verified there with the operation, or, when the
   * request is refused before it (a bad body), on its own first, so authentication still comes first.
   */
  pending?: { key: IdentifiedKey; bucket: RateBucket; clientAddress: string | undefined };
  /** Set once an input error's answer is under way (it may wait for the key's verification). */
  refusing?: boolean;
  /** ms since the epoch; null without a deadline policy. */
  deadline: number | null;
  /** The envelope's `error_code`, once a service error was sent (set by sendError). */
  errorCode?: string;
  hops: HopCount;
}

/** Longest path a request line shows; a longer one is cut (a request target may be kilobytes long). */
const MAX_LOGGED_PATH = 256;

/** The request target as its line shows it: the path only (never the query string), cut, with key shapes scrubbed. */
export function loggedPath(target: string | undefined): string {
  const url = target ?? '';
  const query = url.indexOf('?');
  const path = query === -1 ? url : url.slice(0, query);
  return scrubSecrets(path.length > MAX_LOGGED_PATH ? `${path.slice(0, MAX_LOGGED_PATH)}…` : path);
}

export const locals = (res: Response): Locals => res.locals as Locals;
/** A well-formed incoming X-Request-Id is kept; any other is replaced (the OpenAPI document quotes both patterns). */
export const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;

/** The caller's `X-Request-Id` when it is a usable id, else a fresh one. */
export function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/**
 * The first middleware: gives the request its id, logger and deadline, and, once it is answered, writes its
 * request line and reports it to `onRequestFinished`.
 */
export function requestLine(
  deps: Pick<HttpAppDependencies, 'deadline' | 'logger' | 'onRequestFinished' | 'bodyLimitBytes'>,
): RequestHandler {
  return (req, res, next) => {
    const requestId = requestIdOf(req);
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    const deadline = deps.deadline ? deps.deadline.clock.now() + deps.deadline.budgetMs : null;
    Object.assign(res.locals, {
      requestId,
      logger: deps.logger.child({ request_id: requestId }),
      route: 'unmatched',
      deadline,
      hops: { hops: 0 },
    } satisfies Locals);
    res.on('finish', () => {
      const seconds = Number(process.hrtime.bigint() - started) / 1e9;
      const { route, auth, logger, errorCode } = locals(res);
      logger.info(
        {
          method: req.method,
          path: loggedPath(req.originalUrl),
          route,
          status: res.statusCode,
          ...(errorCode === undefined ? {} : { error_code: errorCode }),
          duration_ms: Math.round(seconds * 1000),
          ...(auth ? { merchant_id: auth.merchantId } : {}),
        },
        'request',
      );
      deps.onRequestFinished?.({ route, method: req.method, status: res.statusCode, seconds, remoteHops: locals(res).hops.hops });
      // answered before its body was read (401, 404, 429…): Node would read the rest to keep the connection; a
      // body of unknown length (chunked, maybe endless) or over the limit is not read, the connection closes instead
      if (!req.complete && !(Number(req.headers['content-length'] ?? Infinity) <= deps.bodyLimitBytes)) req.socket.destroySoon();
    });
    next();
  };
}

/**
 * Runs a request's steps in its scope: under its deadline, counting their remote hops. A step that arrives (or
 * resumes, in a process that was frozen) with the deadline already passed does not start.
 */
export function underDeadline<T>(
  policy: HttpAppDependencies['deadline'],
  res: Response,
  work: (scope: RequestScope) => Promise<T>,
): Promise<T> {
  const { deadline, hops } = locals(res);
  if (policy && deadline !== null && policy.clock.now() >= deadline) return Promise.reject(new DeadlineExpiredError('the request'));
  return work({ deadline: policy ? deadline : null, hops });
}

/**
 * A path with malformed percent-encoding (`/status/%E0%A4%A`) makes the router's parameter decoding throw: a
 * 500 before authentication. Such a path is taken literally instead, so it authenticates first and then names
 * an unknown id (404 {detail}), like any other malformed id.
 */
export const takeMalformedPathLiterally: RequestHandler = (req, _res, next) => {
  if (!req.url.includes('%')) {
    next();
    return;
  }
  try {
    decodeURIComponent(req.path);
  } catch {
    const query = req.url.indexOf('?');
    const path = query === -1 ? req.url : req.url.slice(0, query);
    req.url = path.replace(/%/g, '%25') + (query === -1 ? '' : req.url.slice(query));
  }
  next();
};
