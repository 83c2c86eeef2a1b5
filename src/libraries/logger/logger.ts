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

const MAX_TEXT_CHARS = 2_000;
const MAX_OBJECT_CHARS = 4_000;
const MAX_NESTING = 3;
const MAX_ENTRIES = 50;
const MAX_CAUSES = 5;
/** Fields that hold a driver's handles whatever their shape: never serialized, even when plain. */
const HANDLE_FIELDS: ReadonlySet<string> = new Set(['client', 'connection', 'socket', 'stream', 'pool', 'agent', 'request', 'response']);

/**
 * A field worth a log line: primitives (long text cut) and small plain objects and arrays of them. Anything else is
 * left out (undefined): a driver's client or connection (a PostgreSQL client carries its backend process id and
 * cancel key), sockets, buffers, class instances, and plain values too large for a line.
 */
function plainValue(value: unknown, depth = 0): unknown {
  if (value === null || typeof value === 'number' || typeof value === 'boolean') return value;
  if (typeof value === 'string') return value.length > MAX_TEXT_CHARS ? `${value.slice(0, MAX_TEXT_CHARS)}…[truncated]` : value;
  if (typeof value === 'bigint') return String(value);
  if (typeof value !== 'object' || depth >= MAX_NESTING) return undefined;
  let plain: unknown;
  if (Array.isArray(value)) {
    if (value.length > MAX_ENTRIES) return undefined;
    plain = value.map((item) => plainValue(item, depth + 1)).filter((item) => item !== undefined);
  } else {
    const prototype: unknown = Object.getPrototypeOf(value);
    if (prototype !== Object.prototype && prototype !== null) return undefined;
    const entries = Object.entries(value);
    if (entries.length > MAX_ENTRIES) return undefined;
    plain = Object.fromEntries(entries.map(([key, item]) => [key, plainValue(item, depth + 1)]).filter(([, item]) => item !== undefined));
  }
  return depth === 0 && JSON.stringify(plain).length > MAX_OBJECT_CHARS ? undefined : plain;
}

/** The message followed by its causes' (`outer: inner`), as pino writes it. */
function messageWithCauses(error: Error, depth: number): string {
  return error.cause instanceof Error && depth < MAX_CAUSES
    ? `${error.message}: ${messageWithCauses(error.cause, depth + 1)}`
    : error.message;
}

/** An error as a log line holds it: type, name, message, code, stack, its own plain fields, and its causes. */
function errorRecord(error: Error, depth: number): Record<string, unknown> {
  const record: Record<string, unknown> = {
    type: error.constructor.name,
    name: error.name,
    message: messageWithCauses(error, depth),
    stack: error.stack,
  };
  for (const [key, value] of Object.entries(error)) {
    if (key === 'cause' || key === 'errors' || key in record || HANDLE_FIELDS.has(key)) continue;
    const plain = plainValue(value);
    if (plain !== undefined) record[key] = plain;
  }
  if (error.cause !== undefined && depth < MAX_CAUSES) {
    record.cause = error.cause instanceof Error ? errorRecord(error.cause, depth + 1) : plainValue(error.cause);
  }
  const { errors } = error as { errors?: unknown };
  if (Array.isArray(errors) && depth < MAX_CAUSES) {
    record.aggregateErrors = errors.slice(0, 10).map((item) => (item instanceof Error ? errorRecord(item, depth + 1) : plainValue(item)));
  }
  return record;
}

/** The `err` serializer: the error's text and plain fields, never the objects it points to, scrubbed of secrets. */
function serializeError(error: unknown): unknown {
  return scrubDeep(error instanceof Error ? errorRecord(error, 0) : plainValue(error));
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
