import { ClosedConnectionError, ConnectionError, DrainingConnectionError, TimeoutError } from '@nats-io/nats-core';
import { type Dependency, DependencyUnavailableError } from './internal-errors.js';

export { isDatabaseConnectionError } from './database-connection-errors.js';

/** Whether an error of the NATS client means the server could not be reached in time. */
function isTransportConnectionError(error: unknown): boolean {
  return (
    error instanceof ConnectionError ||
    error instanceof ClosedConnectionError ||
    error instanceof DrainingConnectionError ||
    error instanceof TimeoutError
  );
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
