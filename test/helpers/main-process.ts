import { spawn, type ChildProcess } from 'node:child_process';
import { request } from 'node:http';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../..');

export interface Exit {
  readonly code: number | null;
  readonly signal: NodeJS.Signals | null;
  /** `Date.now()` when it exited. */
  readonly at: number;
}

/** `src/main.ts` as operators run it (`npm start`), in a child process; its JSON log lines are collected. */
export interface MainProcess {
  readonly child: ChildProcess;
  /** Every stdout line, as printed. */
  readonly lines: readonly string[];
  /** The stdout lines that are JSON (the logs). */
  readonly logs: readonly Record<string, unknown>[];
  /** stderr, as printed. */
  readonly stderr: () => string;
  waitForLog(predicate: (line: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  readonly exited: Promise<Exit>;
  /**
   * Resolves once stdout is closed: every process writing to it has exited (with `npm start`, npm may exit before
   * the node it started).
   */
  readonly outputClosed: Promise<void>;
  signal(signal: NodeJS.Signals): void;
  /** Sends `signal` to the child's whole process group, as a terminal's Ctrl-C or systemd do (`detached` only). */
  signalGroup(signal: NodeJS.Signals): void;
  /** SIGKILL when still running (cleanup); the whole process group when `detached`. */
  kill(): Promise<void>;
}

/** The command line of `startMain`. */
export interface MainCommand {
  /** The executable: node (`process.execPath`) unless given, e.g. `npm`. */
  readonly file?: string;
  readonly argv: readonly string[];
  readonly cwd: string;
  /** Its own process group, led by the child (so the group can be signalled as a whole). */
  readonly detached?: boolean;
}

/**
 * Starts `node --import tsx src/main.ts` (or another node command line, e.g. the built `dist/main.js` in a runtime
 * directory) with `env` over a clean profile: NODE_ENV is unset (config/default.json applies) unless `env` sets it.
 */
/** A SECRETS_KEY for server-mode processes started without the test profile (a test value, sealing nothing real). */
export const TEST_SECRETS_KEY = Buffer.alloc(32, 7).toString('base64');

/**
 * The environment of a server-mode node started as operators start it, on the given database and NATS: free ports,
 * info logs, no demo merchant; `extra` adds or overrides settings.
 */
export function serverNodeEnvironment(
  where: { readonly databaseUrl: string; readonly natsUrl: string; readonly nodeId: string },
  extra: Readonly<Record<string, string>> = {},
): Record<string, string> {
  return {
    GATEWAY_MODE: 'server',
    DATABASE_URL: where.databaseUrl,
    NATS_URL: where.natsUrl,
    HOST: '127.0.0.1',
    PORT: '0',
    METRICS_PORT: '0',
    NODE_ID: where.nodeId,
    SECRETS_KEY: TEST_SECRETS_KEY,
    SEED_DEMO_MERCHANT: 'false',
    LOG_LEVEL: 'info',
    ...extra,
  };
}

export function startMain(
  env: Record<string, string>,
  command: MainCommand = { argv: ['--import', 'tsx', path.join(ROOT, 'src/main.ts')], cwd: ROOT },
): MainProcess {
  const inherited = Object.fromEntries(Object.entries(process.env).filter(([name]) => name !== 'NODE_ENV'));
  const detached = command.detached ?? false;
  const child = spawn(command.file ?? process.execPath, [...command.argv], {
    cwd: command.cwd,
    env: { ...inherited, ...env },
    stdio: ['ignore', 'pipe', 'pipe'],
    detached,
  });
  const outputClosed = new Promise<void>((resolve) => {
    child.stdout.once('close', () => {
      resolve();
    });
  });
  const signalGroup = (signal: NodeJS.Signals): void => {
    if (!detached || child.pid === undefined) throw new Error('only a detached child leads a process group');
    try {
      process.kill(-child.pid, signal);
    } catch (error) {
      // the whole group has exited
      if ((error as NodeJS.ErrnoException).code !== 'ESRCH') throw error;
    }
  };
  const lines: string[] = [];
  const logs: Record<string, unknown>[] = [];
  let stderr = '';
  const waiters = new Set<() => void>();
  child.stderr.on('data', (chunk: Buffer) => {
    stderr = (stderr + chunk.toString()).slice(-20_000);
  });
  createInterface({ input: child.stdout }).on('line', (line) => {
    lines.push(line);
    try {
      const parsed: unknown = JSON.parse(line);
      if (typeof parsed === 'object' && parsed !== null) logs.push(parsed as Record<string, unknown>);
    } catch {
      // the sandbox key line is plain text
    }
    for (const wake of [...waiters]) wake();
  });
  const exited = new Promise<Exit>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal, at: Date.now() });
      for (const wake of [...waiters]) wake();
    });
  });
  return {
    child,
    lines,
    logs,
    stderr: () => stderr,
    waitForLog(predicate, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = (): void => {
          const found = logs.find(predicate);
          if (found) {
            finish();
            resolve(found);
          } else if (child.exitCode !== null || child.signalCode !== null) {
            finish();
            reject(
              new Error(`main exited (${child.exitCode ?? child.signalCode}) before the awaited log line:\n${lines.join('\n')}\n${stderr}`),
            );
          }
        };
        const timer = setTimeout(() => {
          finish();
          reject(new Error(`no such log line within ${timeoutMs} ms:\n${lines.join('\n')}\n${stderr}`));
        }, timeoutMs);
        const finish = (): void => {
          waiters.delete(check);
          clearTimeout(timer);
        };
        waiters.add(check);
        check();
      });
    },
    exited,
    outputClosed,
    signal(signal) {
      child.kill(signal);
    },
    signalGroup,
    async kill() {
      if (detached) {
        signalGroup('SIGKILL');
        await Promise.all([exited, outputClosed]);
        return;
      }
      if (child.exitCode === null && child.signalCode === null) child.kill('SIGKILL');
      await exited;
    },
  };
}

