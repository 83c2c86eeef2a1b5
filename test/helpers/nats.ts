import { spawn, type ChildProcess } from 'node:child_process';
import { mkdtempSync, rmSync } from 'node:fs';
import { connect as netConnect } from 'node:net';
import { tmpdir } from 'node:os';
import path from 'node:path';
import { cleanUpAtExit } from './exit-cleanup.js';
import { freePort } from './ports.js';
import { appendOutput } from './process-log.js';

/** A private nats-server with JetStream for the tests: its own store dir and free port; stopped after. */
export interface TestNats {
  readonly url: string;
  readonly port: number;
  readonly storeDir: string;
  /** `http://127.0.0.1:<port>` of the server's monitoring endpoint (`/varz`, `/jsz`, ...); null unless started with `monitoring`. */
  readonly monitorUrl: string | null;
  /** Stops the server (SIGTERM) and starts it again on the same port and store (fault tests). */
  restart(): Promise<void>;
  /** Stops the server (SIGTERM), keeping its store, until `startServer` (outage tests). */
  stopServer(): Promise<void>;
  /** Starts it again on the same port and store. */
  startServer(): Promise<void>;
  /** Kills the server (SIGKILL by default, as a crash), keeping its store, until `startServer`. */
  kill(signal?: NodeJS.Signals): Promise<void>;
  stop(): Promise<void>;
}

let shared: Promise<TestNats> | null = null;

/** One server per test run, shared by the suites; each suite uses its own subjects or cleans its streams. */
export function testNats(): Promise<TestNats> {
  shared ??= startTestNats();
  return shared;
}

export async function stopSharedNats(): Promise<void> {
  if (!shared) return;
  const server = await shared.catch(() => null);
  shared = null;
  await server?.stop();
}

export interface TestNatsOptions {
  /** Appends the server's whole log to this file, across restarts. */
  readonly logFile?: string;
  /** Also serve the monitoring endpoint (`-m`) on a free port of 127.0.0.1, across restarts (`monitorUrl`). */
  readonly monitoring?: boolean;
  /** A configuration file for the server (`-c`), e.g. the shipped `deploy/nats/nats-server.conf`; the flags still set port and store. */
  readonly configFile?: string;
}

export async function startTestNats(options: TestNatsOptions = {}): Promise<TestNats> {
  const storeDir = mkdtempSync(path.join(tmpdir(), 'gw-nats-'));
  const port = await freePort();
  const monitorPort = options.monitoring === true ? await freePort() : null;
  let server: ChildProcess | null = null;
  let output = '';
  const forgetAtExit = cleanUpAtExit(() => server?.kill('SIGKILL'), storeDir);

  async function startServer(): Promise<void> {
    output = '';
    const args = [
      ...(options.configFile === undefined ? [] : ['-c', options.configFile]),
      '-js',
      '-sd',
      storeDir,
      '-p',
      String(port),
      '-a',
      '127.0.0.1',
      ...(monitorPort === null ? [] : ['-m', String(monitorPort)]),
    ];
    const proc = spawn('nats-server', args, { stdio: ['ignore', 'pipe', 'pipe'] });
    server = proc;
    // keep the tail of the log for the error message if it never comes up
    const append = appendOutput(options.logFile, `nats-server started (pid ${String(proc.pid)})`);
    const keep = (chunk: Buffer): void => {
      output = (output + chunk.toString()).slice(-4_000);
      append?.(chunk);
    };
    proc.stdout.on('data', keep);
    proc.stderr.on('data', keep);
    const exited = new Promise<never>((_, reject) => {
      proc.once('exit', (code) => {
        reject(new Error(`nats-server exited with ${code ?? 'a signal'}:\n${output}`));
      });
      proc.once('error', reject);
    });
    exited.catch(() => undefined);
    await Promise.race([waitForPort(port, 10_000), exited]);
    // JetStream is ready shortly after the port; the server logs this line once it is
    await Promise.race([waitFor(() => output.includes('Server is ready'), 10_000), exited]);
  }

  async function stopServer(signal: NodeJS.Signals = 'SIGTERM'): Promise<void> {
    const proc = server;
    server = null;
    if (!proc || proc.exitCode !== null || proc.signalCode !== null) return;
    const exited = new Promise((resolve) => proc.once('exit', resolve));
    proc.kill(signal);
    const killer = setTimeout(() => proc.kill('SIGKILL'), 10_000);
    await exited;
    clearTimeout(killer);
  }

  await startServer();
  return {
    url: `nats://127.0.0.1:${port}`,
    port,
    storeDir,
    monitorUrl: monitorPort === null ? null : `http://127.0.0.1:${monitorPort}`,
    async restart() {
      await stopServer();
      await startServer();
    },
    stopServer: () => stopServer(),
    startServer,
    kill: (signal = 'SIGKILL') => stopServer(signal),
    async stop() {
      await stopServer();
      rmSync(storeDir, { recursive: true, force: true });
      forgetAtExit();
    },
  };
}

async function waitFor(condition: () => boolean, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  while (!condition()) {
    if (Date.now() > deadline) throw new Error('timed out waiting for nats-server');
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}

async function waitForPort(port: number, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  for (;;) {
    const open = await new Promise<boolean>((resolve) => {
      const socket = netConnect(port, '127.0.0.1');
      socket.once('connect', () => {
        socket.destroy();
        resolve(true);
      });
      socket.once('error', () => {
        resolve(false);
      });
    });
    if (open) return;
    if (Date.now() > deadline) throw new Error(`nats-server did not open port ${port}`);
    await new Promise((resolve) => setTimeout(resolve, 20));
  }
}
