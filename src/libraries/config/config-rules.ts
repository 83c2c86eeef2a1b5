import { ConfigError } from '../errors/internal-errors.js';
import { requireSecretsKey } from '../secrets/secret-keys.js';
import type { Config } from './config.js';

/**
 * The processes that read the configuration and need settings together, beyond each setting's own validity: a
 * gateway node, the operator CLI. (The sandbox simulator connector and tests read it with no such rule.)
 */
export type ConfigReader = 'node' | 'cli';

/** Server mode keeps its records in PostgreSQL or MongoDB: one of the two must be named. */
export function requireServerDatabase(config: Config): void {
  if (config.mode === 'server' && config.database.url === '' && config.database.mongoUrl === '') {
    throw new ConfigError('Invalid configuration: server mode needs DATABASE_URL (PostgreSQL) or MONGO_URL (MongoDB)', 'database.url');
  }
}

/**
 * A server-mode node works over NATS JetStream. (The CLI may go without: with no node running it works on the
 * database alone, and it refuses when nodes are running, once it has seen them.)
 */
export function requireServerNats(config: Config): void {
  if (config.mode === 'server' && config.nats.url === '') {
    throw new ConfigError('Invalid configuration: server mode needs NATS_URL, the NATS server(s) (comma separated)', 'nats.url');
  }
}

/** The drain before a stop is part of the stop: it must leave the rest of the grace for the requests and the hand-over. */
export function requireDrainWithinGrace(config: Config): void {
  if (config.shutdown.drainMs >= config.shutdown.graceMs) {
    throw new ConfigError(
      `Invalid configuration: SHUTDOWN_DRAIN_MS (${String(config.shutdown.drainMs)}) must be shorter than SHUTDOWN_GRACE_MS (${String(config.shutdown.graceMs)}), which it counts within`,
      'shutdown.drainMs',
    );
  }
}

const RULES: Readonly<Record<ConfigReader, readonly ((config: Config) => void)[]>> = {
  node: [requireSecretsKey, requireServerDatabase, requireServerNats, requireDrainWithinGrace],
  cli: [requireSecretsKey, requireServerDatabase],
};

/** Throws the ConfigError of the first rule across settings that `config` breaks for `reader`. */
export function checkSettingsRules(config: Config, reader: ConfigReader): void {
  for (const rule of RULES[reader]) rule(config);
}
