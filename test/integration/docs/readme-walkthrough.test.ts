import { spawn, type ChildProcessWithoutNullStreams } from 'node:child_process';
import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { API_ROOT } from '../../../src/entry-points/http/routes.js';
import { loadConfig } from '../../../src/libraries/config/config.js';
import { startMain, type MainProcess } from '../../helpers/main-process.js';
import { freePort } from '../../helpers/ports.js';
import { eventually } from '../../helpers/eventually.js';
import { jsonObjects, markedBlocks, readReadme } from './readme-blocks.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

/*
 * README.md's "Five minutes with the sandbox", executed: src/main.ts as `npm start` runs it (embedded sandbox, a
 * temporary DATA_DIR, free ports), then every ```sh walkthrough=<step> block, verbatim, in one bash session, with the
 * variables of the `variables` block (KEY, API, HOOKS) set to this run's values. The answers and webhook events the
 * README promises are checked on what the commands really print.
 */

const STEPS = ['variables', 'basics', 'receiver', 'send', 'status', 'schedule'] as const;
const VARIABLES = ['KEY', 'API', 'HOOKS'];
const KEY_LINE = 'Sandbox API key: ';
const STEP_TIMEOUT_MS = 20_000;
const EVENTS = ['sms.queued', 'sms.processing', 'sms.sent', 'sms.delivered'];

/** One bash session fed step by step on stdin; everything it (and its background jobs) prints is collected. */
interface Shell {
  /** Runs `script` (sourced from a file, so it runs verbatim) and resolves with what it printed. */
  run(name: string, script: string): Promise<string>;
  /** Everything printed so far. */
  output(): string;
  /** SIGKILL to the session's process group: bash and the jobs it started in the background. */
  kill(): void;
}

function startShell(dir: string, variables: Record<string, string>): Shell {
  const child: ChildProcessWithoutNullStreams = spawn('bash', ['--noprofile', '--norc'], {
    cwd: dir,
    // only what the walkthrough needs: no proxy settings, and HOME away from the user's ~/.curlrc
    env: { PATH: `${path.dirname(process.execPath)}:${process.env.PATH ?? '/usr/bin:/bin'}`, HOME: dir, LANG: 'C.UTF-8', ...variables },
    stdio: ['pipe', 'pipe', 'pipe'],
    detached: true,
  });
  let stdout = '';
  let stderr = '';
  let exited: string | null = null;
  child.stdout.setEncoding('utf8').on('data', (chunk: string) => (stdout += chunk));
  child.stderr.setEncoding('utf8').on('data', (chunk: string) => (stderr += chunk));
  child.stdin.on('error', () => undefined); // bash gone: the next run reports it
  child.once('exit', (code, signal) => (exited = `bash exited (${String(code ?? signal)})`));
  return {
    async run(name, script) {
      const file = path.join(dir, `${name}.sh`);
      writeFileSync(file, script);
      const marker = `__walkthrough_step_${name}_done__`;
      const from = stdout.length;
      child.stdin.write(`. '${file}'\nprintf '\\n%s\\n' '${marker}'\n`);
      const end = await eventually(
        () => {
          if (exited !== null) throw new Error(`${exited}; stderr: ${stderr}`);
          const at = stdout.indexOf(`\n${marker}\n`, from);
          return Promise.resolve(at === -1 ? undefined : at);
        },
        STEP_TIMEOUT_MS,
        `step ${name} (stdout so far: ${stdout.slice(from)}; stderr: ${stderr})`,
      ).catch((error: unknown) => {
        throw new Error(`${error instanceof Error ? error.message : String(error)}\nstdout: ${stdout.slice(from)}\nstderr: ${stderr}`);
      });
      return stdout.slice(from, end);
    },
    output: () => stdout,
    kill() {
      if (child.pid === undefined || child.exitCode !== null || child.signalCode !== null) return;
      try {
        process.kill(-child.pid, 'SIGKILL');
      } catch {
        // already gone
      }
    },
  };
}

/** The API answers (`{status_code, …}`) among what a step printed, events and other lines left out. */
function answers(printed: string): Record<string, unknown>[] {
  return jsonObjects(printed).filter((object) => 'status_code' in object);
}

function dataOf(answer: Record<string, unknown> | undefined): Record<string, unknown> {
  expect(answer, 'an API answer').to.be.an('object');
  const data = answer?.data;
  expect(data, JSON.stringify(answer)).to.be.an('object');
  return data as Record<string, unknown>;
}

