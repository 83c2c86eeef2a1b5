import { writeFileSync } from 'node:fs';
import path from 'node:path';
import { spawn } from 'node:child_process';
import { expect } from 'chai';
import { openPglite } from '../../../src/libraries/persistence/sql/sql-executor.js';
import { DataDirectoryInUseError } from '../../../src/libraries/errors/internal-errors.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

describe('PGlite data directory lock', function () {
  this.timeout(60_000);
  let dir: string;
  before(() => {
    dir = temporaryDir('gw-lock-');
  });
  after(() => {
    removeTemporaryDir(dir);
  });

  it('when another live process holds the directory, then opening it fails with a clear error and no change', async () => {
    const holder = spawn(process.execPath, ['-e', 'setTimeout(() => {}, 60000)'], { stdio: 'ignore' });
    try {
      writeFileSync(path.join(dir, 'gateway.lock'), String(holder.pid));
      const error = await openPglite({ dataDir: dir }).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(DataDirectoryInUseError).with.property('pid', holder.pid);
    } finally {
      holder.kill('SIGKILL');
    }
  });

  it('when the holder is gone (a stale lock), then the directory opens, and closing releases it', async () => {
    writeFileSync(path.join(dir, 'gateway.lock'), '999999');
    const db = await openPglite({ dataDir: dir });
    expect(await db.query('SELECT 1 AS one')).to.deep.equal([{ one: 1 }]);
    await db.close();
    const again = await openPglite({ dataDir: dir });
    await again.close();
  });
});
