import { ClosedConnectionError, ConnectionError, DrainingConnectionError, TimeoutError } from '@nats-io/nats-core';

export { isDatabaseConnectionError } from './database-connection-errors.js';

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