describe('README walkthrough ("Five minutes with the sandbox") against src/main.ts', function () {
  this.timeout(60_000);

  const readme = readReadme();
  const steps = markedBlocks(readme, 'walkthrough');
  const script = (name: (typeof STEPS)[number]): string => {
    const step = steps.find((s) => s.name === name);
    if (!step) throw new Error(`README has no \`\`\`sh walkthrough=${name} block`);
    return step.block.body;
  };

  let dir = '';
  let main: MainProcess | null = null;
  let shell: Shell | null = null;
  let hooksPort = 0;
  let messageId = '';

  before(async () => {
    dir = temporaryDir('readme-walkthrough-');
    main = startMain({
      GATEWAY_MODE: 'embedded',
      GATEWAY_ENVIRONMENT: 'sandbox',
      SEED_DEMO_MERCHANT: 'true',
      DATA_DIR: path.join(dir, 'data'),
      HOST: '127.0.0.1',
      PORT: '0',
      METRICS_PORT: '0',
      LOG_LEVEL: 'info',
    });
    const listening = await main.waitForLog((line) => line.msg === 'listening', 45_000);
    const keyLine = main.lines.find((line) => line.startsWith(KEY_LINE));
    if (keyLine === undefined) throw new Error(`no "${KEY_LINE}" line: ${main.lines.join('\n')}`);
    hooksPort = await freePort();
    shell = startShell(dir, {
      KEY: keyLine.slice(KEY_LINE.length),
      API: `http://127.0.0.1:${String(listening.port)}${API_ROOT}`,
      HOOKS: String(hooksPort),
    });
  });

  after(async () => {
    shell?.kill();
    await main?.kill();
    if (dir !== '') removeTemporaryDir(dir);
  });

  const run = (name: (typeof STEPS)[number]): Promise<string> => {
    if (!shell) throw new Error('the shell did not start');
    return shell.run(name, script(name));
  };

  it('has the steps, in order, as ```sh walkthrough=<step> blocks, and the key line npm start prints', () => {
    expect(steps.map((step) => step.name)).to.deep.equal([...STEPS]);
    for (const { name, block } of steps) expect(block.info.split(/\s+/)[0], `walkthrough=${name}`).to.equal('sh');
    expect(readme).to.contain(`\n${KEY_LINE}sk_test_...\n`);
  });

  it('variables: defines exactly KEY, API and HOOKS, with the defaults of npm start', () => {
    const assignments = script('variables')
      .split('\n')
      .map((line) => /^([A-Z_]+)=(\S*)/.exec(line.trim()))
      .filter((match) => match !== null)
      .map((match) => [match[1], match[2]]);
    expect(assignments.map(([name]) => name)).to.deep.equal(VARIABLES);
    const api = assignments.find(([name]) => name === 'API')?.[1];
    expect(api).to.equal(`http://localhost:${String(loadConfig({ env: {} }).http.port)}${API_ROOT}`);
  });

  it('basics: health, the demo balance and a calculation', async () => {
    const [health, balance, calculation] = answers(await run('basics'));
    expect(dataOf(health)).to.include({ status: 'ok', environment: 'sandbox' });
    expect(dataOf(balance)).to.include({
      balance: 150,
      sms_wallet_balance: 100,
      postpaid_wallet_balance: 50,
      currency: 'USD',
      unit_price: 0.025,
      available_sms: 6000,
    });
    expect(calculation?.status_code).to.equal(200);
    expect(dataOf(calculation)).to.include({ mode: 'sms_to_amount', sms_count: 100, currency: 'USD' });
  });

  it('receiver: starts listening on $HOOKS', async () => {
    await run('receiver');
    await eventually(
      () => Promise.resolve(shell?.output().includes(`receiver listening on port ${String(hooksPort)}`)),
      STEP_TIMEOUT_MS,
      'the receiver listening',
    );
  });

  it('send: 201 with a message_id; the receiver gets sms.queued, processing, sent and delivered', async () => {
    const [sent] = answers(await run('send'));
    expect(sent?.status_code).to.equal(201);
    const data = dataOf(sent);
    expect(data).to.include({ total_recipients: 1, status: 'pending', currency: 'USD' });
    expect(data.message_id).to.be.a('string').and.match(/^msg_/);
    messageId = String(data.message_id);
    const events = await eventually(
      () => {
        const mine = jsonObjects(shell?.output() ?? '').filter(
          (object) => object.message_id === messageId && typeof object.event_type === 'string',
        );
        return Promise.resolve(mine.some((event) => event.event_type === 'sms.delivered') ? mine : undefined);
      },
      STEP_TIMEOUT_MS,
      'the sms.delivered webhook at the receiver',
    );
    expect(events.map((event) => event.event_type)).to.have.members(EVENTS);
    const delivered = events.find((event) => event.event_type === 'sms.delivered');
    expect(delivered?.data).to.include({ recipient_phone: '+243812345600', recipient_index: 0 });
  });

  it('status: 200 with the recipient delivered', async () => {
    const [status] = answers(await run('status'));
    expect(status?.status_code).to.equal(200);
    const data = dataOf(status);
    expect(data).to.include({ message_id: messageId, status: 'delivered', total_recipients: 1, delivered: 1 });
    expect(data.recipients).to.be.an('array').with.lengthOf(1);
    expect((data.recipients as Record<string, unknown>[])[0]).to.include({
      phone: '+243812345600',
      status: 'delivered',
      carrier: 'simulator',
    });
  });

  it('schedule: a scheduled send shows scheduled; cancelling it refunds its cost', async () => {
    const [sent, status, cancelled, balance] = answers(await run('schedule'));
    expect(sent?.status_code).to.equal(201);
    const scheduledId = dataOf(sent).message_id;
    expect(scheduledId).to.be.a('string').and.not.equal(messageId);
    expect(dataOf(status)).to.include({ message_id: scheduledId, status: 'scheduled', sending_type: 'scheduled' });
    expect(cancelled?.status_code).to.equal(200);
    expect(dataOf(cancelled)).to.include({ message_id: scheduledId, refunded_amount: 0.02 });
    expect(dataOf(cancelled).schedule).to.include({ state: 'cancelled' });
    // 150 less the one immediate send (0.02); the scheduled one was refunded
    expect(dataOf(balance)).to.include({ balance: 149.98, sms_wallet_balance: 99.98 });
  });
});
