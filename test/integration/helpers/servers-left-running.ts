/**
 * A test process that ends with its servers still running and a temporary directory still there: prints what it
 * started (one JSON line), then either exits at once without stopping anything (as a parallel run's worker does when
 * the run is over), or, given `wait`, waits for whatever signal ends it (a terminal's Ctrl-C, the pool's SIGTERM).
 */
import { startTestNats } from '../../helpers/nats.js';
import { postmasterPid, startTestPostgres } from '../../helpers/postgres.js';
import { temporaryDir } from '../../helpers/temporary-dirs.js';

const nats = await startTestNats();
const postgres = await startTestPostgres();
const started = {
  natsPort: nats.port,
  natsStore: nats.storeDir,
  postgresDataDir: postgres.dataDir,
  postmasterPid: postmasterPid(postgres.dataDir) ?? 0,
  temporaryDir: temporaryDir('gw-left-'),
};
process.stdout.write(`${JSON.stringify(started)}\n`);
if (process.argv[2] === 'wait') setInterval(() => undefined, 60_000);
else process.exit(0);
