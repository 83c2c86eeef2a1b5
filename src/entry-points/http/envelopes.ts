import type { Response } from 'express';
import type { AppError } from '../../libraries/errors/app-error.js';

/** `{ status_code, data }`: every successful response. */
export function sendData(res: Response, status: number, data: unknown): void {
  res.status(status).json({ status_code: status, data });
}

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

/** Answers with the service-error envelope (and `Retry-After` when the error has one); the request line logs its code. */
export function sendError(res: Response, error: AppError, requestId: string): void {
  (res.locals as { errorCode?: string }).errorCode = error.code;
  if (error.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(error.retryAfterSeconds));
  res.status(error.httpStatus).json(serviceErrorBody(error, requestId));
}

/** Authentication failures and status-404 bodies: exactly `{ detail }`. */
export function sendDetail(res: Response, status: number, detail: string): void {
  res.status(status).json({ detail });
}

export const DETAILS = {
  missingKey: 'Missing app-key header.',
  invalidKey: 'Invalid API key.',
  verificationFailed: 'Could not verify the API key; retry.',
  messageNotFound: 'Message not found.',
  forbidden: (status: string) => `API key status is ${status}.`,
} as const;
