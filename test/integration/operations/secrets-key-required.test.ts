import { expect } from 'chai';
import { runCli } from '../../../src/composition/cli.js';
import { startMain } from '../../helpers/main-process.js';

/** Server mode without SECRETS_KEY stops before anything connects: the node and the CLI, with a message naming it. */
describe('SECRETS_KEY required in server mode', function () {
  this.timeout(60_000);
  // nothing listens there: a process that got past the configuration would fail on connecting, differently
  const unreachable = { DATABASE_URL: 'postgres://nobody@127.0.0.1:1/none', NATS_URL: 'nats://127.0.0.1:1' };

  it('when a production node starts without SECRETS_KEY, then it exits 1 naming SECRETS_KEY', async () => {
    const main = startMain({ NODE_ENV: 'production', ...unreachable });
    const exit = await main.exited;
    expect(exit.code).to.equal(1);
    expect(main.stderr()).to.include('"secrets.key" is required in server mode').and.to.include('SECRETS_KEY');
  });

  it('when the CLI runs in server mode without SECRETS_KEY, then it exits 1 naming SECRETS_KEY', async () => {
    const err: string[] = [];
    const code = await runCli(['merchants', 'list'], {
      env: { GATEWAY_MODE: 'server', ...unreachable },
      out: () => undefined,
      err: (text) => err.push(text),
    });
    expect(code).to.equal(1);
    expect(err.join('')).to.include('SECRETS_KEY');
  });
});
