import { expect } from 'chai';
import { serverNodeEnvironment, startMain, type MainProcess } from '../../helpers/main-process.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/eventually.js';

const SHARDS = 32;

type Log = Record<string, unknown>;

const isShardLine = (line: string): boolean => /shard/i.test(line);
/** `16-26, 27-31` → 16, 17, …, 31 (the ranges of the summary lines), ascending. */
const expandRanges = (ranges: string): number[] =>
  ranges
    .split(', ')
    .flatMap((range) => {
      const [from, to = from] = range.split('-').map(Number);
      return Array.from({ length: to! - from! + 1 }, (_, i) => from! + i);
    })
    .sort((a, b) => a - b);
const summaries = (node: MainProcess, prefix: string): Log[] =>
  node.logs.filter((line) => typeof line.msg === 'string' && line.msg.startsWith(prefix));

/**
 * What an operator reads when a node starts in server mode (src/main.ts on PostgreSQL and NATS, as deployed): the
 * sandbox key first, then one summary line per rebalance (`shards acquired: 32 (0-31)`), not a line per shard.
 */
describe('start-up output of a server-mode node', function () {
  this.timeout(180_000);
  let nats: TestNats;
  let databaseUrl: string;
  const nodes: MainProcess[] = [];

  before(async () => {
    nats = await startTestNats();
    databaseUrl = await (await testPostgres()).createDatabase('startup_output');
  });

  after(async () => {
    await Promise.all(nodes.map((node) => node.kill()));
    await nats.stop();
  });

  const start = (nodeId: string): MainProcess => {
    const node = startMain(
      serverNodeEnvironment(
        { databaseUrl, natsUrl: nats.url, nodeId },
        { GATEWAY_ENVIRONMENT: 'sandbox', CLUSTER_SHARDS: String(SHARDS), CLUSTER_LEASE_TTL_MS: '3000', SEED_DEMO_MERCHANT: 'true' },
      ),
    );
    nodes.push(node);
    return node;
  };

  it('when a node starts, then the sandbox key comes before any shard line, and the initial acquisition is one line with its count', async () => {
    const node = start('output-node-1');
    await node.waitForLog((line) => line.msg === 'listening', 90_000);
    await node.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('shards acquired: '), 30_000);

    const keyAt = node.lines.findIndex((line) => line.startsWith('Sandbox API key: sk_test_'));
    const firstShardLineAt = node.lines.findIndex(isShardLine);
    expect(keyAt, `the key is the first line:\n${node.lines.join('\n')}`).to.equal(0);
    expect(keyAt, 'the key before any shard line').to.be.below(firstShardLineAt);
    const acquired = summaries(node, 'shards acquired: ');
    expect(acquired).to.have.length(1);
    expect(acquired[0]).to.include({
      msg: `shards acquired: ${SHARDS} (0-${SHARDS - 1})`,
      acquired: SHARDS,
      shards: `0-${SHARDS - 1}`,
      owned: SHARDS,
    });
    expect(
      node.logs.filter((line) => isShardLine(String(line.msg))),
      'no line per shard',
    ).to.have.length(1);
  });

  it('when a second node joins and later leaves, then each rebalance is one summary line on each node', async () => {
    const [first] = nodes;
    const second = start('output-node-2');
    await second.waitForLog((line) => line.msg === 'listening', 90_000);
    // the joining node's first round finds every shard held; the first node hands half over at its next round and
    // the second takes them at its own
    await second.waitForLog((line) => typeof line.msg === 'string' && line.msg.startsWith('shards acquired: '), 30_000);

    const half = SHARDS / 2;
    expect(
      second.lines.some((line) => line.startsWith('Sandbox API key: ')),
      'the key is printed once, by the node that seeded',
    ).to.equal(false);
    expect(summaries(first!, 'shards handed over: ')).to.have.length(1);
    expect(summaries(first!, 'shards handed over: ')[0]).to.include({
      msg: `shards handed over: ${half} (${half}-${SHARDS - 1})`,
      handed_over: half,
      owned: half,
    });
    expect(summaries(second, 'shards acquired: ')).to.have.length(1);
    expect(summaries(second, 'shards acquired: ')[0]).to.include({
      msg: `shards acquired: ${half} (${half}-${SHARDS - 1})`,
      acquired: half,
      owned: half,
    });

    // the second node leaves: it hands its half over in one line, and the first takes it back in one line
    second.signal('SIGTERM');
    await second.outputClosed;
    expect(summaries(second, 'shards handed over: ')).to.have.length(1);
    expect(summaries(second, 'shards handed over: ')[0]).to.include({ handed_over: half, owned: 0 });
    // on a loaded machine the second node's shards can come free over more than one of the first node's lease rounds
    // (seen with both cores busy: a first line of 27-31 alone): one summary line per round, and together
    // they take back exactly the second half
    const takenBack = (): Log[] => summaries(first!, 'shards acquired: ').slice(1);
    await eventually(
      () => Promise.resolve(takenBack().reduce((sum, line) => sum + Number(line.acquired), 0) >= half),
      30_000,
      'the first node takes the shards back',
    );
    const rounds = takenBack();
    expect(rounds.map((line) => String(line.shards)).join(', ')).to.satisfy(
      (ranges: string) => expandRanges(ranges).join(',') === Array.from({ length: half }, (_, i) => half + i).join(','),
      'the rounds together take back exactly the second half',
    );
    for (const line of rounds) expect(line.msg).to.equal(`shards acquired: ${String(line.acquired)} (${String(line.shards)})`);
    expect(rounds.at(-1)).to.include({ owned: SHARDS });
    expect(
      first!.logs.filter((line) => isShardLine(String(line.msg))),
      'on the first node: acquired, handed over, then one line per round of taking back',
    ).to.have.length(2 + rounds.length);
  });
});
