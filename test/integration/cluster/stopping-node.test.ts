import { expect } from 'chai';
import { connect, type Socket } from 'node:net';
import { startCluster, type ClusterNode, type TestCluster } from '../../helpers/cluster.js';
import { eventually } from '../../helpers/eventually.js';

/** Resolves true when a new connection to the port is refused (the node stopped listening: its stop began). */
function refuses(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    socket.once('connect', () => {
      socket.destroy();
      resolve(false);
    });
    socket.once('error', () => {
      resolve(true);
    });
  });
}

describe('cluster: a stopping node takes no shard', function () {
  this.timeout(180_000);
  let cluster: TestCluster;

  before(async function () {
    this.timeout(120_000);
    // the renewal thread never speaks for the main thread here (tolerance 1 ms): every heartbeat in cluster_nodes is
    // a round of the main thread's shard manager, the one that would acquire
    cluster = await startCluster({
      nodes: 2,
      leaseTtlMs: 3_000,
      simulator: false,
      env: { SHUTDOWN_GRACE_MS: '60000', CLUSTER_STALL_TOLERANCE_MS: '1' },
    });
  });

  after(async () => {
    await (cluster as TestCluster | undefined)?.stop();
  });

  it('when a draining node is left alone by the other node leaving, then it takes none of the shards given up, and hands its own over on exit', async () => {
    await cluster.waitForBalance(['node-1', 'node-2'], 60_000);
    const stopping: ClusterNode = cluster.node('node-1');
    const leaving: ClusterNode = cluster.node('node-2');
    const mine = (await cluster.ownership()).get(stopping.id) ?? [];

    // a request whose headers never end keeps node-1 draining (up to the server's headers timeout, 15 s)
    const slow: Socket = connect(stopping.port, '127.0.0.1');
    await new Promise<void>((resolve) => slow.once('connect', resolve));
    slow.write('GET /health HTTP/1.1\r\nHost: gateway\r\n');
    slow.on('error', () => undefined);
    const stopBegan = await cluster.dbNow();
    stopping.process.kill('SIGTERM');
    await eventually(async () => ((await refuses(stopping.port)) ? true : null), 30_000, 'node-1 stops listening');

    // node-2 hands its shards over and leaves: node-1 is the only live node, its fair share all 64 shards
    expect((await cluster.kill(leaving, 'SIGTERM', 60_000)).code).to.equal(0);
    const heartbeat = async (): Promise<number | null> => {
      const [row] = await cluster.sql<{ at: number }>(
        `SELECT (extract(epoch FROM expires_at) * 1000)::float8 AS at FROM cluster_nodes WHERE node_id = $1`,
        [stopping.id],
      );
      return row?.at ?? null;
    };
    // two rounds of node-1's manager after node-2 left (each heartbeats, then would acquire)
    const left = (await heartbeat()) ?? 0;
    const once = await eventually(
      async () => {
        const at = await heartbeat();
        return at !== null && at > left ? at : null;
      },
      30_000,
      'a round of node-1',
    );
    await eventually(
      async () => {
        const at = await heartbeat();
        return at !== null && at > once ? at : null;
      },
      30_000,
      'a second round of node-1',
    );
    expect(stopping.state(), 'still draining').to.not.equal('exited');
    // the node's renewal thread runs, and held back for the silent main thread (tolerance 1 ms); its report crosses
    // from the thread to the node's log and through the pipe to this process, so it is waited for
    await eventually(
      () => Promise.resolve(stopping.output().includes('main thread silent for') ? true : null),
      30_000,
      'the renewal thread reporting the silent main thread',
    );

    const owners = await cluster.ownership();
    expect(owners.get(stopping.id) ?? [], 'only the shards it held before its stop').to.deep.equal(mine);
    const gained = await cluster.sql<{ shard: number }>(
      `SELECT shard FROM lease_audit WHERE owner = $1 AND at > to_timestamp($2::float8 / 1000)`,
      [stopping.id, stopBegan],
    );
    expect(gained, 'leases node-1 took after its stop began').to.deep.equal([]);

    slow.destroy();
    expect((await stopping.exited).code).to.equal(0);
    expect(await cluster.ownership(), 'everything handed over on exit').to.deep.equal(new Map());
  });
});
