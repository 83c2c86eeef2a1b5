import { pino, type Logger as PinoLogger, type LevelWithSilent } from 'pino';

/**
 * Structured JSON logs. Never log keys, key hashes, webhook passwords or signing secrets: the redaction and the
 * error scrubbing below are a safety net only.
 */
export type Logger = PinoLogger;

export interface LoggerOptions {
  readonly level: LevelWithSilent;
  readonly base?: Record<string, unknown>;
  /** Where lines go; stdout by default (tests pass a collecting stream). */
  readonly destination?: { write(line: string): void };
}

const REDACTED_PATHS = [
  'apiKey',
  'api_key',
  'app_key',
  'password',
  '*.password',
  'webhook.password',
  'signingSecret',
  '*.signingSecret',
  'signing_secret',
  'secret',
  '*.secret',
  'hash',
  '*.hash',
  'headers["app-key"]',
  'headers.authorization',
  '*.headers["app-key"]',
  '*.headers.authorization',
];

/** Secrets recognisable by their shape, wherever they appear in an error's text (a driver may quote a value). */
const SECRET_SHAPES: readonly [RegExp, string][] = [
  [/sk_(test|live)_[0-9A-Za-z]+/g, 'sk_$1_[redacted]'],
  [/whsec_[0-9A-Za-z_-]+/g, 'whsec_[redacted]'],
  // API key hashes are SHA-256 hex
  [/\b[0-9a-f]{64}\b/gi, '[redacted-hash]'],
  [/\b(Basic|Bearer)\s+[A-Za-z0-9+/=._-]+/g, '$1 [redacted]'],
  // credentials inside a URL (https://user:password@host)
  [/\/\/[^/\s:@]+:[^/\s@]+@/g, '//[redacted]@'],
];

export function scrubSecrets(text: string): string {
  return SECRET_SHAPES.reduce((out, [shape, replacement]) => out.replace(shape, replacement), text);
}

function scrubDeep(value: unknown, depth = 0): unknown {
  if (typeof value === 'string') return scrubSecrets(value);
  if (depth > 8 || typeof value !== 'object' || value === null) return value;
  if (Array.isArray(value)) return value.map((item) => scrubDeep(item, depth + 1));
  return Object.fromEntries(Object.entries(value).map(([key, item]) => [key, scrubDeep(item, depth + 1)]));
}

/** pino's error serializer (message, stack, cause and own fields such as a driver's `detail`), scrubbed. */
function serializeError(error: unknown): unknown {
  return scrubDeep(error instanceof Error ? pino.stdSerializers.err(error) : error);
}

export function createLogger(options: LoggerOptions): Logger {
  const config = {
    level: options.level,
    base: options.base ?? {},
    timestamp: pino.stdTimeFunctions.isoTime,
    serializers: { err: serializeError },
    redact: { paths: REDACTED_PATHS, censor: '[redacted]' },
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}

export const silentLogger: Logger = pino({ level: 'silent' });
