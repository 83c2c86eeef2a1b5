import type { Response } from 'express';
import type { AppError } from '../../libraries/errors/app-error.js';

/**
 * An HTTP answer as a value: built where the request is served (this node, or the node owning the merchant's shard,
 * which sends it back over NATS) and written by the node that received the request.
 */
export interface Answer {
  readonly status: number;
  readonly body: unknown;
  readonly headers?: Readonly<Record<string, string>>;
}

/** `{ status_code, data }`: every successful response. */
export const dataAnswer = (status: number, data: unknown, headers?: Readonly<Record<string, string>>): Answer => ({
  status,
  body: { status_code: status, data },
  ...(headers ? { headers } : {}),
});

/** The contract's service-error envelope of `error`; `error_code` is always a four-digit string. */
export function serviceErrorBody(error: AppError, requestId: string): Record<string, unknown> {
  return {
    success: false,
    status_code: error.httpStatus,
    error_code: error.code,
    message: error.message,
    request_id: requestId,
    ...(error.details ? { details: error.details } : {}),
    ...(error.retryAfterSeconds !== undefined ? { retry_after: error.retryAfterSeconds } : {}),
  };
}

/** The service-error envelope, with `Retry-After` when the error has one. */
export const errorAnswer = (error: AppError, requestId: string): Answer => ({
  status: error.httpStatus,
  body: serviceErrorBody(error, requestId),
  ...(error.retryAfterSeconds !== undefined ? { headers: { 'Retry-After': String(error.retryAfterSeconds) } } : {}),
});

/** Authentication failures and status-404 bodies: exactly `{ detail }`. */
export const detailAnswer = (status: number, detail: string): Answer => ({ status, body: { detail } });

/** Writes the answer; an error envelope's code is kept for the request's log line. */
export function writeAnswer(res: Response, answer: Answer): void {
  const errorCode = (answer.body as { error_code?: unknown } | null)?.error_code;
  if (typeof errorCode === 'string') (res.locals as { errorCode?: string }).errorCode = errorCode;
  for (const [name, value] of Object.entries(answer.headers ?? {})) res.setHeader(name, value);
  res.status(answer.status).json(answer.body);
}

export function sendData(res: Response, status: number, data: unknown): void {
  writeAnswer(res, dataAnswer(status, data));
}

export function sendError(res: Response, error: AppError, requestId: string): void {
  writeAnswer(res, errorAnswer(error, requestId));
}

export function sendDetail(res: Response, status: number, detail: string): void {
  writeAnswer(res, detailAnswer(status, detail));
}

export const DETAILS = {
  missingKey: 'Missing app-key header.',
  invalidKey: 'Invalid API key.',
  verificationFailed: 'Could not verify the API key; retry.',
  messageNotFound: 'Message not found.',
  forbidden: (status: string) => `API key status is ${status}.`,
} as const;
