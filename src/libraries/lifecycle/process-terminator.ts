import type { Logger } from '../logger/logger.js';

export type TerminationReason = 'SIGTERM' | 'SIGINT' | 'uncaughtException' | 'unhandledRejection' | 'startFailed';

export interface ProcessTerminatorOptions {
  readonly logger: Logger;
  /** How long stopping may take before the process exits 1 anyway. */
  readonly graceMs: number;
  /** Stops what runs (nothing yet when it fails early). */
  readonly stop: () => Promise<void>;
  /** `process.exit` in production. */
  readonly exit: (code: 0 | 1) => void;
  readonly now?: () => number;
}

/**
 * The one place the process ends (STYLE.md item 8). A signal stops gracefully and exits 0; a crash (uncaught
 * exception, unhandled rejection, failed start) is logged with its error, stops the same way and exits 1. A stop
 * that fails, or outlasts `graceMs`, exits 1 with a log line; a second signal while stopping exits 1 at once.
 */
export function createProcessTerminator(options: ProcessTerminatorOptions): (reason: TerminationReason, error?: unknown) => void {
  const { logger, graceMs } = options;
  let stopping = false;
  let exited = false;
  let exitCode: 0 | 1 = 0;
  const exit = (code: 0 | 1): void => {
    if (exited) return;
    exited = true;
    options.exit(code);
  };
  return (reason, error) => {
    const crash = reason !== 'SIGTERM' && reason !== 'SIGINT';
    if (crash) {
      exitCode = 1;
      logger.fatal({ err: error, reason }, 'crashed');
    }
    if (stopping) {
      if (!crash) {
        logger.warn({ signal: reason }, 'second signal while stopping: exiting now');
        exit(1);
      }
      return;
    }
    stopping = true;
    logger.info({ reason, grace_ms: graceMs }, 'shutting down');
    const now = options.now ?? Date.now;
    const startedAt = now();
    const tooLate = (): void => {
      logger.error({ grace_ms: graceMs, elapsed_ms: now() - startedAt }, 'shutdown did not finish within the grace period');
      exit(1);
    };
    const deadline = setTimeout(tooLate, graceMs);
    Promise.resolve()
      .then(options.stop)
      .then(
        () => {
          clearTimeout(deadline);
          // the timer cannot fire while a stop step blocks the event loop (PGlite works synchronously): check again
          if (now() - startedAt > graceMs) {
            tooLate();
            return;
          }
          logger.info({ exit_code: exitCode, elapsed_ms: now() - startedAt }, 'stopped');
          exit(exitCode);
        },
        (stopError: unknown) => {
          clearTimeout(deadline);
          logger.error({ err: stopError }, 'shutdown failed');
          exit(1);
        },
      );
  };
}
