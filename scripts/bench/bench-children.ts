/**
 * The helper processes of the SMPP benchmarks (bench:smpp, bench:kannel), each in a process of its own so that its
 * CPU is not the measured system's: the test message centre (smsc-process.ts), the merchant's HTTP endpoint
 * (webhook-receiver-process.ts), and `connector:smpp` (src/carriers/smpp/smpp-main.ts).
 */
import { fork, spawn, type ChildProcess } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import type { SmscReply, SmscRequest } from './smsc-process.ts';
import type { ReceivedWebhook, ReceiverMessage } from './webhook-receiver-process.js';

/** Resolves once `child` has exited (at once when it already has). */
export const exitOf = (child: ChildProcess): Promise<void> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve();
    else
      child.once('exit', () => {
        resolve();
      });
  });

/** A child process stopped by SIGTERM (then SIGKILL after 15 s), awaited. */
export async function stopChild(child: ChildProcess, exited: Promise<void>): Promise<void> {
  if (child.exitCode === null && child.signalCode === null) child.kill('SIGTERM');
  const guard = setTimeout(() => child.kill('SIGKILL'), 15_000);
  await exited;
  clearTimeout(guard);
}

export interface ReceiverProcess {
  /** `http://127.0.0.1:<port>/hooks/sms` */
  readonly url: string;
  close(): Promise<void>;
}

/**
 * The merchant's endpoint in a child process (scripts/bench/webhook-receiver-process.ts): 204 at once, every request
 * reported to `onArrival` with `at` on this process's performance.now() clock.
 */
export async function startReceiver(onArrival: (webhook: ReceivedWebhook, at: number) => void): Promise<ReceiverProcess> {
  const child = fork(fileURLToPath(new URL('./webhook-receiver-process.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'inherit', 'inherit', 'ipc'],
  });
  const exited = exitOf(child);
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    child.on('message', (message: ReceiverMessage) => {
      if (message.kind === 'listening') {
        resolve({
          url: message.url,
          async close() {
            if (child.connected) child.disconnect();
            await exited;
          },
        });
        return;
      }
      for (const webhook of message.webhooks) onArrival(webhook, webhook.at - performance.timeOrigin);
    });
  });
}

export interface SmscProcess {
  readonly port: number;
  ask<K extends SmscReply['kind']>(kind: K): Promise<Extract<SmscReply, { kind: K }>>;
  stop(): Promise<void>;
}

/** scripts/bench/smsc-process.ts in its own process (account `smsc` / `secret`); resolves with its port. */
export async function startSmsc(): Promise<SmscProcess> {
  const child = fork(fileURLToPath(new URL('./smsc-process.ts', import.meta.url)), [], {
    execArgv: ['--import', 'tsx'],
    stdio: ['ignore', 'pipe', 'inherit', 'ipc'],
  });
  const exited = exitOf(child);
  const port = await new Promise<number>((resolve, reject) => {
    let out = '';
    child.once('error', reject);
    void exited.then(() => {
      reject(new Error(`the test SMSC exited before listening: ${out}`));
    });
    child.stdout?.on('data', (chunk: Buffer) => {
      out += chunk.toString();
      const match = /\{"port":(\d+)\}/.exec(out);
      if (match) resolve(Number(match[1]));
    });
  });
  return {
    port,
    ask(kind) {
      return new Promise((resolve) => {
        const listener = (reply: SmscReply): void => {
          if (reply.kind !== kind) return;
          child.off('message', listener);
          resolve(reply as Extract<SmscReply, { kind: typeof kind }>);
        };
        child.on('message', listener);
        child.send({ kind } satisfies SmscRequest);
      });
    },
    stop: () => stopChild(child, exited),
  };
}

export interface ConnectorProcess {
  readonly pid: number;
  stop(): Promise<void>;
}

export interface SmppConnectorOptions {
  readonly natsUrl: string;
  /** The test SMSC's port on 127.0.0.1. */
  readonly port: number;
  readonly binds: number;
  readonly window: number;
  /** CONNECTOR_CONCURRENCY; empty: the connector's default. */
  readonly connectorConcurrency?: string;
  /** Extra environment (NATS_NAMESPACE, ...). */
  readonly env?: Readonly<Record<string, string>>;
  /** Run it from the compiled build (`dist/`, as the image does) instead of the sources under tsx. */
  readonly fromBuild?: boolean;
}

/**
 * `npm run connector:smpp` taking the sandbox's `simulator` slug, against the centre on `port`; resolves once it
 * logged that it consumes and every bind is up. BENCH_CONNECTOR_ARGS (space-separated) are added to its `node`
 * arguments (`--cpu-prof --cpu-prof-dir=…`, say).
 */
export async function startSmppConnector(options: SmppConnectorOptions): Promise<ConnectorProcess> {
  const entry = fileURLToPath(
    new URL(options.fromBuild ? '../../dist/carriers/smpp/smpp-main.js' : '../../src/carriers/smpp/smpp-main.ts', import.meta.url),
  );
  const concurrency = options.connectorConcurrency ?? '';
  const nodeArgs = (process.env.BENCH_CONNECTOR_ARGS ?? '').split(' ').filter((arg) => arg !== '');
  const child = spawn(process.execPath, [...nodeArgs, ...(options.fromBuild ? [] : ['--import', 'tsx']), entry], {
    env: {
      ...process.env,
      NATS_URL: options.natsUrl,
      CONNECTOR_CARRIER: 'simulator',
      CONNECTOR_NAME: 'bench-smpp',
      LOG_LEVEL: 'info',
      SMPP_HOST: '127.0.0.1',
      SMPP_PORT: String(options.port),
      SMPP_SYSTEM_ID: 'smsc',
      SMPP_PASSWORD: 'secret',
      SMPP_BINDS: String(options.binds),
      SMPP_WINDOW: String(options.window),
      SMPP_MAX_SUBMITS_PER_SECOND: '100000',
      ...(concurrency === '' ? {} : { CONNECTOR_CONCURRENCY: concurrency }),
      ...options.env,
    },
    stdio: ['ignore', 'pipe', 'pipe'],
  });
  const exited = exitOf(child);
  let output = '';
  let binds = 0;
  await new Promise<void>((resolve, reject) => {
    const timer = setTimeout(() => {
      reject(new Error(`connector:smpp did not start within 60 s:\n${output}`));
    }, 60_000);
    let ready = false;
    const read = (chunk: Buffer): void => {
      const text = chunk.toString();
      output = (output + text).slice(-20_000);
      binds += text.split('"smpp bind up"').length - 1;
      if (!ready && output.includes('connector ready')) ready = true;
      if (ready && binds >= options.binds) {
        clearTimeout(timer);
        resolve();
      }
    };
    child.stdout.on('data', read);
    child.stderr.on('data', read);
    void exited.then(() => {
      clearTimeout(timer);
      reject(new Error(`connector:smpp exited:\n${output}`));
    });
  });
  return { pid: child.pid ?? -1, stop: () => stopChild(child, exited) };
}
