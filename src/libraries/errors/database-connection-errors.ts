// No imports: the lease renewal thread loads this module and must start fast.

/** PostgreSQL's SQLSTATEs of a lost or refused session: class 08 and the server shutting down or starting up. */
const SESSION_LOST = /^(08|57P0[123])/;
/** Socket failures of a connection to the database server. */
const SOCKET_CODES = new Set(['ECONNREFUSED', 'ECONNRESET', 'EPIPE', 'ETIMEDOUT', 'EHOSTUNREACH', 'ENETUNREACH', 'ENOTFOUND', 'EAI_AGAIN']);
/** What `pg` says when a connection ends under it or cannot be had in time (no SQLSTATE, no socket code). */
const PG_CONNECTION_MESSAGES =
  /Connection terminated|connection error and is not queryable|timeout exceeded when trying to connect|Client was closed and is not queryable/;

/** Whether an error of the `pg` driver means the database could not be reached (as opposed to a query it refused). */
export function isDatabaseConnectionError(error: unknown): boolean {
  if (!(error instanceof Error)) return false;
  const code = (error as { code?: unknown }).code;
  if (typeof code === 'string' && (SESSION_LOST.test(code) || SOCKET_CODES.has(code))) return true;
  return PG_CONNECTION_MESSAGES.test(error.message);
}
