import { ERROR_CATALOGUE, type ServiceErrorName } from './error-catalogue.js';

/** One entry of `details[]` in a 1110 envelope. `field` is a path such as `scheduled_dates[2].time`. */
export interface FieldIssue {
  readonly field: string;
  readonly message: string;
  readonly type: string;
}

export interface AppErrorOptions {
  readonly message?: string;
  readonly details?: readonly FieldIssue[];
  readonly retryAfterSeconds?: number;
  /** Overrides the catalogue's status: a body too large (413) or of the wrong media type (415) is 1110 too. */
  readonly httpStatus?: number;
  readonly cause?: unknown;
}

/** The single error type of the service. Expected failures are values; an AppError is how they reach HTTP. */
export class AppError extends Error {
  readonly errorName: ServiceErrorName;
  readonly code: string;
  readonly httpStatus: number;
  readonly details: readonly FieldIssue[] | undefined;
  readonly retryAfterSeconds: number | undefined;

  constructor(name: ServiceErrorName, options: AppErrorOptions = {}) {
    const entry = ERROR_CATALOGUE[name];
    super(options.message ?? entry.message, { cause: options.cause });
    this.name = 'AppError';
    this.errorName = name;
    this.code = entry.code;
    this.httpStatus = options.httpStatus ?? entry.httpStatus;
    this.details = options.details;
    this.retryAfterSeconds = options.retryAfterSeconds;
  }

  static invalid(details: readonly FieldIssue[], options: Omit<AppErrorOptions, 'details'> = {}): AppError {
    return new AppError('INVALID_FIELD_FORMAT', { ...options, details });
  }
}

export function isAppError(value: unknown): value is AppError {
  return value instanceof AppError;
}

/** A use case's answer: a value, or the AppError a client gets. */
export type Result<T> = { readonly ok: true; readonly value: T } | { readonly ok: false; readonly error: AppError };

export const success = <T>(value: T): Result<T> => ({ ok: true, value });
export const failure = <T = never>(error: AppError): Result<T> => ({ ok: false, error });
