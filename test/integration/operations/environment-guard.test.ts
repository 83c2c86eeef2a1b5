import path from 'node:path';
import { fileURLToPath } from 'node:url';
import { expect } from 'chai';
import pg from 'pg';
import { runCommand } from '../../helpers/command-process.js';
import { startMain, TEST_SECRETS_KEY, type MainProcess } from '../../helpers/main-process.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';

const ROOT = path.resolve(path.dirname(fileURLToPath(import.meta.url)), '../../..');

/** One database serves one environment: the node process and the CLI, as operators run them, on real PostgreSQL. */
describe('a database initialised for one environment refuses the other', function () {
  this.timeout(180_000);
  let nats: TestNats;
  let databaseUrl: string;
  let main: MainProcess | null = null;

  const node = (environment: string): MainProcess =>
    startMain({
      GATEWAY_MODE: 'server',
      GATEWAY_ENVIRONMENT: environment,
      DATABASE_URL: databaseUrl,
      NATS_URL: nats.url,
      HOST: '127.0.0.1',
      PORT: '0',
      METRICS_PORT: '0',
      SEED_DEMO_MERCHANT: 'false',
      LOG_LEVEL: 'info',
      NODE_ID: `env-guard-${environment}`,
      SECRETS_KEY: TEST_SECRETS_KEY,
    });
  const cli = (environment: string, args: readonly string[]) =>
    runCommand(process.execPath, ['--import', 'tsx', 'src/entry-points/cli/cli-main.ts', ...args], {
      cwd: ROOT,
      env: { DATABASE_URL: databaseUrl, GATEWAY_MODE: 'server', GATEWAY_ENVIRONMENT: environment, SECRETS_KEY: TEST_SECRETS_KEY },
    });

  before(async () => {
    nats = await startTestNats();
    databaseUrl = await (await testPostgres()).createDatabase('environment_guard');
  });
  after(async () => {
    await main?.kill();
    await nats.stop();
  });

  it('a sandbox node records sandbox; a production node on the same database exits non-zero naming both, and the CLI refuses it too', async () => {
    // Arrange: a sandbox node starts on the fresh database and stops
    main = node('sandbox');
    await main.waitForLog((line) => line.msg === 'listening', 90_000);
    main.signal('SIGTERM');
    expect((await main.exited).code).to.equal(0);
    const db = new pg.Client({ connectionString: databaseUrl });
    await db.connect();
    try {
      const recorded = await db.query<{ value: string }>(`SELECT value FROM gateway_settings WHERE name = 'environment'`);
      expect(recorded.rows.map((r) => r.value)).to.deep.equal(['sandbox']);

      // Act: production on the same database
      main = node('production');
      const started = main
        .waitForLog((line) => line.msg === 'listening', 90_000)
        .then(
          () => 'listening' as const,
          () => 'silent' as const,
        );
      const outcome = await Promise.race([main.exited, started]);
      expect(outcome, 'the production node started on the sandbox database').to.not.equal('listening');
      const exit = await main.exited;

      // Assert: refused before serving, with a message naming both environments
      expect(exit.code).to.not.equal(0);
      expect(exit.code).to.not.equal(null);
      const crash = main.logs.find((line) => line.msg === 'crashed');
      expect(crash, main.lines.join('\n')).to.not.equal(undefined);
      const message = (crash!.err as { message: string }).message;
      expect(message).to.include('initialised for the sandbox environment and cannot serve production');
      expect(main.logs.some((line) => line.msg === 'listening')).to.equal(false);

      // the CLI of the other environment is refused as well, and re-initialises nothing
      const refused = await cli('production', ['merchants', 'list', '--json']);
      expect(refused.code).to.equal(1);
      expect(refused.stdout).to.equal('');
      expect(refused.stderr).to.include('error: this database was initialised for the sandbox environment and cannot serve production');
      const allowed = await cli('sandbox', ['merchants', 'list', '--json']);
      expect({ code: allowed.code, stderr: allowed.stderr }).to.deep.equal({ code: 0, stderr: '' });
      const after = await db.query<{ value: string }>(`SELECT value FROM gateway_settings`);
      expect(after.rows.map((r) => r.value)).to.deep.equal(['sandbox']);
    } finally {
      await db.end();
    }
  });
});
