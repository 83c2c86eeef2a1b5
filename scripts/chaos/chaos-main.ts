/**
 * npm run chaos — faults under load on a real 3-node cluster, then what they cost (scripts/chaos/chaos-run.ts).
 *
 *   npm run chaos                                  the short profile (also run by npm test)
 *   npm run chaos -- --profile long                the long one (docs/reliability.md); or CHAOS_PROFILE=long
 *   npm run chaos -- --faults nats-kill,postgres-restart
 *                                                  only these faults, in this order; or CHAOS_FAULTS=...
 *   npm run chaos -- --keep /var/tmp/chaos         keep every process's log under <dir>/chaos-<run id>, whatever
 *                                                  the outcome; or CHAOS_KEEP_DIR=... (by default the logs go to a
 *                                                  directory under the OS temp dir, kept only when a check failed)
 *
 * Faults: node-kill, node-freeze, nats-kill, postgres-restart, postgres-outage, simulator-kill. Needs the PostgreSQL
 * server binaries and nats-server, like npm test. Exit 0 when every verification held, 1 when one failed, 2 when the
 * run itself could not be made.
 */
import { parseBenchOptions, type BenchOptionSpec } from '../bench/bench-common.js';
import { parseFaultList, profileNamed } from './chaos-profiles.js';
import { formatReport } from './chaos-report.js';
import { runChaos } from './chaos-run.js';

const USAGE =
  'usage: npm run chaos -- [--profile short|long] [--faults node-kill,node-freeze,nats-kill,postgres-restart,postgres-outage,simulator-kill] [--keep <dir>]';
const SPECS: readonly BenchOptionSpec[] = [
  { flag: 'profile', env: 'CHAOS_PROFILE', kind: 'value' },
  { flag: 'faults', env: 'CHAOS_FAULTS', kind: 'value' },
  { flag: 'keep', env: 'CHAOS_KEEP_DIR', kind: 'value' },
];

async function main(): Promise<number> {
  const given = parseBenchOptions(process.argv.slice(2), SPECS, USAGE);
  const base = profileNamed(given.get('profile') ?? 'short');
  const faults = given.get('faults');
  const profile = faults === undefined ? base : { ...base, faults: parseFaultList(faults) };
  const args = [...(given.has('profile') ? ['--profile', base.name] : []), ...(faults === undefined ? [] : ['--faults', faults])];
  const command = `npm run chaos${args.length > 0 ? ` -- ${args.join(' ')}` : ''}`;
  const keepDir = given.get('keep');
  const result = await runChaos({
    profile,
    log: (line) => process.stderr.write(`${new Date().toISOString().slice(11, 19)} ${line}\n`),
    ...(keepDir === undefined ? {} : { keepDir }),
  });
  console.log(formatReport(result, command));
  return result.verifications.every((v) => v.ok) ? 0 : 1;
}

main().then(
  (code) => {
    process.exit(code);
  },
  (error: unknown) => {
    process.stderr.write(`chaos run failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    process.exit(2);
  },
);
