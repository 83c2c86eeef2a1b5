import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, readFileSync, writeFileSync } from 'node:fs';
import { request } from 'node:http';
import path from 'node:path';
import { freePort } from './ports.js';
import { removeTemporaryDir, temporaryDir } from './temporary-dirs.js';

/**
 * A private Kannel for tests: bearerbox and smsbox on free ports, from a kannel.conf generated in a temp dir, with
 * one SMPP smsc (transceiver) towards a given message centre and one sendsms user. Logs stay in the temp dir until
 * stop() and are quoted in failures.
 */

export const BEARERBOX = '/usr/sbin/bearerbox';
export const SMSBOX = '/usr/sbin/smsbox';

export function kannelInstalled(): boolean {
  return existsSync(BEARERBOX) && existsSync(SMSBOX);
}

export interface KannelSmscTarget {
  readonly host: string;
  readonly port: number;
  readonly systemId: string;
  readonly password: string;
}

export interface TestKannelOptions {
  readonly smsc: KannelSmscTarget;
  /** smsc-id of the SMPP connection. Default `testsmsc`. */
  readonly smscId?: string;
  readonly username?: string;
  readonly password?: string;
  /**
   * smsbox `http-request-retry`: dlr-url calls that failed (connection refused, no answer, 5xx) are made again, at
   * most this many times. Kannel's own default is 0: a report the listener could not take is then lost.
   */
  readonly httpRequestRetry?: number;
  /** smsbox `http-queue-delay`, seconds between such retries. Default 1. */
  readonly httpQueueDelaySeconds?: number;
  /** `log-level` of both boxes and their `-v` (0 debug … 4 panic). Default 0: everything, for failure messages. */
  readonly logLevel?: number;
  /** Write bearerbox's and smsbox's access logs (one line per message). Default true. */
  readonly accessLogs?: boolean;
  /** The smsc's `max-pending-submits` (submit_sm in flight on the bind). Default 10. */
  readonly maxPendingSubmits?: number;
}

export interface TestKannel {
  readonly sendsmsHost: string;
  readonly sendsmsPort: number;
  readonly adminPort: number;
  readonly username: string;
  readonly password: string;
  readonly smscId: string;
  readonly dir: string;
  /** Process ids of bearerbox and smsbox. */
  readonly pids: { readonly bearerbox: number; readonly smsbox: number };
  /** bearerbox's status page (status.txt). */
  status(): Promise<string>;
  /** The last `lines` lines of every log, for failure messages. */
  logs(lines?: number): string;
  /** Resolves once the SMPP connection to the centre is online (bound). */
  waitForSmscOnline(timeoutMs?: number): Promise<void>;
  /** Stops smsbox then bearerbox (SIGTERM, then SIGKILL), removes the temp dir. */
  stop(): Promise<void>;
}

function httpGet(port: number, pathAndQuery: string, timeoutMs = 2_000): Promise<{ status: number; body: string }> {
  return new Promise((resolve, reject) => {
    const req = request({ host: '127.0.0.1', port, path: pathAndQuery, method: 'GET', timeout: timeoutMs, agent: false }, (res) => {
      const chunks: Buffer[] = [];
      res.on('data', (chunk: Buffer) => chunks.push(chunk));
      res.on('end', () => {
        resolve({ status: res.statusCode ?? 0, body: Buffer.concat(chunks).toString('utf8') });
      });
      res.on('error', reject);
    });
    req.on('timeout', () => req.destroy(new Error('timeout')));
    req.on('error', reject);
    req.end();
  });
}

const sleep = (ms: number): Promise<void> =>
  new Promise((resolve) => {
    setTimeout(resolve, ms);
  });

