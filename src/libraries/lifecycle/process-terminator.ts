import { systemClock, type Clock } from '../clock/clock.js';
import type { Logger } from '../logger/logger.js';

export type StopSignal = 'SIGTERM' | 'SIGINT';
export type TerminationReason = StopSignal | 'uncaughtException' | 'unhandledRejection' | 'startFailed';
export type Terminate = (reason: TerminationReason, error?: unknown) => void;

/**
 * How long into a stop a signal still counts as part of it. A signal sent to a whole process group (Ctrl-C in a
 * terminal, a control-group kill by systemd, `docker stop` on a shell entrypoint) reaches npm, tsx and node, and npm
 * and tsx relay copies to their child: node gets the same SIGINT or SIGTERM two or three times within milliseconds.
 * Those copies must not cut short the stop they belong to. A person who means to force-quit sends the second signal
 * after reading the `shutting down` line, well over 2 s later.
 */
export const FORCE_QUIT_AFTER_MS = 2_000;

export interface ProcessTerminatorOptions {
  readonly logger: Logger;
  /**
   * How long stopping may take before the process exits 1 anyway. Without it the stop has no deadline of its own
   * (its steps bound themselves, the orchestrator's SIGKILL bounds the whole).
   */
  readonly graceMs?: number;
  /** Stops what runs (nothing yet when it fails early); told why, since a crash stops differently (no drain). */
  readonly stop: (reason: TerminationReason) => Promise<void>;
  /** `process.exit` in production. */
  readonly exit: (code: 0 | 1) => void;
  readonly clock?: Clock;
  /** A signal this long or longer into the stop force-quits (exit 1); one sooner is a copy of the first. */
  readonly forceQuitAfterMs?: number;
}

/**
 * The one place a process ends (STYLE.md item 8): the gateway node and every connector process. A signal stops
 * gracefully and exits 0; a crash (uncaught exception, unhandled rejection, failed start) is logged with its error,
 * stops the same way and exits 1. A stop that fails, or outlasts `graceMs`, exits 1 with a log line.
 *
 * Signals during a stop: within `forceQuitAfterMs` of its beginning they are copies of the one that began it (or
 * arrived with it: a SIGTERM and a SIGINT alike) and are ignored, with an info line; later, a signal is a deliberate
 * force-quit and exits 1 at once, with a warn line. The window opens only once the process had a turn to read the
 * signals already sent: a stop step that blocks the event loop past the window (PGlite works synchronously) does
 * not turn the copies waiting behind it into a force-quit.
 */
export function createProcessTerminator(options: ProcessTerminatorOptions): Terminate {
  const { logger, graceMs } = options;
  const clock = options.clock ?? systemClock;
  const forceQuitAfterMs = options.forceQuitAfterMs ?? FORCE_QUIT_AFTER_MS;
  let stopping = false;
  let exited = false;
  let exitCode: 0 | 1 = 0;
  let startedAt = 0;
  /** A signal now force-quits. */
  let forceQuitOpen = false;
  let windowTimer: NodeJS.Timeout | null = null;
  let deadline: NodeJS.Timeout | null = null;
  const exit = (code: 0 | 1): void => {
    if (exited) return;
    exited = true;
    if (windowTimer) clearTimeout(windowTimer);
    if (deadline) clearTimeout(deadline);
    options.exit(code);
  };
  const elapsed = (): number => clock.now() - startedAt;

  const signalWhileStopping = (signal: StopSignal): void => {
    if (exited) return;
    if (forceQuitOpen) {
      logger.warn(
        { signal, elapsed_ms: elapsed(), force_quit_after_ms: forceQuitAfterMs },
        'force-quit: another signal while stopping, exiting now',
      );
      exit(1);
      return;
    }
    logger.info(
      { signal, elapsed_ms: elapsed(), force_quit_after_ms: forceQuitAfterMs },
      'signal while stopping: a copy of the first, same stop',
    );
  };

  return (reason, error) => {
    const crash = reason !== 'SIGTERM' && reason !== 'SIGINT';
    if (crash) {
      exitCode = 1;
      logger.fatal({ err: error, reason }, 'crashed');
    }
    if (stopping) {
      if (!crash) signalWhileStopping(reason);
      return;
    }
    stopping = true;
    startedAt = clock.now();
    logger.info(
      { reason, ...(graceMs === undefined ? {} : { grace_ms: graceMs }), force_quit_after_ms: forceQuitAfterMs },
      'shutting down',
    );
    // timers run before the poll phase that reads pending signals, setImmediate after it: signals sent before the
    // window closed are handled (as copies) before it opens, however long the event loop was blocked
    windowTimer = setTimeout(() => {
      setImmediate(() => {
        forceQuitOpen = true;
      });
    }, forceQuitAfterMs);
    windowTimer.unref();
    const tooLate = (limitMs: number): void => {
      logger.error({ grace_ms: limitMs, elapsed_ms: elapsed() }, 'shutdown did not finish within the grace period');
      exit(1);
    };
    if (graceMs !== undefined) {
      deadline = setTimeout(() => {
        tooLate(graceMs);
      }, graceMs);
    }
    Promise.resolve()
      .then(() => options.stop(reason))
      .then(
        () => {
          if (deadline) clearTimeout(deadline);
          // the timer cannot fire while a stop step blocks the event loop (PGlite works synchronously): check again
          if (graceMs !== undefined && elapsed() > graceMs) {
            tooLate(graceMs);
            return;
          }
          logger.info({ exit_code: exitCode, elapsed_ms: elapsed() }, 'stopped');
          exit(exitCode);
        },
        (stopError: unknown) => {
          if (deadline) clearTimeout(deadline);
          logger.error({ err: stopError }, 'shutdown failed');
          exit(1);
        },
      );
  };
}

/** Where the stop signals come from: `process` in production. */
export interface SignalSource {
  on(event: StopSignal, listener: () => void): unknown;
}

/** SIGTERM and SIGINT (each copy of them) go to the terminator. */
export function stopOnSignals(terminate: Terminate, source: SignalSource = process): void {
  for (const signal of ['SIGTERM', 'SIGINT'] as const) {
    source.on(signal, () => {
      terminate(signal);
    });
  }
}
