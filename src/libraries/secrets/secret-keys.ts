import { randomBytes } from 'node:crypto';
import { mkdirSync, readFileSync, writeFileSync } from 'node:fs';
import path from 'node:path';
import type { Config } from '../config/config.js';
import { createSecretBox, parseSecretKey, SECRET_KEY_BYTES, type SecretBox } from './secret-box.js';
import { ConfigError } from '../errors/internal-errors.js';

/** The embedded sandbox's own key, made on first start beside its database. */
export const EMBEDDED_KEY_FILE = 'secrets.key';

/** Reads the data directory's key file, creating it (readable by this user only) when there is none. */
export function embeddedSecretKey(dataDir: string, random: (size: number) => Buffer = randomBytes): Buffer {
  const file = path.join(dataDir, EMBEDDED_KEY_FILE);
  mkdirSync(dataDir, { recursive: true });
  try {
    // `wx`: of two processes starting together, one creates the file and the other reads it
    writeFileSync(file, `${random(SECRET_KEY_BYTES).toString('base64')}\n`, { flag: 'wx', mode: 0o600 });
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code !== 'EEXIST') throw error;
  }
  return parseSecretKey(readFileSync(file, 'utf8').trim(), file);
}

/**
 * Server-mode nodes and the CLI refuse to start without SECRETS_KEY (a carrier connector reading the same
 * configuration needs none, so the schema alone cannot require it).
 */
export function requireSecretsKey(config: Config): void {
  if (config.mode === 'server' && config.secrets.key === '') {
    throw new ConfigError(
      'Invalid configuration: "secrets.key" is required in server mode, the same on every node and the CLI: 32 random bytes in base64 (openssl rand -base64 32) (environment variable SECRETS_KEY)',
      'secrets.key',
    );
  }
}

/**
 * The box sealing secrets at rest: SECRETS_KEY seals (and opens), SECRETS_PREVIOUS_KEYS only open. Embedded mode
 * without SECRETS_KEY uses the data directory's own key; server mode refuses to go without one.
 */
export function secretBoxOf(config: Config): SecretBox {
  const previous = config.secrets.previousKeys.map((key, index) => parseSecretKey(key, `SECRETS_PREVIOUS_KEYS[${String(index)}]`));
  if (config.secrets.key !== '') return createSecretBox({ current: parseSecretKey(config.secrets.key, 'SECRETS_KEY'), previous });
  requireSecretsKey(config);
  return createSecretBox({ current: embeddedSecretKey(config.database.dataDir), previous });
}
