import type { GatewayEnvironment } from '../config/config.js';
import { EnvironmentMismatchError } from '../errors/internal-errors.js';

/** What a claim found recorded after recording its own when there was none. */
export function checkEnvironmentClaim(wanted: GatewayEnvironment, recorded: string | null): void {
  if (recorded !== wanted) throw new EnvironmentMismatchError(wanted, recorded ?? '(none)');
}
