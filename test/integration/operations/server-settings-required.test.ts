import { expect } from 'chai';
import { readdirSync } from 'node:fs';
import { createServer, type Server } from 'node:net';
import { startMain, TEST_SECRETS_KEY } from '../../helpers/main-process.js';
import { removeTemporaryDir, temporaryDir } from '../../helpers/temporary-dirs.js';

/** Server mode without NATS_URL is refused with the configuration, before the node opens its database. */
describe('NATS_URL required by a server-mode node', function () {
  this.timeout(60_000);
  let database: Server;
  let connections = 0;
  let dataDir: string;

  before(async () => {
    // stands for the database server: a node that got past its configuration would connect here
    database = createServer((socket) => {
      connections += 1;
      socket.destroy();
    });
    await new Promise<void>((resolve) => database.listen(0, '127.0.0.1', resolve));
    dataDir = temporaryDir('gw-nats-required-');
  });

  after(async () => {
    await new Promise<void>((resolve) =>
      database.close(() => {
        resolve();
      }),
    );
    removeTemporaryDir(dataDir);
  });

  it('when a server-mode node starts without NATS_URL, then it exits 1 with one line naming NATS_URL, having opened no database', async () => {
    const address = database.address();
    if (address === null || typeof address === 'string') throw new Error('no port');
    const main = startMain({
      GATEWAY_MODE: 'server',
      DATABASE_URL: `postgres://nobody@127.0.0.1:${address.port}/none`,
      NATS_URL: '',
      SECRETS_KEY: TEST_SECRETS_KEY,
      DATA_DIR: dataDir,
      PORT: '0',
      METRICS_PORT: '0',
    });
    const exit = await main.exited;
    await main.outputClosed;
    expect(exit.code).to.equal(1);
    expect(main.stderr()).to.equal('Invalid configuration: server mode needs NATS_URL, the NATS server(s) (comma separated)\n');
    expect(main.lines).to.deep.equal([]);
    expect(connections).to.equal(0);
    expect(readdirSync(dataDir)).to.deep.equal([]);
  });
});
