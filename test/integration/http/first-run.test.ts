import { spawn, type ChildProcess } from 'node:child_process';
import { existsSync, mkdtempSync } from 'node:fs';
import path from 'node:path';
import { createInterface } from 'node:readline';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import { describeSettings } from '../../../src/libraries/config/config.js';
import { API_ROOT, call } from '../../helpers/http-fixture.js';
import { freePort } from '../../helpers/ports.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

/*
 * The first-run experience, as a new user gets it: `npm start` (node --import tsx src/main.ts) in an empty directory, no
 * configuration but a port, a data directory and a log level. The process prints a sandbox key once, serves it,
 * stops cleanly on SIGTERM, and on the next start over the same data prints nothing new and still knows the key.
 */

const REPO = fileURLToPath(new URL('../../../', import.meta.url));
const MAIN = path.join(REPO, 'src', 'main.ts');
// resolved from the repository: the child's working directory is an empty temporary one
const TSX = import.meta.resolve('tsx');
const KEY_LINE = /^Sandbox API key: (sk_test_[0-9A-Za-z]{32})$/;
const POLL_MS = 50;

/** The environment without any setting of the gateway (nor NODE_ENV): only what the test gives counts. */
function cleanEnvironment(extra: Record<string, string>): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = { ...process.env };
  for (const setting of describeSettings()) Reflect.deleteProperty(env, setting.env);
  Reflect.deleteProperty(env, 'NODE_ENV');
  return { ...env, ...extra };
}

interface Started {
  readonly child: ChildProcess;
  readonly stdout: string[];
  readonly stderr: () => string;
  readonly exited: Promise<{ code: number | null; signal: NodeJS.Signals | null }>;
}

function start(cwd: string, env: Record<string, string>): Started {
  const child = spawn(process.execPath, ['--import', TSX, MAIN], { cwd, env: cleanEnvironment(env), stdio: ['ignore', 'pipe', 'pipe'] });
  const stdout: string[] = [];
  let stderr = '';
  createInterface({ input: child.stdout }).on('line', (line) => stdout.push(line));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  const exited = new Promise<{ code: number | null; signal: NodeJS.Signals | null }>((resolve) => {
    child.once('exit', (code, signal) => {
      resolve({ code, signal });
    });
  });
  return { child, stdout, stderr: () => stderr, exited };
}

/** Resolves with `probe()`'s value once it is not undefined; polls every POLL_MS; fails if the child exits first. */
async function until<T>(
  what: string,
  started: Started,
  timeoutMs: number,
  probe: () => Promise<T | undefined> | T | undefined,
): Promise<T> {
  const deadline = Date.now() + timeoutMs;
  const state: { exit: { code: number | null; signal: NodeJS.Signals | null } | null } = { exit: null };
  void started.exited.then((e) => (state.exit = e));
  for (;;) {
    const value = await probe();
    if (value !== undefined) return value;
    if (state.exit) throw new Error(`${what}: the process exited (${JSON.stringify(state.exit)}); stderr: ${started.stderr()}`);
    if (Date.now() > deadline)
      throw new Error(`${what}: not within ${timeoutMs} ms; stdout: ${started.stdout.join('\n')}; stderr: ${started.stderr()}`);
    await new Promise((resolve) => setTimeout(resolve, POLL_MS));
  }
}

function keyLines(started: Started): string[] {
  return started.stdout.filter((line) => line.startsWith('Sandbox API key'));
}

async function healthy(base: string): Promise<true | undefined> {
  try {
    return (await call(`${base}${API_ROOT}/health`)).status === 200 ? true : undefined;
  } catch {
    return undefined; // not listening yet
  }
}

