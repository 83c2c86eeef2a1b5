import type { Clock } from '../clock/clock.js';
import type { Logger } from '../logger/logger.js';
import type { Dependency } from '../errors/internal-errors.js';

/**
 * What a node knows of its dependencies' outages, for its logs and GET /health. A dependency that fails is down
 * until it answers again; an outage is logged twice, when it starts (warn, with the first error) and when it ends
 * (with its length and how many failures it explained), never once per failed query.
 */
export interface DependencyOutages {
  /** `dependency` failed (a query, a publish, a probe): starts an outage, or counts one more failure of it. */
  failed(dependency: Dependency, error: unknown, what?: string): void;
  /** `dependency` answered: ends its outage, if any. */
  answered(dependency: Dependency): void;
  isDown(dependency: Dependency): boolean;
}

interface Outage {
  readonly since: number;
  failures: number;
}

/**
 * After an outage ends, operations begun during it may still fail for a while (a NATS publish sent as the server
 * came back times out after its 5 s wait): such failures are the ended outage's tail, not a new outage, unless a
 * probe fails again.
 */
export const OUTAGE_TAIL_MS = 10_000;

export function createDependencyOutages(options: { readonly logger: Logger; readonly clock: Clock }): DependencyOutages {
  const { logger, clock } = options;
  const outages = new Map<Dependency, Outage>();
  const endedAt = new Map<Dependency, number>();
  return {
    failed(dependency, error, what) {
      const outage = outages.get(dependency);
      if (outage) {
        outage.failures++;
        return;
      }
      const ended = endedAt.get(dependency);
      if (what !== 'probe' && ended !== undefined && clock.now() - ended < OUTAGE_TAIL_MS) {
        logger.debug({ dependency, err: error, what }, 'failure from the outage just ended');
        return;
      }
      outages.set(dependency, { since: clock.now(), failures: 1 });
      logger.warn(
        { dependency, err: error, ...(what ? { what } : {}) },
        'dependency unavailable: requests that need it answer 503 until it is back',
      );
    },
    answered(dependency) {
      const outage = outages.get(dependency);
      if (!outage) return;
      outages.delete(dependency);
      endedAt.set(dependency, clock.now());
      logger.warn({ dependency, down_ms: clock.now() - outage.since, failures: outage.failures }, 'dependency available again');
    },
    isDown: (dependency) => outages.has(dependency),
  };
}

/** How often a node checks its dependencies: it notices a return within this (plus one probe's answer). */
export const DEPENDENCY_PROBE_INTERVAL_MS = 1_000;

export interface DependencyWatch {
  stop(): void;
}

/**
 * Every `intervalMs`, probes each dependency that is down and tells `outages` what it found: the end of an outage is
 * noticed within an interval of the dependency's return, whatever the node is doing meanwhile. (An outage starts
 * with the failures of the node's own work: its relay and lease renewals query the database several times a second.)
 */
export function watchDependencies(options: {
  readonly outages: DependencyOutages;
  readonly probes: Readonly<Record<Dependency, () => Promise<'ok' | 'down'>>>;
  readonly intervalMs?: number;
}): DependencyWatch {
  const intervalMs = options.intervalMs ?? DEPENDENCY_PROBE_INTERVAL_MS;
  let stopped = false;
  let timer: NodeJS.Timeout | undefined;
  const round = async (): Promise<void> => {
    await Promise.all(
      (Object.entries(options.probes) as [Dependency, () => Promise<'ok' | 'down'>][])
        .filter(([dependency]) => options.outages.isDown(dependency))
        .map(async ([dependency, probe]) => {
          if ((await probe()) === 'ok') options.outages.answered(dependency);
          else options.outages.failed(dependency, new Error(`${dependency} did not answer its probe`), 'probe');
        }),
    );
  };
  const schedule = (): void => {
    if (stopped) return;
    timer = setTimeout(() => {
      void round().finally(schedule);
    }, intervalMs);
    // the watch never keeps a process alive on its own
    timer.unref();
  };
  schedule();
  return {
    stop() {
      stopped = true;
      clearTimeout(timer);
    },
  };
}
