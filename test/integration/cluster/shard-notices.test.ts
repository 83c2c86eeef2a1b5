import { expect } from 'chai';
import { createShardManager, type ShardManager } from '../../../src/cluster/shard-manager.js';
import { announceShardOwners, listenForShardOwners } from '../../../src/cluster/shard-notices.js';
import { openPostgresPersistence, type Persistence } from '../../../src/libraries/persistence/persistence.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { testNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';
import { eventually } from '../../helpers/eventually.js';

const SHARDS = 6;
/** Long enough that no round runs by itself during a test: each one is a `tick()` of the test's. */
const TTL_MS = 600_000;

interface TestNode {
  readonly id: string;
  readonly manager: ShardManager;
  readonly transport: Transport;
}

describe('shard acquisitions announced over NATS (real PostgreSQL leases, private nats-server)', function () {
  this.timeout(60_000);
  let persistence: Persistence;
  const nodes: TestNode[] = [];
  const listening: { stop(): Promise<void> }[] = [];

  before(async () => {
    const url = await (await testPostgres()).createDatabase('shard_notices');
    persistence = await openPostgresPersistence({ url, poolSize: 4 });
  });

  after(async () => {
    await Promise.all(listening.map((l) => l.stop()));
    await Promise.all(nodes.map((n) => n.manager.stop()));
    await Promise.all(nodes.map((n) => n.transport.close()));
    await persistence.close();
  });

  /** A node as the composition wires it: its acquisitions announced, the others' heard. */
  async function startNode(id: string): Promise<TestNode> {
    const transport = await connectNatsTransport({ servers: (await testNats()).url, name: id });
    const manager = createShardManager({
      nodeId: id,
      shards: SHARDS,
      leases: persistence.leases,
      ttlMs: TTL_MS,
      onAcquired: () => Promise.resolve(),
      onLost: () => Promise.resolve(),
      announce: announceShardOwners(transport, id),
    });
    listening.push(await listenForShardOwners(transport, manager, id));
    await manager.start();
    const node = { id, manager, transport };
    nodes.push(node);
    return node;
  }

  /** The node stops answering (frozen): its heartbeat and leases are past their TTL, as the database sees them. */
  async function expire(node: TestNode): Promise<void> {
    const sql = persistence.sql!;
    await sql.query(`UPDATE shard_leases SET expires_at = now() - interval '1 second' WHERE owner = $1`, [node.id]);
    await sql.query(`UPDATE cluster_nodes SET expires_at = now() - interval '1 second' WHERE node_id = $1`, [node.id]);
  }

  it("when a node takes over a frozen node's shards, then a third node names the new owner before any round of its own", async () => {
    const a = await startNode('node-a');
    const b = await startNode('node-b');
    const c = await startNode('node-c');
    // a took every shard alone; it hands the excess over, b and c take their share, and every node reads the holders
    await a.manager.tick();
    await b.manager.tick();
    await c.manager.tick();
    for (const node of nodes) await node.manager.tick();
    const ofA = a.manager.ownedShards();
    expect(ofA).to.have.length(2);
    for (const shard of ofA) expect(c.manager.ownerOf(shard), `shard ${shard} on c, before`).to.equal('node-a');

    await expire(a);
    // b's round: a counts no more, b's fair share is 3 and it takes the lowest of a's shards (c runs no round)
    await b.manager.tick();
    const taken = ofA.filter((shard) => b.manager.owns(shard));
    expect(taken, "the shard b took of a's").to.have.length(1);
    const lease = (await persistence.leases.list()).find((l) => l.shard === taken[0]);
    expect(lease?.owner).to.equal('node-b');
    await eventually(() => Promise.resolve(c.manager.ownerOf(taken[0]!) === 'node-b' ? true : null), 10_000, 'c names b, from its notice');
    const untouched = ofA.filter((shard) => !taken.includes(shard));
    for (const shard of untouched) expect(c.manager.ownerOf(shard), `shard ${shard}, which nobody took`).to.equal('node-a');
  });
});
