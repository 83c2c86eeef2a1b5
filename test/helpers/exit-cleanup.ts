import { spawn } from 'node:child_process';

/**
 * What a test process leaves behind when it exits with servers still running: a parallel run's worker process is told
 * to exit once the run is over with its shared servers up (the global teardown runs in the main process only), and
 * any run exits past a server a test forgot to stop. 'exit' listeners cannot wait, and the pool kills a worker that
 * takes more than a second to go: so every server is killed first, then its directory (a shared PostgreSQL's holds
 * hundreds of databases by then) is removed by a detached `rm` that outlives the process, once the servers have had a
 * moment to go.
 *
 * A process that a signal kills runs no 'exit' listener. So a process with anything to clean up exits on SIGINT or
 * SIGTERM (a terminal's Ctrl-C reaches every worker of a parallel run; the pool ends its workers with SIGTERM) through
 * `process.exit`, which runs it: unless something else in the process listens for that signal (a benchmark's own
 * cleanup), which then decides when to exit. Not SIGHUP: a listener would override the `nohup` a run may have been
 * started under. SIGKILL still leaves everything behind.
 */
interface Leftover {
  /** Kills the server without waiting for it (nothing to kill for a directory alone). */
  readonly kill: () => void;
  readonly dir: string;
}

const leftovers = new Set<Leftover>();

const EXIT_SIGNALS = { SIGINT: 2, SIGTERM: 15 } as const;
let onSignals = false;

/** From the first leftover on: the signals that would kill the process make it exit instead, running the cleanup. */
function exitOnSignals(): void {
  if (onSignals) return;
  onSignals = true;
  for (const [signal, number] of Object.entries(EXIT_SIGNALS)) {
    process.on(signal, () => {
      // alone, this listener replaced the signal's default (death) and keeps to it; beside another, that one decides
      if (process.listenerCount(signal) === 1) process.exit(128 + number);
    });
  }
}

process.once('exit', () => {
  for (const { kill } of leftovers) {
    try {
      kill();
    } catch {
      // gone already: the next one still gets its signal
    }
  }
  const dirs = [...leftovers].map(({ dir }) => dir);
  leftovers.clear();
  if (dirs.length === 0) return;
  spawn('sh', ['-c', 'sleep 2; exec rm -rf -- "$@"', 'sh', ...dirs], { detached: true, stdio: 'ignore' }).unref();
});

/**
 * Kills the server and removes `dir` if the process exits before the returned function is called (the server was
 * stopped and its directory removed in time).
 */
export function cleanUpAtExit(kill: () => void, dir: string): () => void {
  const leftover: Leftover = { kill, dir };
  leftovers.add(leftover);
  exitOnSignals();
  return () => {
    leftovers.delete(leftover);
  };
}
