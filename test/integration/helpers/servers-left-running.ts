/**
 * A test process that exits with its servers still running, as a parallel run's worker does when the run is over:
 * prints what it started (one JSON line), then exits without stopping anything.
 */
import { readFileSync } from 'node:fs';
import path from 'node:path';
import { startTestNats } from '../../helpers/nats.js';
import { startTestPostgres } from '../../helpers/postgres.js';

const nats = await startTestNats();
const postgres = await startTestPostgres();
const postmasterPid = Number.parseInt(readFileSync(path.join(postgres.dataDir, 'postmaster.pid'), 'utf8').split('\n')[0] ?? '', 10);
const started = { natsPort: nats.port, natsStore: nats.storeDir, postgresDataDir: postgres.dataDir, postmasterPid };
process.stdout.write(`${JSON.stringify(started)}\n`);
process.exit(0);
