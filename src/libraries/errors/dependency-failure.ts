import { ClosedConnectionError, ConnectionError, DrainingConnectionError, TimeoutError } from '@nats-io/nats-core';

/** The dependencies a node cannot work without (GET /health names them the same way). */
export type Dependency = 'database' | 'transport';

/** A dependency did not answer (down, restarting, unreachable): nothing of the operation it served was applied by it. */
export class DependencyUnavailableError extends Error {
  constructor(
    readonly dependency: Dependency,
    cause: unknown,
  ) {
    super(`${dependency} unavailable: ${cause instanceof Error ? cause.message : String(cause)}`, { cause });
    this.name = 'DependencyUnavailableError';
  }
}

/** PostgreSQL's SQLSTATEs of a lost or refused session: class 08 and the server shutting down or starting up. */
const SESSION_LOST = /^(08|57P0[123])/;
/** Socket failures of a connection to the database server. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** What `pg` says when a connection ends under it or cannot be had in time (no SQLSTATE, no socket code). */
const PG_CONNECTION_MESSAGES = /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Client was closed and is not queryable/;

/** Whether an error of the `pg` driver means the database could not be reached (as opposed to a query it refused). */
export function isDatabaseConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (SESSION_LOST.test(code) || SOCKET_CODES.has(code))) return true;
  return PG_CONNECTION_MESSAGES.test(error.message);
}

/** Whether an error of the NATS client means the server could not be reached in time. */
function isTransportConnectionError(error: unknown): boolean {
  return error instanceof ConnectionError || error instanceof ClosedConnectionError || error instanceof DrainingConnectionError || error instanceof TimeoutError;
}

/** The dependency whose outage explains `error` (itself or along its causes), or null when none does. */
export function dependencyOf(error: unknown): Dependency | null {
  let current: unknown = error;
  for (let depth = 0; depth < 8 && current instanceof Error; depth++) {
    if (current instanceof DependencyUnavailableError) return current.dependency;
    if (isTransportConnectionError(current)) return 'transport';
    current = current.cause;
  }
  return null;
}