/** What `kannelConf` writes: ports, the message centre, the sendsms user and the boxes' logging. */
export interface KannelConfOptions {
  /** Where the logs go. */
  readonly dir: string;
  readonly adminPort: number;
  readonly smsboxPort: number;
  readonly sendsmsPort: number;
  readonly smsc: KannelSmscTarget;
  readonly smscId: string;
  readonly username: string;
  readonly password: string;
  readonly httpRequestRetry: number;
  readonly httpQueueDelaySeconds: number;
  readonly logLevel: number;
  readonly accessLogs: boolean;
  readonly maxPendingSubmits: number;
}

/**
 * kannel.conf: a core group (admin and smsbox ports on 127.0.0.1, internal DLR storage), one `smpp` smsc group
 * (transceiver) towards the centre, an smsbox group (sendsms port, dlr-url retries) and one sendsms-user.
 */
export function kannelConf(o: KannelConfOptions): string {
  const q = (value: string): string => `"${value.replace(/["\\]/g, '')}"`;
  const accessLog = (name: string): string => (o.accessLogs ? `access-log = ${q(path.join(o.dir, name))}\n` : '');
  return `group = core
admin-port = ${o.adminPort}
admin-password = ${q('admin-secret')}
status-password = ${q('status-secret')}
admin-interface = 127.0.0.1
admin-allow-ip = "127.0.0.1"
smsbox-port = ${o.smsboxPort}
smsbox-interface = 127.0.0.1
box-allow-ip = "127.0.0.1"
log-file = ${q(path.join(o.dir, 'bearerbox.log'))}
log-level = ${o.logLevel}
${accessLog('access.log')}dlr-storage = internal

group = smsc
smsc = smpp
smsc-id = ${q(o.smscId)}
host = ${q(o.smsc.host)}
port = ${o.smsc.port}
transceiver-mode = true
smsc-username = ${q(o.smsc.systemId)}
smsc-password = ${q(o.smsc.password)}
system-type = ""
reconnect-delay = 1
enquire-link-interval = 30
max-pending-submits = ${o.maxPendingSubmits}
source-addr-ton = 5
source-addr-npi = 0
dest-addr-ton = 1
dest-addr-npi = 1

group = smsbox
bearerbox-host = 127.0.0.1
bearerbox-port = ${o.smsboxPort}
sendsms-port = ${o.sendsmsPort}
sendsms-interface = 127.0.0.1
log-file = ${q(path.join(o.dir, 'smsbox.log'))}
log-level = ${o.logLevel}
${accessLog('smsbox-access.log')}http-request-retry = ${o.httpRequestRetry}
http-queue-delay = ${o.httpQueueDelaySeconds}

group = sendsms-user
username = ${q(o.username)}
password = ${q(o.password)}
max-messages = 10
concatenation = true
`;
}

function tail(file: string, lines: number): string {
  if (!existsSync(file)) return `(${path.basename(file)}: none)`;
  const all = readFileSync(file, 'utf8').split('\n');
  return `--- ${path.basename(file)} ---\n${all.slice(-lines).join('\n')}`;
}

function stopProcess(child: ChildProcess, graceMs: number): Promise<void> {
  if (child.exitCode !== null || child.signalCode !== null) return Promise.resolve();
  return new Promise((resolve) => {
    const kill = setTimeout(() => {
      child.kill('SIGKILL');
    }, graceMs);
    child.once('exit', () => {
      clearTimeout(kill);
      resolve();
    });
    child.kill('SIGTERM');
  });
}

