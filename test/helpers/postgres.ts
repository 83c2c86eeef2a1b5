import { execFile, spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, chmodSync, existsSync, readFileSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir, userInfo } from 'node:os';
import path from 'node:path';
import { promisify } from 'node:util';
import pg from 'pg';
import { cleanUpAtExit } from './exit-cleanup.js';
import { freePort } from './ports.js';
import { appendOutput } from './process-log.js';

const run = promisify(execFile);

/** A private PostgreSQL server for the tests: its own data dir, socket dir and free port; stopped after. */
export interface TestPostgres {
  readonly port: number;
  readonly adminUrl: string;
  /** The server's data directory (inside the temporary directory the helper removes). */
  readonly dataDir: string;
  /** A fresh, empty database on this server. */
  createDatabase(prefix?: string): Promise<string>;
  /**
   * Stops the server and starts it again on the same data (fault tests): `immediate` (the default) aborts like a
   * crash, `fast` is a planned restart (clients get "terminating connection due to administrator command").
   */
  restart(mode?: ShutdownMode): Promise<void>;
  stopServer(mode?: ShutdownMode): Promise<void>;
  startServer(): Promise<void>;
  stop(): Promise<void>;
}

function postgresBin(): string {
  const root = '/usr/lib/postgresql';
  if (existsSync(root)) {
    const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
    for (const v of versions) {
      const bin = path.join(root, v, 'bin');
      if (existsSync(path.join(bin, 'initdb'))) return bin;
    }
  }
  return ''; // rely on PATH
}

const asRoot = userInfo().uid === 0;

/** `pg_ctl stop -m`: `fast` terminates the sessions and checkpoints; `immediate` aborts without a checkpoint. */
export type ShutdownMode = 'fast' | 'immediate';

/** Runs a PostgreSQL binary as the `postgres` user when we are root (initdb refuses root). */
async function runAsPostgres(binary: string, args: readonly string[]): Promise<void> {
  if (asRoot) {
    const quoted = [binary, ...args].map((a) => `'${a.replace(/'/g, `'\\''`)}'`).join(' ');
    await run('su', ['postgres', '-s', '/bin/sh', '-c', quoted]);
  } else {
    await run(binary, [...args]);
  }
}

let shared: Promise<TestPostgres> | null = null;

/** One server per test run, shared by the suites; each suite takes its own database. */
export function testPostgres(): Promise<TestPostgres> {
  shared ??= startTestPostgres();
  return shared;
}

export async function stopSharedPostgres(): Promise<void> {
  if (!shared) return;
  const server = await shared.catch(() => null);
  shared = null;
  await server?.stop();
}

export interface TestPostgresOptions {
  /**
   * Keep `synchronous_commit` on: a commit is in the WAL before it is acknowledged, so an immediate shutdown (a
   * crash) loses no acknowledged transaction, as on a real server. Off by default: faster, and enough for tests
   * that never crash the server.
   */
  readonly durableCommits?: boolean;
  /** Appends the server's whole log to this file, across restarts. */
  readonly logFile?: string;
}

export async function startTestPostgres(options: TestPostgresOptions = {}): Promise<TestPostgres> {
  const bin = postgresBin();
  const exe = (name: string) => (bin ? path.join(bin, name) : name);
  const dir = mkdtempSync(path.join(tmpdir(), 'gw-pg-'));
  chmodSync(dir, 0o777);
  const dataDir = path.join(dir, 'data');
  const socketDir = dir;
  const forgetAtExit = cleanUpAtExit(() => {
    if (server !== null && server.exitCode === null) killPostmaster(dataDir);
  }, dir);
  if (asRoot) await run('chown', ['postgres', dir]);
  await runAsPostgres(exe('initdb'), ['--no-sync', '-A', 'trust', '-U', 'postgres', '-D', dataDir]);
  const port = await freePort();
  const adminUrl = `postgresql://postgres@127.0.0.1:${port}/postgres`;
  let server: ChildProcess | null = null;

  async function startServer(): Promise<void> {
    const args = [
      '-D',
      dataDir,
      '-p',
      String(port),
      '-k',
      socketDir,
      '-h',
      '127.0.0.1',
      '-c',
      'fsync=off',
      '-c',
      `synchronous_commit=${options.durableCommits ? 'on' : 'off'}`,
      '-c',
      'full_page_writes=off',
      '-c',
      'max_connections=300',
    ];
    const command = asRoot ? 'su' : exe('postgres');
    const commandArgs = asRoot
      ? ['postgres', '-s', '/bin/sh', '-c', `exec '${exe('postgres')}' ${args.map((a) => `'${a}'`).join(' ')}`]
      : args;
    const proc = spawn(command, commandArgs, {
      stdio: ['ignore', options.logFile === undefined ? 'ignore' : 'pipe', options.logFile === undefined ? 'ignore' : 'pipe'],
    });
    server = proc;
    const append = appendOutput(options.logFile, `postgres started (pid ${String(proc.pid)})`);
    if (append) {
      proc.stdout?.on('data', append);
      proc.stderr?.on('data', append);
    }
    await waitUntilReady(adminUrl);
  }

  async function stopServer(mode: ShutdownMode = 'immediate'): Promise<void> {
    if (!server) return;
    const proc = server;
    server = null;
    await runAsPostgres(exe('pg_ctl'), ['-D', dataDir, '-m', mode, 'stop']).catch(() => undefined);
    if (proc.exitCode === null) await new Promise((resolve) => proc.once('exit', resolve));
  }

  await startServer();
  let counter = 0;

  return {
    port,
    adminUrl,
    dataDir,
    async createDatabase(prefix = 'test') {
      const name = `${prefix}_${process.pid}_${++counter}_${Date.now().toString(36)}`.toLowerCase().replace(/[^a-z0-9_]/g, '_');
      const client = new pg.Client({ connectionString: adminUrl });
      await client.connect();
      try {
        await client.query(`CREATE DATABASE ${name}`);
      } finally {
        await client.end();
      }
      return `postgresql://postgres@127.0.0.1:${port}/${name}`;
    },
    async restart(mode: ShutdownMode = 'immediate') {
      await stopServer(mode);
      await startServer();
    },
    stopServer,
    startServer,
    async stop() {
      await stopServer();
      rmSync(dir, { recursive: true, force: true });
      forgetAtExit();
    },
  };
}

/** The pid of the postmaster running on `dataDir`, from its pid file; null when there is none. */
export function postmasterPid(dataDir: string): number | null {
  const pidFile = path.join(dataDir, 'postmaster.pid');
  if (!existsSync(pidFile)) return null;
  const pid = Number.parseInt(readFileSync(pidFile, 'utf8').split('\n')[0] ?? '', 10);
  return Number.isInteger(pid) && pid > 0 ? pid : null;
}

/** Immediate shutdown of the server on `dataDir`, without waiting for it (the process is exiting). */
function killPostmaster(dataDir: string): void {
  const pid = postmasterPid(dataDir);
  if (pid !== null) process.kill(pid, 'SIGQUIT');
}

async function waitUntilReady(url: string): Promise<void> {
  const deadline = Date.now() + 20_000;
  for (;;) {
    const client = new pg.Client({ connectionString: url });
    try {
      await client.connect();
      await client.query('SELECT 1');
      await client.end();
      return;
    } catch (error) {
      await client.end().catch(() => undefined);
      if (Date.now() > deadline) throw error;
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  }
}
