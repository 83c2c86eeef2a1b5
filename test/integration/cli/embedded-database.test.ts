import { existsSync, mkdirSync, readdirSync, realpathSync } from 'node:fs';
import path from 'node:path';
import { expect } from 'chai';
import { REPO_ROOT, TSX_LOADER } from '../../helpers/cluster.js';
import { runCommand, type CommandResult } from '../../helpers/command-process.js';
import { startMain, type MainProcess } from '../../helpers/main-process.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

const NOT_FOUND = (dir: string) =>
  `error: no gateway database in ${dir}: set DATA_DIR to the gateway's data directory, or run \`merchants create\` to start a new one\n`;

/**
 * The CLI in embedded mode (PGlite in DATA_DIR), run as operators run it: its own process, from the directory the
 * operator is in, with the default configuration (DATA_DIR ./data unless set).
 */
describe('operator CLI on an embedded database', function () {
  this.timeout(120_000);
  let cwd: string;

  beforeEach(() => {
    // the directory the CLI reports is absolute: compare with the real path (no symbolic link in between)
    cwd = realpathSync(temporaryDir('gw-cli-embedded-'));
  });
  afterEach(() => {
    removeTemporaryDir(cwd);
  });

  const cli = (args: readonly string[], env: Record<string, string> = {}): Promise<CommandResult> =>
    runCommand(process.execPath, ['--import', TSX_LOADER, path.join(REPO_ROOT, 'src/entry-points/cli/cli-main.ts'), ...args], { cwd, env });

  describe('where DATA_DIR holds no database', () => {
    it('when DATA_DIR is unset and ./data does not exist, then merchants list exits 1 naming the absolute directory, and creates nothing', async () => {
      const result = await cli(['merchants', 'list']);

      expect(result).to.deep.equal({ code: 1, stdout: '', stderr: NOT_FOUND(path.join(cwd, 'data')) });
      expect(readdirSync(cwd)).to.deep.equal([]);
    });

    it('when DATA_DIR names an empty directory, then a reading command exits 1 naming it and leaves the directory empty', async () => {
      mkdirSync(path.join(cwd, 'elsewhere'));

      const result = await cli(['wallet', 'balance', 'mer_demo', '--json'], { DATA_DIR: 'elsewhere' });

      expect(result).to.deep.equal({ code: 1, stdout: '', stderr: NOT_FOUND(path.join(cwd, 'elsewhere')) });
      expect(readdirSync(path.join(cwd, 'elsewhere'))).to.deep.equal([]);
    });

    it('when merchants create runs, then it starts a new database, says where on stderr, and the next command finds the merchant', async () => {
      const created = await cli(['merchants', 'create', '--name', 'First shop']);

      expect(created.code, created.stderr).to.equal(0);
      expect(created.stdout).to.match(/^mer_[0-9a-f]{20}\n$/);
      expect(created.stderr).to.equal(`created a new gateway database in ${path.join(cwd, 'data')}\n`);
      expect(existsSync(path.join(cwd, 'data', 'PG_VERSION'))).to.equal(true);

      const listed = await cli(['merchants', 'list', '--json']);

      expect({ code: listed.code, stderr: listed.stderr }).to.deep.equal({ code: 0, stderr: '' });
      expect((JSON.parse(listed.stdout) as { id: string; name: string }[]).map((m) => [m.id, m.name])).to.deep.equal([
        [created.stdout.trim(), 'First shop'],
      ]);
    });
  });

  describe('while an embedded gateway runs on the directory', () => {
    let main: MainProcess | null = null;

    afterEach(async () => {
      await main?.kill();
      main = null;
    });

    it('when a command runs, then it exits 4 with one sentence naming the directory and the process, and works once the gateway stopped', async () => {
      const dataDir = path.join(cwd, 'data');
      main = startMain({
        DATA_DIR: dataDir,
        HOST: '127.0.0.1',
        PORT: '0',
        METRICS_PORT: '0',
        SEED_DEMO_MERCHANT: 'false',
        LOG_LEVEL: 'info',
      });
      await main.waitForLog((line) => line.msg === 'listening', 90_000);

      const listed = await cli(['merchants', 'list']);
      const created = await cli(['merchants', 'create', '--name', 'While running']);

      const inUse =
        `error: the embedded database in ${dataDir} is in use by process ${String(main.child.pid)} (a running gateway or another CLI run): ` +
        'stop it and run the command again, or run the gateway in server mode (DATABASE_URL) to use the CLI beside it\n';
      expect(listed).to.deep.equal({ code: 4, stdout: '', stderr: inUse });
      expect(created).to.deep.equal({ code: 4, stdout: '', stderr: inUse });

      main.signal('SIGTERM');
      expect((await main.exited).code).to.equal(0);
      const after = await cli(['merchants', 'list']);
      expect(after).to.deep.equal({ code: 0, stdout: 'No merchants.\n', stderr: '' });
    });
  });
});
