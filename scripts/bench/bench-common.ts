/**
 * Shared pieces of the HTTP and pipeline benchmarks (scripts/bench/api-bench.ts, pipeline-bench.ts): the machine
 * line, the command line, number formatting, a logger that counts what the node reported, and bench phone numbers.
 */
import { spawn } from 'node:child_process';
import { createHash } from 'node:crypto';
import os from 'node:os';
import { fileURLToPath } from 'node:url';
import { createLogger, type Logger } from '../../src/libraries/logger/logger.js';

export const API_ROOT = '/api/v1/messaging/sms-api';

export function machineLine(): string {
  const cpus = os.cpus();
  return (
    `Machine: ${cpus.length} × ${cpus[0]?.model ?? 'cpu'}, ${Math.round(os.totalmem() / 2 ** 30)} GiB, Node ${process.version}; ` +
    `CPU calibration ${calibrationMs().toFixed(0)} ms (a fixed single-thread workload, best of 3, lower is faster)`
  );
}

/**
 * The same virtual machine runs faster or slower from hour to hour (the host's other tenants): a fixed workload of
 * the kind a node does (JSON round trips, hashing, small objects) timed now lets two runs' figures be compared.
 */
export function calibrationMs(): number {
  const record = { message_id: 'msg_0123456789abcdef', recipient_index: 7, status: 'delivered', at: '2026-11-22T08:04:24.527Z' };
  let best = Number.POSITIVE_INFINITY;
  for (let round = 0; round < 3; round++) {
    const started = process.hrtime.bigint();
    let checksum = 0;
    for (let i = 0; i < 100_000; i++) {
      const copy = JSON.parse(JSON.stringify({ ...record, recipient_index: i })) as { recipient_index: number };
      checksum += copy.recipient_index;
      if (i % 4 === 0) checksum += createHash('sha256').update(record.message_id).update(String(i)).digest()[0] ?? 0;
    }
    if (checksum < 0) throw new Error('unreachable');
    best = Math.min(best, Number(process.hrtime.bigint() - started) / 1e6);
  }
  return best;
}

/** `BENCH_X=1 npm run <script>` with the BENCH_* variables this run was given. */
export function commandLine(script: string): string {
  const vars = Object.entries(process.env)
    .filter(([name, value]) => name.startsWith('BENCH_') && value !== undefined)
    .sort(([a], [b]) => a.localeCompare(b))
    .map(([name, value]) => `${name}=${value ?? ''}`);
  return `Command: \`${[...vars, 'npm run', script].join(' ')}\``;
}

