/**
 * Worker thread entry (see lease-renewal-worker.ts): renews the node's leases every tick over its own single
 * connection, whatever the main thread is doing, while the main thread still gives signs of life.
 */
import { parentPort, workerData } from 'node:worker_threads';
import { connectPostgres } from '../libraries/persistence/sql/sql-executor.js';
import { createSqlLeases } from '../libraries/persistence/sql/sql-leases.js';
import { createLeaseRenewal, type FromRenewalThread, type RenewalThreadData, type ToRenewalThread } from './lease-renewal.js';

const port = parentPort;
if (!port) throw new Error('lease-renewal-thread runs as a worker thread');
const data = workerData as RenewalThreadData;
const post = (message: FromRenewalThread): void => {
  port.postMessage(message);
};

const db = await connectPostgres({ connectionString: data.connectionString, poolSize: 1 });
const renewal = createLeaseRenewal({
  nodeId: data.nodeId,
  leases: createSqlLeases(db),
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
        post({ type: 'error', error });
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
    void db.close().finally(() => {
      port.close();
    });
  }
});
