/**
 * Worker thread entry (see lease-renewal-worker.ts): renews the node's leases every tick over its own single
 * connection, whatever the main thread is doing, while the main thread still gives signs of life. It loads only
 * pg and the lease statements, so it is ready soon after the node starts.
 */
import { parentPort, workerData } from 'node:worker_threads';
import pg from 'pg';
import { isDatabaseConnectionError } from '../libraries/errors/database-connection-errors.js';
import { createSqlLeases } from '../libraries/persistence/sql/sql-leases.js';
import { createLeaseRenewal, type FromRenewalThread, type RenewalThreadData, type ToRenewalThread } from './lease-renewal.js';

const port = parentPort;
if (!port) throw new Error('lease-renewal-thread runs as a worker thread');
const data = workerData as RenewalThreadData;
const post = (message: FromRenewalThread): void => {
  port.postMessage(message);
};

// one connection, opened again by the next statement after a failure (a database restart)
const pool = new pg.Pool({ connectionString: data.connectionString, max: 1 });
pool.on('error', () => undefined);
const renewal = createLeaseRenewal({
  nodeId: data.nodeId,
  leases: createSqlLeases({
    query: async <R extends object>(text: string, params: readonly unknown[] = []) => (await pool.query<R>(text, params as unknown[])).rows,
    script: async (sql: string) => {
      await pool.query(sql);
    },
  }),
  ttlMs: data.ttlMs,
  stallToleranceMs: data.stallToleranceMs,
  now: () => performance.now(),
});

let running = false;
let silent = false;
const timer = setInterval(() => {
  if (running) return;
  running = true;
  renewal
    .renew()
    .then(
      (outcome) => {
        // told once per silence, not every tick
        if ('skipped' in outcome && !silent) post({ type: 'silent', silentMs: outcome.silentMs });
        silent = 'skipped' in outcome;
      },
      (error: unknown) => {
        post({ type: 'error', error, databaseUnavailable: isDatabaseConnectionError(error) });
      },
    )
    .finally(() => {
      running = false;
    });
}, data.tickMs);

port.on('message', (message: ToRenewalThread) => {
  if (message.type === 'hold') renewal.hold(message.held);
  else if (message.type === 'alive') renewal.alive();
  else {
    clearInterval(timer);
    void pool.end().finally(() => {
      port.close();
    });
  }
});
post({ type: 'ready' });