async function exitWithin(started: Started, ms: number): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`the process did not exit within ${ms} ms; stderr: ${started.stderr()}`));
    }, ms);
  });
  try {
    return await Promise.race([started.exited, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

describe('first run of `npm start` in an empty directory', function () {
  this.timeout(60_000);

  let dir: string;
  let dataDir: string;
  let base: string;
  let env: Record<string, string>;
  let apiKey: string;
  let messageId: string;
  const children: Started[] = [];

  before(async () => {
    dir = temporaryDir('gw-first-run-');
    dataDir = path.join(dir, 'data');
    const port = await freePort();
    base = `http://127.0.0.1:${port}`;
    env = { PORT: String(port), DATA_DIR: dataDir, LOG_LEVEL: 'warn' };
  });

  after(async () => {
    for (const started of children) {
      if (started.child.exitCode === null && started.child.signalCode === null) {
        started.child.kill('SIGKILL');
        await started.exited;
      }
    }
    removeTemporaryDir(dir);
  });

  it('when it starts on a fresh data directory, then it prints one sandbox key line and serves GET /health 200', async () => {
    const first = start(dir, env);
    children.push(first);
    const line = await until('the key line', first, 45_000, () => first.stdout.find((l) => KEY_LINE.test(l)));
    apiKey = KEY_LINE.exec(line)![1]!;
    await until('GET /health 200', first, 45_000, () => healthy(base));
    expect(keyLines(first)).to.deep.equal([`Sandbox API key: ${apiKey}`]);
    expect(existsSync(dataDir)).to.equal(true);
  });

  it('when that key sends "Hello" to +243812345678, then it is 201 and GET /status/{id} is 200 with the message', async () => {
    const sent = await call(`${base}${API_ROOT}/send`, { method: 'POST', key: apiKey, json: { to: ['+243812345678'], message: 'Hello' } });
    expect(sent.status, sent.text).to.equal(201);
    const receipt = (sent.body as { data: { message_id: string; total_recipients: number; total_messages: number; status: string } }).data;
    expect(receipt.message_id).to.match(/^msg_/);
    expect(receipt).to.include({ total_recipients: 1, total_messages: 1, status: 'pending' });
    messageId = receipt.message_id;

    const status = await call(`${base}${API_ROOT}/status/${messageId}`, { key: apiKey });
    expect(status.status, status.text).to.equal(200);
    const view = (status.body as { data: { message_id: string; total_recipients: number; recipients: unknown[] } }).data;
    expect(view.message_id).to.equal(messageId);
    expect(view.total_recipients).to.equal(1);
    expect(view.recipients).to.have.length(1);
  });

  it('when it gets SIGTERM, then it exits with code 0 within 15 s', async () => {
    const first = children[0]!;
    first.child.kill('SIGTERM');
    expect(await exitWithin(first, 15_000)).to.deep.equal({ code: 0, signal: null });
  });

  it('when it starts again on the same data directory, then no key line is printed and the old key still works', async () => {
    const second = start(dir, env);
    children.push(second);
    // the key line would come before the server listens, so once health answers it is known there is none
    await until('GET /health 200', second, 45_000, () => healthy(base));
    expect(keyLines(second)).to.deep.equal([]);

    const status = await call(`${base}${API_ROOT}/status/${messageId}`, { key: apiKey });
    expect(status.status, status.text).to.equal(200);
    expect((status.body as { data: { message_id: string } }).data.message_id).to.equal(messageId);
    const sent = await call(`${base}${API_ROOT}/send`, {
      method: 'POST',
      key: apiKey,
      json: { to: ['+243812345678'], message: 'Hello again' },
    });
    expect(sent.status, sent.text).to.equal(201);

    second.child.kill('SIGTERM');
    expect(await exitWithin(second, 15_000)).to.deep.equal({ code: 0, signal: null });
  });

  it('when PORT is "eighty", then it exits with code 1 and a stderr message naming PORT, before opening anything', async () => {
    const emptyDir = mkdtempSync(path.join(dir, 'bad-config-'));
    const badDataDir = path.join(emptyDir, 'data');
    const bad = start(emptyDir, { PORT: 'eighty', DATA_DIR: badDataDir, LOG_LEVEL: 'warn' });
    children.push(bad);
    expect(await exitWithin(bad, 15_000)).to.deep.equal({ code: 1, signal: null });
    expect(bad.stderr()).to.match(/\bPORT\b/);
    expect(bad.stdout.filter((line) => KEY_LINE.test(line))).to.deep.equal([]);
    // configuration is checked before the database is opened, so the data directory was never created
    expect(existsSync(badDataDir)).to.equal(false);
  });
});
