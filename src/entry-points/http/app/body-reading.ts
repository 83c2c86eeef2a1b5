import { isUtf8 } from 'node:buffer';
import type { IncomingMessage, ServerResponse } from 'node:http';
import express, { type Request, type RequestHandler, type Response } from 'express';
import { AppError } from '../../../libraries/errors/app-error.js';
import { locals } from './request-context.js';

/** 1110 with one detail on `body`, at the status the contract gives (400, 413 or 415). */
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
export function bodyParserError(error: unknown, limit: number): AppError | null {
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
 * The steps that read a route's JSON body: the content type, the bytes (at most `limit`, UTF-8, decoded with
 * their Content-Encoding), then the nesting depth. Each refusal goes through `refuse`, which answers it after the
 * key's verification when that is pending.
 */
export function bodyReaders(limit: number, refuse: (res: Response, error: AppError) => void): RequestHandler[] {
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
  const parseJson: RequestHandler = express.json({ limit, strict: true, type: JSON_TYPES, verify: requireUtf8 });
  // every failure to read the body is the client's: a gzip/deflate/br body that does not decompress comes back
  // from body-parser as a bare zlib error (no `type`), which would otherwise end as a 500
  const readJson: RequestHandler = (req, res, next) => {
    if (
      refuseOversizedBody(req, res, limit, (error) => {
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
      refuse(res, bodyParserError(error, limit) ?? bodyError(400, 'could not be decoded with its Content-Encoding', 'body.encoding'));
    });
  };
  return [requireJson, readJson, limitDepth];
}
