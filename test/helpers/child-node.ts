import { spawn, type ChildProcess } from 'node:child_process';
import { createInterface } from 'node:readline';
import path from 'node:path';
import { fileURLToPath } from 'node:url';

const HERE = path.dirname(fileURLToPath(import.meta.url));

/** A TypeScript entry point run as a child process speaking JSON lines. */
export interface ChildNode {
  readonly process: ChildProcess;
  readonly messages: Record<string, unknown>[];
  send(command: unknown): void;
  waitFor(predicate: (message: Record<string, unknown>) => boolean, timeoutMs?: number): Promise<Record<string, unknown>>;
  /** Resolves once `condition` holds, checked after each line the child prints. */
  waitUntil(condition: () => boolean, timeoutMs?: number): Promise<void>;
  kill(signal?: NodeJS.Signals): Promise<void>;
}

export function startChild(script: string, env: Record<string, string>): ChildNode {
  const child = spawn(process.execPath, ['--import', 'tsx', path.join(HERE, script)], {
    env: { ...process.env, NODE_ENV: 'test', ...env },
    stdio: ['pipe', 'pipe', 'inherit'],
  });
  // a killed child leaves writes in flight: their EPIPE is expected
  child.stdin.on('error', () => undefined);
  const messages: Record<string, unknown>[] = [];
  const waiters = new Set<() => void>();
  createInterface({ input: child.stdout }).on('line', (line) => {
    try {
      messages.push(JSON.parse(line) as Record<string, unknown>);
    } catch {
      return;
    }
    for (const wake of waiters) wake();
  });
  const exited = new Promise<void>((resolve) => {
    child.once('exit', () => {
      resolve();
    });
  });
  return {
    process: child,
    messages,
    send(command) {
      child.stdin.write(`${JSON.stringify(command)}\n`);
    },
    waitFor(predicate, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          const found = messages.find(predicate);
          if (found) {
            waiters.delete(check);
            clearTimeout(timer);
            resolve(found);
          }
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error('child did not answer in time'));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    waitUntil(condition, timeoutMs = 30_000) {
      return new Promise((resolve, reject) => {
        const check = () => {
          if (!condition()) return;
          waiters.delete(check);
          clearTimeout(timer);
          resolve();
        };
        const timer = setTimeout(() => {
          waiters.delete(check);
          reject(new Error('child did not get there in time'));
        }, timeoutMs);
        waiters.add(check);
        check();
      });
    },
    async kill(signal = 'SIGKILL') {
      if (child.exitCode === null && child.signalCode === null) child.kill(signal);
      await exited;
    },
  };
}