export function envNumber(name: string, fallback: number): number {
  const raw = process.env[name];
  if (raw === undefined || raw === '') return fallback;
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`${name} must be a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

export const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/** A warn-level logger that keeps a count and the first few lines, so a run can say whether the node complained. */
export function countingLogger(): { logger: Logger; count(): number; first(): readonly string[] } {
  let count = 0;
  const first: string[] = [];
  const logger = createLogger({
    level: 'warn',
    destination: {
      write(line: string) {
        count++;
        if (first.length < 3) first.push(line.trim().slice(0, 400));
      },
    },
  });
  return { logger, count: () => count, first: () => first };
}

/**
 * `n` distinct Vodacom DR Congo numbers (priced 0.02 by seedMerchant) whose last two digits are 00–88, which the
 * sandbox simulator always delivers (processing, accepted, enroute, delivered).
 */
export function deliverableNumbers(n: number, offset = 0): string[] {
  return Array.from({ length: n }, (_, k) => {
    const i = offset + k;
    return `+24381${String(Math.floor(i / 89)).padStart(5, '0')}${String(i % 89).padStart(2, '0')}`;
  });
}

export const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/** Percentile (0–100) of an ascending array, nearest rank. */
export function percentile(sorted: readonly number[], p: number): number {
  if (sorted.length === 0) return Number.NaN;
  const rank = Math.min(sorted.length - 1, Math.max(0, Math.ceil((p / 100) * sorted.length) - 1));
  return sorted[rank] ?? Number.NaN;
}

/**
 * Everything was stopped: exit once the event loop is empty, or after a few seconds if some component left a handle
 * open (a benchmark must not hang after printing its report).
 */
export function exitSoon(): void {
  setTimeout(() => {
    process.stderr.write('handles still open 5 s after the report; exiting\n');
    process.exit();
  }, 5_000).unref();
}

/** One command-line option of a benchmark, also readable from an environment variable. */
export interface BenchOptionSpec {
  readonly flag: string;
  readonly env: string;
  /** `boolean`: a bare flag; anything else takes a value. */
  readonly kind: string;
}

/**
 * `--flag value`, `--flag=value` and bare boolean flags over the environment variables of `specs`; unknown flags
 * fail with the usage; `--help` prints it and exits.
 */
export function parseBenchOptions(argv: readonly string[], specs: readonly BenchOptionSpec[], usage: string): Map<string, string> {
  const values = new Map<string, string>();
  for (const spec of specs) {
    const fromEnv = process.env[spec.env];
    if (fromEnv !== undefined && fromEnv !== '') values.set(spec.flag, fromEnv);
  }
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i] ?? '';
    if (arg === '--help' || arg === '-h') {
      console.log(usage);
      process.exit(0);
    }
    const match = /^--([a-z-]+)(?:=(.*))?$/.exec(arg);
    const spec = match ? specs.find((s) => s.flag === match[1]) : undefined;
    if (!match || !spec) throw new Error(`unknown argument ${JSON.stringify(arg)}\n${usage}`);
    if (spec.kind === 'boolean') {
      values.set(spec.flag, match[2] ?? '1');
      continue;
    }
    const value = match[2] ?? argv[++i];
    if (value === undefined) throw new Error(`--${spec.flag} needs a value\n${usage}`);
    values.set(spec.flag, value);
  }
  return values;
}

/** A positive number given to `--flag`, or a clear error. */
export function positiveOption(flag: string, raw: string): number {
  const value = Number(raw);
  if (!Number.isFinite(value) || value <= 0) throw new Error(`--${flag} must be a positive number, got ${JSON.stringify(raw)}`);
  return value;
}

/** The sandbox simulator connector in its own process (`src/carriers/simulator/simulator-main.ts`), as in production. */
export interface SimulatorProcess {
  readonly pid: number;
  stop(): Promise<void>;
}

/**
 * Starts the simulator connector against `natsUrl` with LOG_LEVEL=info and resolves once it logged that it is
 * consuming; SIMULATOR_* settings come from `env`. Its CPU counts under the benchmarks' "connector" figures.
 */
export async function startSimulatorProcess(natsUrl: string, env: Record<string, string> = {}): Promise<SimulatorProcess> {
  const entry = fileURLToPath(new URL('../../src/carriers/simulator/simulator-main.ts', import.meta.url));
  const child = spawn(process.execPath, ['--import', 'tsx', entry], {
    // the test settings the in-process simulator of the benchmarks used (5 ms between receipts)
    env: { ...process.env, NODE_ENV: 'test', NATS_URL: natsUrl, LOG_LEVEL: 'info', ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  let output = '';
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`the simulator connector did not start within 30 s:\n${output}`));
    }, 30_000);
    const read = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-8_000);
      if (output.includes('simulator connector ready')) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`the simulator connector exited:\n${output}`));
    });
  });
  return {
    pid: child.pid ?? -1,
    async stop() {
      if (child.exitCode === null) child.kill('SIGTERM');
      await exited;
    },
  };
}

/** Runs a command in a child process and resolves with what it printed on stdout; rejects with its stderr's tail when it fails. */
export async function runChildOutput(command: string, args: readonly string[]): Promise<string> {
  const child = spawn(command, args, { stdio: ['ignore', 'pipe', 'pipe'] });
  let out = '';
  let err = '';
  child.stdout.on('data', (chunk: Buffer) => {
    out += chunk.toString();
  });
  child.stderr.on('data', (chunk: Buffer) => {
    err = (err + chunk.toString()).slice(-4_000);
  });
  const code = await new Promise<number | null>((resolve, reject) => {
    child.once('error', reject);
    child.once('exit', resolve);
  });
  if (code !== 0) throw new Error(`${command} ${args[0] ?? ''} exited with ${code ?? 'a signal'}:\n${err}`);
  return out;
}
