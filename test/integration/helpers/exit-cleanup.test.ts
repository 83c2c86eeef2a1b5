import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { expect } from 'chai';
import { eventually } from '../../helpers/eventually.js';
import { canListen } from '../../helpers/ports.js';

interface Started {
  readonly natsPort: number;
  readonly natsStore: string;
  readonly postgresDataDir: string;
  readonly postmasterPid: number;
}

const CHILD = new URL('./servers-left-running.ts', import.meta.url).pathname;

/** Runs the child to its exit and returns what it said it started. */
function runChild(): Promise<Started> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, ['--import', 'tsx', CHILD], { stdio: ['ignore', 'pipe', 'inherit'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => {
      output += chunk.toString();
    });
    child.once('error', reject);
    child.once('exit', (code) => {
      if (code !== 0) reject(new Error(`child exited with ${String(code)}: ${output}`));
      else resolve(JSON.parse(output.trim()) as Started);
    });
  });
}

const alive = (pid: number): boolean => {
  try {
    process.kill(pid, 0);
    return true;
  } catch {
    return false;
  }
};

describe('Test servers left running when their process exits', function () {
  this.timeout(60_000);

  it('when a test process exits without stopping its PostgreSQL and NATS servers, then both stop and their directories go', async () => {
    const started = await runChild();
    expect(started.postmasterPid).to.be.greaterThan(0);
    await eventually(async () => !alive(started.postmasterPid) && (await canListen(started.natsPort)), 20_000, 'servers stopped');
    await eventually(
      () => Promise.resolve(!existsSync(started.natsStore) && !existsSync(started.postgresDataDir)),
      20_000,
      'directories removed',
    );
  });
});
