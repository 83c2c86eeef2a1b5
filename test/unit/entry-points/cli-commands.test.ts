import { expect } from 'chai';
import { shardRanges } from '../../../src/entry-points/cli/cluster-commands.js';
import { parseCommandLine } from '../../../src/entry-points/cli/command-line.js';

describe('operator CLI: cluster and webhook commands', () => {
  it('when shards are listed, then consecutive runs collapse into ranges, in order', () => {
    expect(shardRanges([])).to.equal('');
    expect(shardRanges([5])).to.equal('5');
    expect(shardRanges([3, 0, 1, 2, 7, 9, 10])).to.equal('0-3,7,9-10');
    expect(shardRanges([63, 61])).to.equal('61,63');
  });

  it('when the new commands are parsed, then they run with their arguments and reject bad ones', () => {
    expect(parseCommandLine(['cluster', 'status'])).to.include({ type: 'run', name: 'cluster status', needsScheduler: false });
    expect(parseCommandLine(['webhooks', 'dead-letters', '--merchant', 'mer_1', '--limit', '5', '--json'])).to.include({
      type: 'run',
      json: true,
    });
    expect(parseCommandLine(['webhooks', 'replay', 'evt:abc'])).to.include({ type: 'run', name: 'webhooks replay' });
    expect(parseCommandLine(['webhooks', 'replay'])).to.include({ type: 'usage_error' });
    expect(parseCommandLine(['webhooks', 'dead-letters', '--limit', '0'])).to.deep.include({ type: 'usage_error' });
    expect(parseCommandLine(['cluster', 'status', 'extra'])).to.include({ type: 'usage_error' });
  });
});
