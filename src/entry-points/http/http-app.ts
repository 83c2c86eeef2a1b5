import { isUtf8 } from 'node:buffer';
import { randomUUID } from 'node:crypto';
import type { IncomingMessage, RequestListener, ServerResponse } from 'node:http';
import express, { type NextFunction, type Request, type RequestHandler, type Response } from 'express';
import helmet from 'helmet';
import type { RateBucket } from '../../api-keys/rate-limiter.js';
import type { Authentication, IdentifiedKey } from '../../api-keys/api-key-use-cases.js';
import { countingHops, type HopCount } from '../../cluster/remote-hops.js';
import { DeadlineExpiredError, withDeadline } from '../../libraries/actors/request-deadline.js';
import type { Clock } from '../../libraries/clock/clock.js';
import { AppError } from '../../libraries/errors/app-error.js';
import { scrubSecrets, type Logger } from '../../libraries/logger/logger.js';
import type { Gateway } from '../../gateway.js';
import type { ScheduleAction } from '../../messaging/manage-schedule-use-case.js';
import { DETAILS, sendData, sendDetail, sendError, serviceErrorBody, writeAnswer } from './envelopes.js';
import {
  authenticationAnswer,
  forwardedReplyOf,
  performOperation,
  toAppError,
  type ForwardedRequest,
  type MerchantOperation,
} from './merchant-operations.js';
import { allowedMethods, API_ROOT, ROUTES, type RouteName } from './routes.js';

/** One routed carrier: `ok` when at least one of its connectors is live; `connectors` counts the live ones. */
export interface CarrierHealth {
  readonly status: 'ok' | 'down';
  readonly connectors: number;
}

export interface HealthReport {
  /** The database and the transport answer: HTTP 200 (otherwise 503). */
  readonly healthy: boolean;
  readonly checks: {
    readonly database: 'ok' | 'down';
    readonly transport: 'ok' | 'down';
    /** By carrier slug; a carrier `down` makes the status `degraded` without making the node unhealthy. */
    readonly carriers: Readonly<Record<string, CarrierHealth>>;
  };
}

/** `ok` only when the node is healthy and every routed carrier has a live connector. */
export const healthStatus = (report: HealthReport): 'ok' | 'degraded' =>
  report.healthy && Object.values(report.checks.carriers).every((carrier) => carrier.status === 'ok') ? 'ok' : 'degraded';

export interface HttpAppDependencies {
  readonly useCases: Gateway['useCases'];
  readonly environment: 'sandbox' | 'production';
  readonly version: string;
  readonly bodyLimitBytes: number;
  readonly health: () => Promise<HealthReport>;
  readonly logger: Logger;
  /** Extra routers mounted outside the API root (documentation). */
  readonly extraRouters?: readonly express.Router[];
  /**
   * Each request's deadline: `budgetMs` after it arrives, on `clock`. No step of it starts later (503/1402,
   * nothing applied), except what finishes a decision already journaled. Absent: asks have only their own timeouts.
   */
  readonly deadline?: { readonly clock: Clock; readonly budgetMs: number };
  /** Observes each finished request (metrics); `remoteHops`: how often its work crossed to another node. */
  readonly onRequestFinished?: (sample: { route: string; method: string; status: number; seconds: number; remoteHops: number }) => void;
  /**
   * In a cluster: a request for a merchant whose shard another node owns is forwarded there whole (key check and
   * operation, one remote hop). Absent: every merchant is served here.
   */
  readonly forwarding?: {
    ownsMerchant(merchantId: string): boolean;
    forward(merchantId: string, request: ForwardedRequest, deadline: number | undefined): Promise<unknown>;
  };
}

