import type { GatewayEnvironment } from '../config/config.js';

/**
 * One database serves one environment: the first node (or CLI run) to open a database records its environment in
 * it, and any later one of the other environment is refused, so a live key can never read sandbox records (or the
 * reverse) through a shared database.
 */
export class EnvironmentMismatchError extends Error {
  constructor(
    readonly wanted: GatewayEnvironment,
    readonly recorded: string,
  ) {
    super(
      `this database was initialised for the ${recorded} environment and cannot serve ${wanted}: ` +
        `one database serves one environment, give ${wanted} a database of its own (GATEWAY_ENVIRONMENT=${wanted}, recorded: ${recorded})`,
    );
    this.name = 'EnvironmentMismatchError';
  }
}

/** What a claim found recorded after recording its own when there was none. */
export function checkEnvironmentClaim(wanted: GatewayEnvironment, recorded: string | null): void {
  if (recorded !== wanted) throw new EnvironmentMismatchError(wanted, recorded ?? '(none)');
}
