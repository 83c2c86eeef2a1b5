import type { IncomingMessage, ServerResponse } from 'node:http';
import type { ErrorRequestHandler, NextFunction, Request, RequestHandler, Response } from 'express';
import { AppError } from '../../../libraries/errors/app-error.js';
import { sendError, serviceErrorBody } from '../envelopes.js';
import { toAppError } from '../merchant-operations.js';
import { allowedMethods } from '../routes.js';
import { bodyParserError } from './body-reading.js';
import type { HttpAppDependencies } from './dependencies.js';
import { locals, loggedPath, requestIdOf } from './request-context.js';

// What no route answers: unknown paths and methods, OPTIONS, errors, and request targets Express cannot route.

const READ_METHODS = new Set(['GET', 'HEAD']);

/** Unknown path: 404/1404; known path, other method: 405/1405 with Allow. */
export const unmatched: RequestHandler = (req, res) => {
  const allowed = allowedMethods(req.baseUrl + req.path);
  if (allowed.length > 0) {
    res.setHeader('Allow', allowed.join(', '));
    sendError(res, new AppError('METHOD_NOT_ALLOWED'), locals(res).requestId);
  } else {
    sendError(res, new AppError('ROUTE_NOT_FOUND'), locals(res).requestId);
  }
};

/**
 * Nothing is served to OPTIONS (no CORS): answered here, before any router can answer it by itself (Express
 * routers reply 200 text/plain "GET, HEAD" to OPTIONS on a path they know, with no envelope).
 */
export const refuseOptions: RequestHandler = (req, res, next) => {
  if (req.method === 'OPTIONS') unmatched(req, res, next);
  else next();
};

/** Any error a step passed on becomes the contract's envelope (after the key's verification when it is pending). */
export function errorEnvelope(bodyLimitBytes: number, refuse: (res: Response, error: AppError) => void): ErrorRequestHandler {
  return (error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const { logger } = locals(res);
    const appError = bodyParserError(error, bodyLimitBytes) ?? toAppError(error, READ_METHODS.has(req.method));
    // a 503 is logged by its request line (and an outage by the node, once): an error line for each would flood
    if (appError.httpStatus >= 500 && appError.errorName !== 'SERVICE_UNAVAILABLE') logger.error({ err: error }, 'request failed');
    refuse(res, appError);
  };
}

/**
 * A request target Express reads no path from (`//a@#b`: its URL parser takes `a@` for an authority) skips every
 * middleware of the app and would get Express's own HTML 404: it gets the contract's 404 with a request id instead.
 */
export function unroutedAnswer(
  deps: Pick<HttpAppDependencies, 'logger' | 'onRequestFinished'>,
): (req: IncomingMessage, res: ServerResponse, error?: unknown) => void {
  return (req, res, error) => {
    const started = process.hrtime.bigint();
    const requestId = requestIdOf(req);
    const logger = deps.logger.child({ request_id: requestId });
    const appError = error === undefined ? new AppError('ROUTE_NOT_FOUND') : toAppError(error, READ_METHODS.has(req.method ?? 'GET'));
    if (appError.httpStatus >= 500) logger.error({ err: error }, 'request failed');
    if (res.headersSent) {
      // an answer already under way cannot become an envelope: the connection closes as Express would close it
      req.socket.destroy();
      return;
    }
    res.statusCode = appError.httpStatus;
    res.setHeader('Content-Type', 'application/json; charset=utf-8');
    res.setHeader('X-Request-Id', requestId);
    res.end(JSON.stringify(serviceErrorBody(appError, requestId)));
    const seconds = Number(process.hrtime.bigint() - started) / 1e9;
    const method = req.method ?? 'GET';
    logger.info(
      {
        method,
        path: loggedPath(req.url),
        route: 'unmatched',
        status: res.statusCode,
        error_code: appError.code,
        duration_ms: Math.round(seconds * 1000),
      },
      'request',
    );
    deps.onRequestFinished?.({ route: 'unmatched', method, status: res.statusCode, seconds, remoteHops: 0 });
  };
}