interface Locals {
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

const locals = (res: Response): Locals => res.locals as Locals;
/** A well-formed incoming X-Request-Id is kept; any other is replaced (the OpenAPI document quotes both patterns). */
export const REQUEST_ID = /^[A-Za-z0-9._-]{1,128}$/;
export const IDEMPOTENCY_KEY = /^[\x21-\x7E]{1,255}$/;

/** 1110 with one detail on `body`, at the status DECISIONS.md gives (400, 413 or 415). */
function bodyError(httpStatus: 400 | 413 | 415, message: string, type: string): AppError {
  return AppError.invalid([{ field: 'body', message, type }], { httpStatus });
}

/** body-parser's `type` for a body whose bytes are not valid UTF-8 (thrown by requireUtf8). */
const BODY_NOT_UTF8 = 'entity.utf8.invalid';

/**
 * body-parser's `verify` hook: the raw bytes (after Content-Encoding) must be UTF-8, the only charset JSON bodies
 * take (RFC 8259). Decoding would otherwise replace each malformed sequence with U+FFFD and the SMS would carry it.
 */
function requireUtf8(_req: IncomingMessage, _res: ServerResponse, bytes: Buffer, charset: string): void {
  if (charset !== 'utf-8') throw Object.assign(new Error(`unsupported charset ${charset}`), { type: 'charset.unsupported' });
  if (!isUtf8(bytes)) throw Object.assign(new Error('the body is not valid UTF-8'), { type: BODY_NOT_UTF8 });
}

/** Turns body-parser failures into the contract's envelope. */
function bodyParserError(error: unknown, limit: number): AppError | null {
  if (typeof error !== 'object' || error === null || !('type' in error)) return null;
  switch (error.type) {
    case 'entity.parse.failed':
      return bodyError(400, 'must be a well-formed JSON object or array', 'body.json');
    case 'entity.too.large':
      return bodyError(413, `must be at most ${limit} bytes`, 'body.size');
    case 'charset.unsupported':
      return bodyError(415, 'must be UTF-8 JSON', 'body.charset');
    case BODY_NOT_UTF8:
      return bodyError(400, 'must be valid UTF-8', 'body.utf8');
    case 'encoding.unsupported':
      return bodyError(415, 'has an unsupported Content-Encoding', 'body.encoding');
    case 'request.aborted':
    case 'request.size.invalid':
    case 'stream.encoding.set':
      return bodyError(400, 'could not be read completely', 'body.incomplete');
    default:
      return null;
  }
}

const READ_METHODS = new Set(['GET', 'HEAD']);

/** Deepest nesting a body may have: the contract's bodies nest 4 levels; recursive code must never meet 100 000. */
const MAX_BODY_DEPTH = 32;

/** Whether a parsed body nests deeper than `limit` (walked without recursion: the body may be 100 000 levels deep). */
function nestsDeeperThan(value: unknown, limit: number): boolean {
  const stack: { value: unknown; depth: number }[] = [{ value, depth: 0 }];
  for (let next = stack.pop(); next !== undefined; next = stack.pop()) {
    if (typeof next.value !== 'object' || next.value === null) continue;
    if (next.depth >= limit) return true;
    for (const child of Object.values(next.value)) stack.push({ value: child, depth: next.depth + 1 });
  }
  return false;
}

function hasBody(req: Request): boolean {
  const length = req.headers['content-length'];
  return (length !== undefined && length !== '0') || req.headers['transfer-encoding'] !== undefined;
}

/** The caller's `X-Request-Id` when it is a usable id, else a fresh one. */
function requestIdOf(req: IncomingMessage): string {
  const incoming = req.headers['x-request-id'];
  return typeof incoming === 'string' && REQUEST_ID.test(incoming) ? incoming : randomUUID();
}

/**
 * A body over the limit is not read to its end (body-parser would read it all before answering, and a chunked body
 * with no last chunk never ends): as soon as the declared length or the bytes received pass the limit, the answer is
 * 413 with `Connection: close`, and Node closes the socket once that answer is flushed. True when it answered now;
 * otherwise it keeps counting the bytes as they come (its listener is attached before body-parser's, in this tick).
 */
function refuseOversizedBody(req: Request, res: Response, limit: number, answer: (error: AppError) => void): boolean {
  const refuse = (): void => {
    if (res.headersSent) {
      req.socket.destroy();
      return;
    }
    res.setHeader('Connection', 'close');
    answer(bodyError(413, `must be at most ${limit} bytes`, 'body.size'));
  };
  if (Number(req.headers['content-length'] ?? 0) > limit) {
    refuse();
    return true;
  }
  let received = 0;
  const count = (chunk: Buffer): void => {
    received += chunk.length;
    if (received <= limit) return;
    req.off('data', count);
    refuse();
  };
  req.on('data', count);
  req.once('end', () => req.off('data', count));
  return false;
}

/**
 * The merchant API. Order for every authenticated endpoint (DECISIONS.md): authenticate → rate limit → read and
 * validate the body → act. A route is a few lines: read the request, call one use case, map the result.
 */
export function createHttpApp(deps: HttpAppDependencies): RequestListener {
  const app = express();
  app.disable('x-powered-by');
  app.set('etag', false);
  app.set('query parser', 'simple');
  app.use(helmet());

  app.use((req, res, next) => {
    const requestId = requestIdOf(req);
    res.setHeader('X-Request-Id', requestId);
    const started = process.hrtime.bigint();
    const deadline = deps.deadline ? deps.deadline.clock.now() + deps.deadline.budgetMs : null;
    Object.assign(res.locals, { requestId, logger: deps.logger.child({ request_id: requestId }), route: 'unmatched', deadline, hops: { hops: 0 } } satisfies Locals);
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
  });

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
      const auth = await underDeadline(res, () => deps.useCases.apiKeys.verify(pending.key, pending.bucket));
      return admit(res, auth, pending.clientAddress);
    } catch (error) {
      answerVerificationFailure(res, error);
      return false;
    }
  }

  /** An input error's answer, after the key's verification when it is pending. */
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

  const JSON_TYPES = ['application/json', 'application/*+json'];
  // the body is read only after authentication and the rate limit, so a bad body never beats a 401
  const requireJson: RequestHandler = (req, res, next) => {
    if (hasBody(req) && !req.is(JSON_TYPES)) {
      refuse(res, bodyError(415, 'must be sent with Content-Type: application/json', 'body.contentType'));
      return;
    }
    next();
  };
  const limitDepth: RequestHandler = (req, res, next) => {
    if (nestsDeeperThan(req.body, MAX_BODY_DEPTH)) {
      refuse(res, bodyError(400, `must not nest deeper than ${MAX_BODY_DEPTH} levels`, 'body.depth'));
      return;
    }
    next();
  };
  const parseJson: RequestHandler = express.json({ limit: deps.bodyLimitBytes, strict: true, type: JSON_TYPES, verify: requireUtf8 });
  // every failure to read the body is the client's: a gzip/deflate/br body that does not decompress comes back
  // from body-parser as a bare zlib error (no `type`), which would otherwise end as a 500
  const readJson: RequestHandler = (req, res, next) => {
    if (
      refuseOversizedBody(req, res, deps.bodyLimitBytes, (error) => {
        refuse(res, error);
      })
    ) {
      return;
    }
    parseJson(req, res, (error?: unknown) => {
      // the size guard has answered already: what body-parser says after that changes nothing
      if (res.headersSent || locals(res).refusing) return;
      if (error === undefined) {
        next();
        return;
      }
      refuse(res, bodyParserError(error, deps.bodyLimitBytes) ?? bodyError(400, 'could not be decoded with its Content-Encoding', 'body.encoding'));
    });
  };
  const readBody: RequestHandler[] = [requireJson, readJson, limitDepth];

  /** Writes the refusal of a key that did not pass; true when it passed (the request goes on as this merchant's). */
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
        .then(() => underDeadline(res, () => apiKeys.identify(header, clientAddress)))
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
          const auth = await underDeadline(res, () => apiKeys.verify(identified, bucket));
          if (admit(res, auth, clientAddress)) next();
        })
        .catch((error: unknown) => {
          answerVerificationFailure(res, error);
        });
    };
  }

  /**
   * Runs a request's steps under its deadline, counting their remote hops; one that arrives (or resumes, in a
   * process that was frozen) with its deadline already passed starts none.
   */
  function underDeadline<T>(res: Response, work: () => Promise<T>): Promise<T> {
    const { deadline, hops } = locals(res);
    if (deadline === null || !deps.deadline) return countingHops(hops, work);
    if (deps.deadline.clock.now() >= deadline) return Promise.reject(new DeadlineExpiredError('the request'));
    return countingHops(hops, () => withDeadline(deadline, work));
  }

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
        underDeadline(res, () => forwarding.forward(pending.key.merchantId, request, locals(res).deadline ?? undefined))
          .then((value) => {
            const reply = forwardedReplyOf(value);
            if (admit(res, reply.auth, pending.clientAddress) && 'answer' in reply) writeAnswer(res, reply.answer);
          })
          .catch(next);
        return;
      }
      const auth = locals(res).auth ?? { merchantId: '', keyId: '' };
      underDeadline(res, () => performOperation(deps.useCases, auth, operation, requestId))
        .then((answer) => {
          writeAnswer(res, answer);
        })
        .catch(next);
    };

  const handlers: Record<RouteName, RequestHandler> = {
    health: (req, res, next) => {
      locals(res).route = 'health';
      underDeadline(res, () => deps.health())
        .then((report) => {
          sendData(res, report.healthy ? 200 : 503, { status: healthStatus(report), version: deps.version, environment: deps.environment, checks: report.checks });
        })
        .catch(next);
    },
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

  // A path with malformed percent-encoding (`/status/%E0%A4%A`) makes the router's parameter decoding throw: a
  // 500 before authentication. Such a path is taken literally instead, so it authenticates first and then names
  // an unknown id (404 {detail}), like any other malformed id.
  app.use((req, _res, next) => {
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
  });

  // unknown path: 404/1404; known path, other method: 405/1405 with Allow
  const unmatched: RequestHandler = (req, res) => {
    const allowed = allowedMethods(req.baseUrl + req.path);
    if (allowed.length > 0) {
      res.setHeader('Allow', allowed.join(', '));
      sendError(res, new AppError('METHOD_NOT_ALLOWED'), locals(res).requestId);
    } else {
      sendError(res, new AppError('ROUTE_NOT_FOUND'), locals(res).requestId);
    }
  };

  const api = express.Router({ strict: false, caseSensitive: true });
  for (const definition of ROUTES) {
    // named before authentication, so a 401/403/429 is logged and counted under its route
    const chain: RequestHandler[] = [
      (_req, res, next) => {
        locals(res).route = definition.name;
        next();
      },
    ];
    if (definition.bucket !== null) chain.push(authenticate(definition.bucket));
    if (definition.body) chain.push(...readBody);
    chain.push(handlers[definition.name]);
    api[definition.method](definition.path, ...chain);
  }
  // nothing is served to OPTIONS (no CORS): answered here, before any router can answer it by itself (Express
  // routers reply 200 text/plain "GET, HEAD" to OPTIONS on a path they know, with no envelope)
  app.use((req, res, next) => {
    if (req.method === 'OPTIONS') unmatched(req, res, next);
    else next();
  });
  app.use(API_ROOT, api);
  for (const router of deps.extraRouters ?? []) app.use(router);
  app.use(unmatched);

  app.use((error: unknown, req: Request, res: Response, _next: NextFunction) => {
    const { logger } = locals(res);
    const appError = bodyParserError(error, deps.bodyLimitBytes) ?? toAppError(error, READ_METHODS.has(req.method));
    // a 503 is logged by its request line (and an outage by the node, once): an error line for each would flood
    if (appError.httpStatus >= 500 && appError.errorName !== 'SERVICE_UNAVAILABLE') logger.error({ err: error }, 'request failed');
    refuse(res, appError);
  });

  // A request target Express reads no path from (`//a@#b`: its URL parser takes `a@` for an authority) skips every
  // middleware above and would get Express's own HTML 404: it gets the contract's 404 with a request id instead.
  const unrouted = (req: IncomingMessage, res: ServerResponse, error?: unknown): void => {
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
      { method, path: loggedPath(req.url), route: 'unmatched', status: res.statusCode, error_code: appError.code, duration_ms: Math.round(seconds * 1000) },
      'request',
    );
    deps.onRequestFinished?.({ route: 'unmatched', method, status: res.statusCode, seconds, remoteHops: 0 });
  };
  return (req, res) => {
    // what an http server hands its listener; Express takes it as its own request and response
    app(req as Request, res as Response, (error?: unknown) => {
      unrouted(req, res, error);
    });
  };
}
