import type { Config } from '../libraries/config/config.js';
import { dependencyOf } from '../libraries/errors/dependency-failure.js';
import type { Logger } from '../libraries/logger/logger.js';
import type { DependencyOutages } from '../libraries/observability/dependency-outages.js';
import type { Persistence } from '../libraries/persistence/persistence.js';
import { createDatabaseBus } from '../libraries/transport/database-bus.js';
import { natsNames } from '../libraries/transport/nats-names.js';
import type { Transport } from '../libraries/transport/transport-port.js';

/** The node's transport: the database bus in embedded mode, NATS in server mode. */
export async function openTransport(
  config: Config,
  persistence: Persistence,
  logger: Logger,
  outages?: DependencyOutages,
): Promise<Transport> {
  if (config.mode === 'embedded') {
    if (!persistence.sql) throw new Error('embedded mode needs the SQL database for its bus');
    return createDatabaseBus({ db: persistence.sql });
  }
  if (!config.nats.url) throw new Error('server mode needs NATS_URL');
  const { connectNatsTransport } = await import('../libraries/transport/nats-transport.js');
  return connectNatsTransport({
    servers: config.nats.url,
    name: config.cluster.nodeId || 'sms-gateway',
    names: natsNames(config.nats.namespace),
    onError: (error: unknown, context: string) => {
      // a failure the broker's outage explains is that outage's, logged once; anything else is logged as it comes
      const dependency = outages ? dependencyOf(error) : null;
      if (dependency) outages?.failed(dependency, error, context);
      else logger.warn({ err: error, context }, 'nats');
    },
  });
}