export async function startTestKannel(options: TestKannelOptions): Promise<TestKannel> {
  const dir = temporaryDir('kannel-');
  const [adminPort, smsboxPort, sendsmsPort] = [await freePort(), await freePort(), await freePort()];
  const username = options.username ?? 'gateway';
  const password = options.password ?? 'sendsms-secret';
  const smscId = options.smscId ?? 'testsmsc';
  const confFile = path.join(dir, 'kannel.conf');
  const logLevel = options.logLevel ?? 0;
  writeFileSync(
    confFile,
    kannelConf({
      dir,
      adminPort,
      smsboxPort,
      sendsmsPort,
      smsc: options.smsc,
      smscId,
      username,
      password,
      httpRequestRetry: options.httpRequestRetry ?? 5,
      httpQueueDelaySeconds: options.httpQueueDelaySeconds ?? 1,
      logLevel,
      accessLogs: options.accessLogs ?? true,
      maxPendingSubmits: options.maxPendingSubmits ?? 10,
    }),
  );
  const children: ChildProcess[] = [];
  const launch = (binary: string, name: string): ChildProcess => {
    const out = path.join(dir, `${name}.out`);
    writeFileSync(out, '');
    const child = spawn(binary, ['-v', String(Math.max(1, logLevel)), confFile], { cwd: dir, stdio: ['ignore', 'pipe', 'pipe'] });
    const append = (chunk: Buffer): void => {
      writeFileSync(out, chunk, { flag: 'a' });
    };
    child.stdout.on('data', append);
    child.stderr.on('data', append);
    children.push(child);
    return child;
  };

  const logs = (lines = 40): string =>
    ['bearerbox.out', 'bearerbox.log', 'smsbox.out', 'smsbox.log', 'smsbox-access.log']
      .map((file) => tail(path.join(dir, file), lines))
      .join('\n');

  let stopped = false;
  const stop = async (): Promise<void> => {
    if (stopped) return;
    stopped = true;
    for (const child of [...children].reverse()) await stopProcess(child, 5_000);
    removeTemporaryDir(dir);
  };

  const status = async (): Promise<string> => (await httpGet(adminPort, `/status.txt?password=status-secret`)).body;

  const pids = { bearerbox: -1, smsbox: -1 };
  try {
    const bearerbox = launch(BEARERBOX, 'bearerbox');
    pids.bearerbox = bearerbox.pid ?? -1;
    // smsbox connects to bearerbox's smsbox port: start it once bearerbox listens
    await waitFor(
      async () => {
        if (bearerbox.exitCode !== null) throw new Error(`bearerbox exited with ${bearerbox.exitCode}`);
        await status();
        return true;
      },
      20_000,
      'bearerbox admin port',
    );
    const smsbox = launch(SMSBOX, 'smsbox');
    pids.smsbox = smsbox.pid ?? -1;
    await waitFor(
      async () => {
        if (smsbox.exitCode !== null) throw new Error(`smsbox exited with ${smsbox.exitCode}`);
        await httpGet(sendsmsPort, '/cgi-bin/sendsms');
        return true;
      },
      20_000,
      'smsbox sendsms port',
    );
  } catch (error) {
    const message = `${(error as Error).message}\n${logs()}`;
    await stop();
    throw new Error(message, { cause: error });
  }

  return {
    sendsmsHost: '127.0.0.1',
    sendsmsPort,
    adminPort,
    username,
    password,
    smscId,
    dir,
    pids,
    status,
    logs,
    async waitForSmscOnline(timeoutMs = 20_000): Promise<void> {
      try {
        await waitFor(
          async () => (await status()).split('\n').some((line) => line.trim().startsWith(`${smscId}[`) && line.includes('(online')),
          timeoutMs,
          'SMPP connection online',
        );
      } catch (error) {
        throw new Error(`${(error as Error).message}\n${await status().catch(() => '(no status)')}\n${logs()}`, { cause: error });
      }
    },
    stop,
  };
}

/** Polls `check` (a throw from it counts as not yet, except after the deadline) until it returns true. */
async function waitFor(check: () => Promise<boolean>, timeoutMs: number, what: string): Promise<void> {
  const deadline = Date.now() + timeoutMs;
  let last: unknown = null;
  for (;;) {
    try {
      if (await check()) return;
    } catch (error) {
      last = error;
      if (/exited/.test((error as Error).message)) throw error;
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last === null ? '' : ` (${(last as Error).message})`}`);
    await sleep(100);
  }
}