export interface HttpOutcome {
  /** null when the request got no response (connection refused or reset). */
  readonly status: number | null;
  readonly body: string;
  readonly error: string | null;
  /** `Date.now()` when the response ended or the request failed. */
  readonly at: number;
}

/**
 * One request on its own connection (no keep-alive pool), so a test sees exactly what the server did with it: an
 * answer, or a refused or reset connection.
 */
export function httpCall(
  url: string,
  init: { method?: string; headers?: Record<string, string>; json?: unknown } = {},
): Promise<HttpOutcome> {
  const body = init.json === undefined ? undefined : JSON.stringify(init.json);
  return new Promise((resolve) => {
    let settled = false;
    const settle = (outcome: Omit<HttpOutcome, 'at'>): void => {
      if (settled) return;
      settled = true;
      resolve({ ...outcome, at: Date.now() });
    };
    const req = request(
      url,
      {
        method: init.method ?? 'GET',
        agent: false,
        headers: {
          connection: 'close',
          ...(body === undefined ? {} : { 'content-type': 'application/json', 'content-length': String(Buffer.byteLength(body)) }),
          ...init.headers,
        },
      },
      (res) => {
        const chunks: Buffer[] = [];
        const text = (): string => Buffer.concat(chunks).toString('utf8');
        res.on('data', (chunk: Buffer) => chunks.push(chunk));
        res.on('end', () => {
          settle(
            res.complete
              ? { status: res.statusCode ?? null, body: text(), error: null }
              : { status: null, body: text(), error: 'incomplete response' },
          );
        });
        res.on('error', (error) => {
          settle({ status: null, body: text(), error: `response: ${error.message}` });
        });
        res.on('close', () => {
          settle(
            res.complete
              ? { status: res.statusCode ?? null, body: text(), error: null }
              : { status: null, body: text(), error: 'incomplete response' },
          );
        });
      },
    );
    req.on('error', (error: NodeJS.ErrnoException) => {
      settle({ status: null, body: '', error: error.code ?? error.message });
    });
    req.end(body);
  });
}
