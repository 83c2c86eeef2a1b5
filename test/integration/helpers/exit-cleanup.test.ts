import { spawn, spawnSync, type ChildProcess } from 'node:child_process';
import { existsSync, rmSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { eventually } from '../../helpers/eventually.js';
import { canListen } from '../../helpers/ports.js';

interface Started {
  readonly natsPort: number;
  readonly natsStore: string;
  readonly postgresDataDir: string;
  readonly postmasterPid: number;
  readonly temporaryDir: string;
}

const CHILD = new URL('./servers-left-running.ts', import.meta.url).pathname;

const startChild = (...args: string[]): ChildProcess =>
  spawn(process.execPath, ['--import', 'tsx', CHILD, ...args], { stdio: ['ignore', 'pipe', 'inherit'] });

/** What the child said it started, once it has said it (its first line). */
function startedBy(child: ChildProcess): Promise<Started> {
  return new Promise((resolve, reject) => {
    let output = '';
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      if (output.includes('\n')) resolve(JSON.parse(output.trim()) as Started);
    });
    child.once('error', reject);
    // 'close': once its output is read too ('exit' may come before the last of it)
    child.once('close', (code, signal) => {
      reject(new Error(`child ended (${String(code ?? signal)}) before saying what it started: ${output}`));
    });
  });
}

/** How the child ended: its exit code, or the signal that killed it. */
const endOf = (child: ChildProcess): Promise<string> =>
  new Promise((resolve) => {
    if (child.exitCode !== null || child.signalCode !== null) resolve(String(child.exitCode ?? child.signalCode));
    else
      child.once('exit', (code, signal) => {
        resolve(String(code ?? signal));
      });
  });

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

/** Whatever a failed case left: the postmaster, the nats-server on its own store, and their directories. */
async function removeLeftovers(started: Started): Promise<void> {
  if (alive(started.postmasterPid)) process.kill(started.postmasterPid, 'SIGQUIT');
  spawnSync('pkill', ['-KILL', '-f', started.natsStore]);
  await eventually(() => Promise.resolve(!alive(started.postmasterPid)), 20_000, 'postmaster gone');
  // the data directory sits in the server's own temporary directory
  rmSync(started.natsStore, { recursive: true, force: true });
  rmSync(path.dirname(started.postgresDataDir), { recursive: true, force: true });
  rmSync(started.temporaryDir, { recursive: true, force: true });
}

describe('Test servers left running when their process exits', function () {
  this.timeout(60_000);
  const seen: Started[] = [];
  afterEach(async () => {
    for (const started of seen.splice(0)) await removeLeftovers(started);
  });

  async function expectGone(started: Started): Promise<void> {
    expect(started.postmasterPid).to.be.greaterThan(0);
    await eventually(async () => !alive(started.postmasterPid) && (await canListen(started.natsPort)), 20_000, 'servers stopped');
    await eventually(
      () =>
        Promise.resolve(
          !existsSync(started.natsStore) && !existsSync(path.dirname(started.postgresDataDir)) && !existsSync(started.temporaryDir),
        ),
      20_000,
      'directories removed',
    );
  }

  it('when a test process exits without stopping its PostgreSQL and NATS servers or removing a temporary directory, then both servers stop and every directory goes', async () => {
    const child = startChild();
    const started = await startedBy(child);
    seen.push(started);
    expect(await endOf(child)).to.equal('0');
    await expectGone(started);
  });

  for (const [signal, code] of [
    ['SIGINT', '130'],
    ['SIGTERM', '143'],
  ] as const) {
    it(`when a test process with its servers running gets ${signal}, then it exits through its cleanup (${code}): both servers stop and every directory goes`, async () => {
      const child = startChild('wait');
      const started = await startedBy(child);
      seen.push(started);
      // to the process alone, not its group: the servers hear nothing but what its exit sends them
      child.kill(signal);
      expect(await endOf(child)).to.equal(code);
      await expectGone(started);
    });
  }
});
