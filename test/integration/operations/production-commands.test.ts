import { execFile, spawn } from 'node:child_process';
import { cpSync, mkdirSync, readdirSync, readFileSync, rmSync } from 'node:fs';
import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { expect } from 'chai';
import { parse as parseYaml } from 'yaml';
import { runCommand } from '../../helpers/command-process.js';
import { httpCall, startMain, type MainProcess } from '../../helpers/main-process.js';
import { testNats } from '../../helpers/nats.js';
import { freePort } from '../../helpers/ports.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/eventually.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

/**
 * Docker cannot run here, so this test runs what the Dockerfile and docker-compose.yml run, read from those files:
 * the build stage's `npm run build`, the runtime stage's COPY lines and `npm ci --omit=dev` in a fresh directory,
 * then the compose services' commands (two gateway nodes, the simulator connector, the CLI) with the compose
 * environment — only the hostnames `postgres` and `nats` become private servers, and the published ports free ones.
 * If either file drifts from what works (a missing COPY, a wrong path in a command, a bad variable), this fails.
 */

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');
const API = '/api/v1/messaging/sms-api';
const run = promisify(execFile);

interface Stage {
  readonly name: string;
  readonly lines: string[];
}

/** The Dockerfile's stages and their instructions (continuation lines joined). */
function dockerfileStages(): Stage[] {
  const text = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8').replace(/\\\n\s*/g, '');
  const stages: Stage[] = [];
  for (const line of text.split('\n').map((l) => l.trim())) {
    if (line === '' || line.startsWith('#')) continue;
    const from = /^FROM\s+\S+\s+AS\s+(\S+)$/i.exec(line);
    if (from) stages.push({ name: from[1]!, lines: [] });
    else stages.at(-1)?.lines.push(line);
  }
  return stages;
}

/** An exec-form instruction's argv: `CMD ["node", "dist/main.js"]`. */
function execForm(line: string, instruction: string): string[] {
  const json = line.slice(line.indexOf('[', instruction.length));
  const argv = JSON.parse(json) as unknown;
  if (!Array.isArray(argv) || !argv.every((a): a is string => typeof a === 'string')) throw new Error(`not an exec form: ${line}`);
  return argv;
}

interface ComposeService {
  readonly command?: string[];
  readonly entrypoint?: string[];
  readonly environment?: Record<string, string | number | boolean>;
  readonly profiles?: string[];
  readonly volumes?: string[];
}

function composeServices(): Record<string, ComposeService> {
  const compose = parseYaml(readFileSync(path.join(ROOT, 'docker-compose.yml'), 'utf8'), { merge: true }) as {
    services: Record<string, ComposeService>;
  };
  return compose.services;
}

/** A compose service's environment with the compose hostnames pointed at the private servers. */
function environmentOf(service: ComposeService, hosts: { databaseUrl: string; natsUrl: string }): Record<string, string> {
  const env: Record<string, string> = {};
  for (const [name, value] of Object.entries(service.environment ?? {})) env[name] = String(value);
  if (env.DATABASE_URL) env.DATABASE_URL = hosts.databaseUrl;
  if (env.NATS_URL) env.NATS_URL = hosts.natsUrl;
  return env;
}

