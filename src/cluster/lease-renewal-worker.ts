import type { Config } from '../libraries/config/config.js';
import type { SqlExecutor } from '../libraries/persistence/sql/sql-executor.js';
import { renewalTickMs, type LeaseRenewer } from './shard-manager.js';
import type { FromRenewalThread, HeldLease, RenewalThreadData, ToRenewalThread } from './lease-renewal.js';
import { DependencyUnavailableError } from '../libraries/errors/internal-errors.js';
import { spawnModuleThread, within } from '../libraries/lifecycle/module-thread.js';

export interface LeaseRenewalWorkerOptions extends RenewalThreadData {
  /** A renewal that failed, or the main thread found silent past the tolerance (its leases then expire). */
  readonly onError: (error: unknown) => void;
}

/** How long a stopping renewal thread may take to close its connection before it is terminated. */
const STOP_GRACE_MS = 2_000;

/** How long the renewal thread may take to start; past it the node goes on renewing from its main thread alone. */
const READY_WITHIN_MS = 15_000;

/**
 * Starts the node's lease renewal in a worker thread (lease-renewal.ts), resolved once the thread is ready, and keeps
 * it informed: the leases held after each gain or loss, and a sign of life from this thread's event loop every half
 * tick. The worker does not keep the process alive; a process that dies or is frozen takes it along, so its leases
 * expire as before.
 */
export async function startLeaseRenewalWorker(options: LeaseRenewalWorkerOptions): Promise<LeaseRenewer> {
  const { onError, ...data } = options;
  const worker = spawnModuleThread(import.meta.url, 'lease-renewal-thread', data);
  worker.unref();
  let exited = false;
  const exit = new Promise<void>((resolve) => {
    worker.once('exit', () => {
      exited = true;
      resolve();
    });
  });
  let ready = (): void => undefined;
  const readiness = new Promise<void>((resolve) => {
    ready = resolve;
  });
  worker.on('error', onError);
  worker.on('message', (message: FromRenewalThread) => {
    if (message.type === 'ready') ready();
    else if (message.type === 'error')
      onError(message.databaseUnavailable ? new DependencyUnavailableError('database', message.error) : message.error);
    else onError(new Error(`main thread silent for ${Math.round(message.silentMs)} ms: its leases are no longer renewed`));
  });
  const send = (message: ToRenewalThread): void => {
    if (!exited) worker.postMessage(message);
  };

  const started = await within(READY_WITHIN_MS, Promise.race([readiness.then(() => true), exit.then(() => false)]));
  if (started !== true) {
    await worker.terminate();
    throw new Error(
      started === false
        ? 'the lease renewal thread exited as it started'
        : `the lease renewal thread was not ready within ${READY_WITHIN_MS} ms`,
    );
  }
  const beat = setInterval(
    () => {
      send({ type: 'alive' });
    },
    Math.max(50, Math.floor(data.tickMs / 2)),
  );
  beat.unref();
  return {
    hold(held: readonly HeldLease[]) {
      send({ type: 'hold', held });
    },
    async stop() {
      clearInterval(beat);
      send({ type: 'stop' });
      if ((await within(STOP_GRACE_MS, exit)) === 'late') await worker.terminate();
    },
  };
}

/** The node's renewal thread on its PostgreSQL database, as the shard manager's `renewer`. */
export function leaseRenewerOn(
  sql: SqlExecutor,
  nodeId: string,
  cluster: Config['cluster'],
  onError: (error: unknown) => void,
): () => Promise<LeaseRenewer> {
  return async () =>
    await startLeaseRenewalWorker({
      connectionString: await sql.connectionString(),
      nodeId,
      ttlMs: cluster.leaseTtlMs,
      tickMs: renewalTickMs(cluster.leaseTtlMs),
      stallToleranceMs: cluster.stallToleranceMs,
      onError,
    });
}
