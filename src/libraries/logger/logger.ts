import { pino, type Logger as PinoLogger, type LevelWithSilent } from 'pino';

/** Structured JSON logs. Never log keys, key hashes or passwords: the redaction below is a safety net only. */
export type Logger = PinoLogger;

export interface LoggerOptions {
  readonly level: LevelWithSilent;
  readonly base?: Record<string, unknown>;
  /** Where lines go; stdout by default (tests pass a collecting stream). */
  readonly destination?: { write(line: string): void };
}

export function createLogger(options: LoggerOptions): Logger {
  const config = {
    level: options.level,
    base: options.base ?? {},
    timestamp: pino.stdTimeFunctions.isoTime,
    redact: {
      paths: ['apiKey', 'app_key', 'password', 'webhook.password', '*.password', 'signingSecret', 'headers["app-key"]'],
      censor: '[redacted]',
    },
  };
  return options.destination ? pino(config, options.destination) : pino(config);
}

export const silentLogger: Logger = pino({ level: 'silent' });