describe('production commands of the Dockerfile and docker-compose.yml, run without Docker', function () {
  this.timeout(300_000);
  const stages = dockerfileStages();
  const runtime = stages.find((stage) => stage.name === 'runtime');
  const services = composeServices();
  let workDir = '';
  let appDir = '';
  let databaseUrl = '';
  let natsUrl = '';
  const started: MainProcess[] = [];
  const nodes: { name: string; process: MainProcess; port: number }[] = [];
  let apiKey = '';

  before(async function () {
    this.timeout(300_000);
    if (!runtime) throw new Error('the Dockerfile has no "runtime" stage');
    workDir = temporaryDir('gw-image-');
    appDir = path.join(workDir, 'app');
    mkdirSync(appDir);

    // build stage: `npm run build` (output into the work directory instead of the image's /app/dist)
    const build = stages.find((stage) => stage.name === 'build');
    expect(build?.lines, 'the build stage runs npm run build').to.include('RUN npm run build');
    await run('npm', ['run', 'build', '--', '--outDir', path.join(workDir, 'dist')], { cwd: ROOT });

    // runtime stage, instruction by instruction
    for (const line of runtime.lines) {
      const copy = /^COPY\s+(--from=build\s+)?(.+)\s+(\S+)$/.exec(line);
      if (copy) {
        const target = path.join(appDir, copy[3]!);
        const sources = copy[2]!.split(/\s+/);
        for (const source of sources) {
          const from = copy[1] ? path.join(workDir, path.relative('/app', source)) : path.join(ROOT, source);
          const to = sources.length > 1 || copy[3]!.endsWith('/') ? path.join(target, path.basename(source)) : target;
          cpSync(from, to, { recursive: true });
        }
        continue;
      }
      if (line.startsWith('RUN npm ci')) {
        const npmCi = line.slice('RUN '.length).split('&&')[0]!.trim().split(/\s+/);
        expect(npmCi).to.include('--omit=dev');
        // the cache already holds every package (npm ci ran in the repository)
        await run(npmCi[0]!, [...npmCi.slice(1), '--prefer-offline'], { cwd: appDir });
        continue;
      }
      if (line.startsWith('RUN mkdir')) {
        mkdirSync(path.join(appDir, 'data'), { recursive: true });
      }
    }

    databaseUrl = await (await testPostgres()).createDatabase('image');
    natsUrl = (await testNats()).url;
  });

  after(async () => {
    await Promise.all(started.map((p) => p.kill()));
    if (workDir) removeTemporaryDir(workDir);
  });

  it('when the compose NATS service runs its command with its mounted configuration, then a client that stops answering pings is dropped within 15 s', async () => {
    const nats = composeServices().nats!;
    const command = nats.command ?? [];
    const configPath = command[command.indexOf('-c') + 1];
    const mount = (nats.volumes ?? []).map((volume) => volume.split(':')).find(([, target]) => target === configPath);
    expect(mount, `a volume mounted where the command reads its configuration (${String(configPath)})`).to.not.equal(undefined);
    // the command as compose runs it, the mounted paths replaced by the repository's file and a temporary store
    const store = temporaryDir('compose-nats-');
    const [port, monitorPort] = [await freePort(), await freePort()];
    const args = command.map((arg) => (arg === configPath ? path.join(ROOT, mount![0]!) : arg === '/data' ? store : arg));
    const server = spawn('nats-server', [...args, '-p', String(port), '-a', '127.0.0.1', '-m', String(monitorPort)], { stdio: 'ignore' });
    try {
      const varz = await eventually(
        async () => {
          const response = await fetch(`http://127.0.0.1:${monitorPort}/varz`).catch(() => null);
          return response?.ok
            ? ((await response.json()) as { ping_interval: number; ping_max: number; jetstream?: { config?: { store_dir?: string } } })
            : null;
        },
        10_000,
        'the compose nats-server serving',
      );
      expect(varz.jetstream?.config?.store_dir, 'JetStream on, in the store given').to.equal(path.join(store, 'jetstream'));
      // ping_interval in nanoseconds; disconnected once more than ping_max pings are unanswered
      expect(((varz.ping_max + 1) * varz.ping_interval) / 1e9, 'seconds until a silent client is dropped').to.be.at.most(15);
    } finally {
      server.kill('SIGKILL');
      removeTemporaryDir(store);
    }
  });

  it('when the runtime directory is assembled, then it has no development dependency and only what the image copies', () => {
    const installed = (name: string): boolean => {
      try {
        readFileSync(path.join(appDir, 'node_modules', name, 'package.json'));
        return true;
      } catch {
        return false;
      }
    };
    expect(installed('express'), 'a runtime dependency').to.equal(true);
    expect(installed('@electric-sql/pglite'), 'a runtime dependency').to.equal(true);
    for (const dev of ['typescript', 'tsx', 'mocha', 'eslint']) expect(installed(dev), dev).to.equal(false);
    expect(() => readFileSync(path.join(appDir, 'src/main.ts')), 'no TypeScript sources').to.throw();
  });

  it("when the image runs as its header documents (`docker run -p 3000:3000 sms-gateway`), then it is the embedded sandbox with its data in the image's data directory", async () => {
    const header = readFileSync(path.join(ROOT, 'Dockerfile'), 'utf8');
    expect(header).to.match(/^#\s+docker run -p 3000:3000 sms-gateway\s+\(embedded sandbox, data in \/app\/data\)$/m);
    // the image's own environment (ENV lines of the runtime stage) and nothing else; only the ports are free ones
    const imageEnv: Record<string, string> = {};
    for (const line of runtime!.lines.filter((l) => l.startsWith('ENV '))) {
      for (const pair of line.slice('ENV '.length).trim().split(/\s+/)) {
        const [name, ...value] = pair.split('=');
        imageEnv[name!] = value.join('=');
      }
    }
    const argv = execForm(
      runtime!.lines.find((line) => line.startsWith('CMD'))!,
      'CMD',
    );
    const port = await freePort();
    const main = startMain(
      { ...imageEnv, PORT: String(port), METRICS_PORT: String(await freePort()) },
      { argv: argv.slice(1), cwd: appDir },
    );
    started.push(main);
    try {
      const listening = await main.waitForLog((line) => line.msg === 'listening', 90_000);
      expect(listening.mode).to.equal('embedded');
      const keyLine = main.lines.find((line) => line.startsWith('Sandbox API key: '));
      expect(keyLine, 'the sandbox prints the demo merchant key').to.not.equal(undefined);
      const balance = await httpCall(`http://127.0.0.1:${port}${API}/balance`, {
        headers: { 'app-key': keyLine!.slice('Sandbox API key: '.length) },
      });
      expect(balance.status, balance.body).to.equal(200);
      expect(readdirSync(path.join(appDir, 'data')), "the database lives in the image's data directory").to.not.deep.equal([]);
    } finally {
      await main.kill();
      rmSync(path.join(appDir, 'data'), { recursive: true, force: true });
      mkdirSync(path.join(appDir, 'data'));
    }
  });

  it('when the two compose gateway nodes start with the image CMD and their compose environment, then both serve and the HEALTHCHECK passes', async () => {
    const cmd = runtime!.lines.find((line) => line.startsWith('CMD'));
    const argv = execForm(cmd!, 'CMD');
    expect(argv[0]).to.equal('node');
    for (const name of ['gateway-1', 'gateway-2']) {
      const service = services[name];
      expect(service, `compose service ${name}`).to.not.equal(undefined);
      const env = environmentOf(service!, { databaseUrl, natsUrl });
      expect(env).to.include({ NODE_ENV: 'production', GATEWAY_MODE: 'server' });
      const port = await freePort();
      const main = startMain(
        { ...env, PORT: String(port), METRICS_PORT: String(await freePort()), HOST: '127.0.0.1', DATA_DIR: path.join(appDir, 'data') },
        { argv: argv.slice(1), cwd: appDir },
      );
      started.push(main);
      nodes.push({ name, process: main, port });
    }
    for (const node of nodes) await node.process.waitForLog((line) => line.msg === 'listening', 90_000);

    const healthcheck = runtime!.lines.find((line) => line.startsWith('HEALTHCHECK'))!;
    const check = execForm(healthcheck.slice(healthcheck.indexOf('CMD')), 'CMD');
    for (const node of nodes) {
      const health = await httpCall(`http://127.0.0.1:${node.port}${API}/health`);
      expect(health.status, health.body).to.equal(200);
      const probe = await run(check[0]!, check.slice(1), { cwd: appDir, env: { ...process.env, PORT: String(node.port) } }).then(
        () => 0,
        (error: unknown) => (error as { code?: number }).code ?? -1,
      );
      expect(probe, `HEALTHCHECK of ${node.name}`).to.equal(0);
    }
    // the healthcheck fails when nothing answers
    const deadPort = await freePort();
    const failed = await run(check[0]!, check.slice(1), { cwd: appDir, env: { ...process.env, PORT: String(deadPort) } }).then(
      () => 0,
      (error: unknown) => (error as { code?: number }).code ?? -1,
    );
    expect(failed).to.equal(1);

    // one of them seeded the sandbox demo merchant (SEED_DEMO_MERCHANT in compose) and printed its key once
    const keyLines = nodes.flatMap((node) => node.process.lines.filter((line) => line.startsWith('Sandbox API key: ')));
    expect(keyLines).to.have.length(1);
    apiKey = keyLines[0]!.slice('Sandbox API key: '.length);
  });

  it('when the compose simulator runs its command, then a send on one node is delivered and visible on the other', async () => {
    const service = services.simulator!;
    expect(service.command?.[0]).to.equal('node');
    const simulator = startMain(environmentOf(service, { databaseUrl, natsUrl }), { argv: service.command!.slice(1), cwd: appDir });
    started.push(simulator);
    const [first, second] = nodes;
    const sent = await httpCall(`http://127.0.0.1:${first!.port}${API}/send`, {
      method: 'POST',
      headers: { 'app-key': apiKey },
      json: { to: ['+243812345600'], message: 'From the image' },
    });
    expect(sent.status, sent.body).to.equal(201);
    const messageId = (JSON.parse(sent.body) as { data: { message_id: string } }).data.message_id;
    await eventually(
      async () => {
        const status = await httpCall(`http://127.0.0.1:${second!.port}${API}/status/${messageId}`, { headers: { 'app-key': apiKey } });
        return status.status === 200 &&
          (JSON.parse(status.body) as { data: { recipients: { status: string }[] } }).data.recipients[0]?.status === 'delivered'
          ? true
          : null;
      },
      30_000,
      'the message delivered',
      200,
    );
  });

  it('when the compose cli service runs `cluster status`, then it sees both nodes and, once balanced, every shard held', async () => {
    const service = services.cli!;
    const entrypoint = service.entrypoint!;
    const env = environmentOf(service, { databaseUrl, natsUrl });
    type Status = { live_nodes: string[]; unowned_shards: number[]; nodes: { node_id: string; shard_count: number }[] };
    const clusterStatus = async (): Promise<Status> => {
      const result = await runCommand(entrypoint[0]!, [...entrypoint.slice(1), 'cluster', 'status', '--json'], { cwd: appDir, env });
      if (result.code !== 0) throw new Error(`cli exited ${String(result.code)}: ${result.stderr}`);
      return JSON.parse(result.stdout) as Status;
    };
    // a shard handed over by one node is taken by the other at its next lease tick: poll until balanced
    const status = await eventually(
      async () => {
        const current = await clusterStatus();
        return current.unowned_shards.length === 0 && current.nodes.every((n) => n.shard_count === 32) ? current : null;
      },
      30_000,
      'every shard held, 32 each',
      500,
    );
    expect(status.live_nodes).to.deep.equal(['gateway-1', 'gateway-2']);
    // each node logged its ownership changes, one summary line per rebalance: what it took minus what it handed
    // over is what it holds
    for (const node of nodes) {
      const total = (prefix: string, field: string): number =>
        node.process.logs
          .filter((line) => typeof line.msg === 'string' && line.msg.startsWith(prefix))
          .reduce((sum, line) => sum + Number(line[field]), 0);
      expect(total('shards acquired: ', 'acquired') - total('shards handed over: ', 'handed_over'), node.name).to.equal(32);
    }
  });

  it('when the nodes get SIGTERM (docker stop), then they hand their shards over and exit 0', async () => {
    for (const node of nodes) node.process.signal('SIGTERM');
    const exits = await Promise.all(nodes.map((node) => node.process.exited));
    for (const exit of exits) expect(exit.code).to.equal(0);
    // the last to stop handed over everything it held; together they logged every shard they ended with
    const handedOver = nodes.flatMap((node) =>
      node.process.logs.filter((line) => typeof line.msg === 'string' && line.msg.startsWith('shards handed over: ')),
    );
    expect(handedOver.reduce((sum, line) => sum + Number(line.handed_over), 0)).to.be.at.least(64);
  });
});
