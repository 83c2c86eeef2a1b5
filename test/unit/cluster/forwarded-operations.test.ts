import { expect } from 'chai';
import { createClusterRouter, isNotApplied } from '../../../src/cluster/cluster-router.js';
import type { DomainHosts } from '../../../src/cluster/actor-router.js';
import type { ShardManager } from '../../../src/cluster/shard-manager.js';
import { shardOf } from '../../../src/cluster/shards.js';
import { systemClock } from '../../../src/libraries/clock/clock.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { ActorFailureError, NoResponderError } from '../../../src/libraries/errors/internal-errors.js';

/** Two routers on an in-process "wire": `serve` registers a subject, `request` calls it (JSON both ways). */
function wire() {
  const served = new Map<string, (payload: unknown) => Promise<unknown>>();
  const requests: { from: string; subject: string }[] = [];
  const transportOf = (from: string): Transport =>
    ({
      kind: 'nats',
      async request(subject: string, payload: unknown) {
        requests.push({ from, subject });
        const handler = served.get(subject);
        if (!handler) throw new NoResponderError(subject);
        return JSON.parse(JSON.stringify(await handler(JSON.parse(JSON.stringify(payload))))) as unknown;
      },
      serve(subject: string, handler: (payload: unknown) => Promise<unknown>) {
        served.set(subject, handler);
        return Promise.resolve({
          stop: () => {
            served.delete(subject);
            return Promise.resolve();
          },
        });
      },
    }) as unknown as Transport;
  return { transportOf, requests };
}

const SHARDS = 8;
const MERCHANT = 'mer_forwarded';
const SHARD = shardOf(MERCHANT, SHARDS);

/** `holders`: the lease table as this node last read it (shard → node id); nothing known by default. */
function routerOf(name: string, owned: Set<number>, transport: Transport, holders = new Map<number, string>()) {
  const manager = {
    owns: (shard: number) => owned.has(shard),
    ownedShards: () => [...owned].sort((x, y) => x - y),
    ownerOf: (shard: number) => (owned.has(shard) ? name : (holders.get(shard) ?? null)),
  } as unknown as ShardManager;
  const passivate = (): void => undefined;
  const hosts = {
    wallets: { passivate },
    apiKeys: { passivate },
    messages: { passivate },
    keyWebhooks: { forgetShard: passivate },
  } as unknown as DomainHosts;
  return createClusterRouter({
    nodeId: name,
    hosts,
    shards: SHARDS,
    manager,
    transport,
    clock: systemClock,
    requestTimeoutMs: 1_000,
    failoverDeadlineMs: 300,
  });
}

describe('cluster router: an operation forwarded to a node that loses the shard meanwhile', () => {
  it('when the owner gives the shard up while serving a forwarded operation, then its steps do not wait for a new owner: the forwarder is told to go elsewhere', async () => {
    const { transportOf, requests } = wire();
    const ownedByA = new Set([SHARD]);
    const a = routerOf('a', ownedByA, transportOf('a'));
    const b = routerOf('b', new Set(), transportOf('b'));
    await a.serveShard(SHARD);
    let served = 0;
    a.handleOperations('step', () => Promise.resolve('done'));
    a.handleOperations('work', async (merchantId, _operation, scope) => {
      served += 1;
      // the hand-over begins while the operation runs: its next step (in the operation's scope) is for the shard this
      // node just left
      ownedByA.delete(SHARD);
      return a.forward('step', merchantId, {}, scope);
    });

    let failure: unknown = null;
    await b.forward('work', MERCHANT, {}).catch((error: unknown) => {
      failure = error;
    });

    expect(served, 'the owner took the operation').to.be.at.least(1);
    expect(
      requests.filter((r) => r.from === 'a'),
      'the owner asked nobody for the shard it left',
    ).to.deep.equal([]);
    // nobody owns the shard in this test: the forwarder gives up at its failover deadline, as for any ask
    expect(failure).to.be.instanceOf(ActorFailureError);
    expect((failure as ActorFailureError).reason).to.equal('unavailable');
  });

  it('when a step of an operation served here (not forwarded) meets a shard that left, then it waits for an owner as any ask does', async () => {
    const { transportOf, requests } = wire();
    const owned = new Set<number>();
    const a = routerOf('a', owned, transportOf('a'));
    a.handleOperations('step', () => Promise.resolve('done'));
    let failure: unknown = null;
    await a.forward('step', MERCHANT, {}).catch((error: unknown) => {
      failure = error;
    });
    expect(requests.length, 'it asked the shard until its failover deadline').to.be.greaterThan(1);
    expect(isNotApplied(failure)).to.equal(false);
    expect((failure as ActorFailureError).reason).to.equal('unavailable');
  });

  it("when a request is forwarded, then the owner serves it under the request's own deadline, as the node it reached would", async () => {
    const { transportOf } = wire();
    const a = routerOf('a', new Set([SHARD]), transportOf('a'));
    const b = routerOf('b', new Set(), transportOf('b'));
    await a.serveShard(SHARD);
    const seen: (number | null)[] = [];
    a.handleOperations('work', (_merchantId, _operation, scope) => {
      seen.push(scope.deadline);
      return Promise.resolve('done');
    });
    // further away than routerOf's ask timeout (1 s): a stalled owner may still answer it definitively
    const requestDeadlineAt = systemClock.now() + 60_000;

    expect(await b.forward('work', MERCHANT, {}, { deadline: requestDeadlineAt })).to.equal('done');
    expect(await a.forward('work', MERCHANT, {}, { deadline: requestDeadlineAt })).to.equal('done');

    expect(seen).to.deep.equal([requestDeadlineAt, requestDeadlineAt]);
  });
});

/** A merchant of each shard of `SHARDS`, found by hashing. */
const merchantOfShard = (shard: number): string => {
  for (let n = 0; ; n++) if (shardOf(`mer_${n}`, SHARDS) === shard) return `mer_${n}`;
};

describe("cluster router: requests addressed to the lease table's owner", () => {
  it("when the lease table names the shard's owner, then a request goes to that node's own subject, not to the shard's queue group", async () => {
    const { transportOf, requests } = wire();
    const a = routerOf('a', new Set([SHARD]), transportOf('a'));
    const b = routerOf('b', new Set(), transportOf('b'), new Map([[SHARD, 'a']]));
    await a.serveShard(SHARD);
    a.handleOperations('work', () => Promise.resolve('done'));

    expect(await b.forward('work', MERCHANT, {})).to.equal('done');
    expect(requests).to.deep.equal([{ from: 'b', subject: `gw.shard.${SHARD}.a` }]);
  });

  it('when the named node does not serve the shard (the table is a round old, or it predates owner subjects), then the same attempt goes to the queue group', async () => {
    const { transportOf, requests } = wire();
    const a = routerOf('a', new Set([SHARD]), transportOf('a'));
    const b = routerOf('b', new Set(), transportOf('b'), new Map([[SHARD, 'gone.node']]));
    await a.serveShard(SHARD);
    let served = 0;
    a.handleOperations('work', () => {
      served += 1;
      return Promise.resolve('done');
    });

    expect(await b.forward('work', MERCHANT, {})).to.equal('done');
    expect(requests).to.deep.equal([
      { from: 'b', subject: `gw.shard.${SHARD}.gone_2e_node` },
      { from: 'b', subject: `gw.shard.${SHARD}` },
    ]);
    expect(served, 'applied once').to.equal(1);
  });

  it('when the table names no owner, or names the requester itself (it gave the shard up since), then the request goes to the queue group', async () => {
    const { transportOf, requests } = wire();
    const a = routerOf('a', new Set([SHARD]), transportOf('a'));
    await a.serveShard(SHARD);
    a.handleOperations('work', () => Promise.resolve('done'));
    const unknowing = routerOf('b', new Set(), transportOf('b'));
    const outdated = routerOf('c', new Set(), transportOf('c'), new Map([[SHARD, 'c']]));

    expect(await unknowing.forward('work', MERCHANT, {})).to.equal('done');
    expect(await outdated.forward('work', MERCHANT, {})).to.equal('done');
    expect(requests.map((r) => r.subject)).to.deep.equal([`gw.shard.${SHARD}`, `gw.shard.${SHARD}`]);
  });

  it('when one of its two subjects cannot be served (NATS away), then the shard is served on neither and the failure is reported', async () => {
    const { transportOf } = wire();
    const wireTransport = transportOf('a');
    const stopped: string[] = [];
    const failing = {
      ...wireTransport,
      request: wireTransport.request.bind(wireTransport),
      serve: async (subject: string, handler: (payload: unknown) => Promise<unknown>) => {
        if (subject === `gw.shard.${SHARD}.a`) throw new Error('NATS unavailable');
        const server = await wireTransport.serve(subject, handler);
        return {
          stop: () => {
            stopped.push(subject);
            return server.stop();
          },
        };
      },
    };
    const a = routerOf('a', new Set([SHARD]), failing);

    const error = await a.serveShard(SHARD).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(Error).with.property('message', 'NATS unavailable');
    expect(stopped, 'the subject served is stopped').to.deep.equal([`gw.shard.${SHARD}`]);
  });

  it('when a node leaves a shard, then it answers on neither subject', async () => {
    const { transportOf, requests } = wire();
    const ownedByA = new Set([SHARD]);
    const a = routerOf('a', ownedByA, transportOf('a'));
    const b = routerOf('b', new Set(), transportOf('b'), new Map([[SHARD, 'a']]));
    await a.serveShard(SHARD);
    a.handleOperations('work', () => Promise.resolve('done'));
    ownedByA.delete(SHARD);
    await a.leaveShard(SHARD);

    const error = await b.forward('work', MERCHANT, {}).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(Error);
    expect(new Set(requests.map((r) => r.subject)), 'tried both until the failover deadline').to.deep.equal(
      new Set([`gw.shard.${SHARD}.a`, `gw.shard.${SHARD}`]),
    );
  });
});

describe('cluster router: routing hints from the shards each owner names in its replies', () => {
  it('when an owner answers, then the requester groups every shard it named under the lowest of them, and forgets a shard answered not_owner', async () => {
    const { transportOf } = wire();
    const ownedByA = new Set([2, 5, 6]);
    const a = routerOf('a', ownedByA, transportOf('a'));
    const b = routerOf('b', new Set(), transportOf('b'));
    for (const shard of ownedByA) await a.serveShard(shard);
    a.handleOperations('work', () => Promise.resolve('done'));
    expect(
      [2, 5, 6, 7].map((shard) => b.shardGroupOf(shard)),
      'nothing known yet',
    ).to.deep.equal([2, 5, 6, 7]);

    expect(await b.forward('work', merchantOfShard(6), {})).to.equal('done');
    expect([2, 5, 6, 7].map((shard) => b.shardGroupOf(shard))).to.deep.equal([2, 2, 2, 7]);

    // shard 5 moves away (to nobody, here): the requester learns it from the not_owner answer
    ownedByA.delete(5);
    await b.forward('work', merchantOfShard(5), {}).catch(() => undefined);
    expect([2, 5, 6].map((shard) => b.shardGroupOf(shard))).to.deep.equal([2, 5, 2]);
  });

  it('when the owner leaves a shard, then its answers from then on no longer name it', async () => {
    const { transportOf } = wire();
    const ownedByA = new Set([2, 5, 6]);
    const a = routerOf('a', ownedByA, transportOf('a'));
    for (const shard of ownedByA) await a.serveShard(shard);
    a.handleOperations('work', () => Promise.resolve('done'));
    const b = routerOf('b', new Set(), transportOf('b'));
    await b.forward('work', merchantOfShard(2), {});
    expect([2, 5, 6].map((shard) => b.shardGroupOf(shard))).to.deep.equal([2, 2, 2]);

    ownedByA.delete(5);
    await a.leaveShard(5);
    const c = routerOf('c', new Set(), transportOf('c'));
    await c.forward('work', merchantOfShard(6), {});
    expect([2, 5, 6].map((shard) => c.shardGroupOf(shard))).to.deep.equal([2, 5, 2]);
  });

  it('when a node from before the hints answers (it names no shards), then the requester drops every hint: it groups nothing until told again', async () => {
    const { transportOf } = wire();
    const a = routerOf('a', new Set([2, 5]), transportOf('a'));
    const b = routerOf('b', new Set(), transportOf('b'));
    await a.serveShard(2);
    a.handleOperations('work', () => Promise.resolve('done'));
    await b.forward('work', merchantOfShard(2), {});
    expect(b.shardGroupOf(5)).to.equal(2);
    // shard 7's owner runs the version before the hints
    await transportOf('old').serve('gw.shard.7', () => Promise.resolve({ outcome: 'ok', value: 'old done' }));
    expect(await b.forward('work', merchantOfShard(7), {})).to.equal('old done');
    expect([2, 5].map((shard) => b.shardGroupOf(shard))).to.deep.equal([2, 5]);
  });

  it('when a step runs for a shard the node does not hold, then it is refused as not applied; a running one is waited for by leaving the shard', async () => {
    const { transportOf } = wire();
    const owned = new Set([3]);
    const a = routerOf('a', owned, transportOf('a'));
    await a.serveShard(3);
    let refused: unknown = null;
    await a
      .runForShardOf(merchantOfShard(4), () => Promise.resolve('never'))
      .catch((error: unknown) => {
        refused = error;
      });
    expect(isNotApplied(refused)).to.equal(true);

    let finishStep!: () => void;
    const step = a.runForShardOf(
      merchantOfShard(3),
      () =>
        new Promise<string>((resolve) => {
          finishStep = () => {
            resolve('done');
          };
        }),
    );
    owned.delete(3);
    let left = false;
    const leaving = a.leaveShard(3).then(() => {
      left = true;
    });
    await new Promise((resolve) => setImmediate(resolve));
    expect(left, 'leaving waits for the step').to.equal(false);
    finishStep();
    expect(await step).to.equal('done');
    await leaving;
    expect(left).to.equal(true);
  });

  it('when a step running for a shard meets that shard gone, then its asks do not wait for a new owner: it fails as not applied at once', async () => {
    const { transportOf, requests } = wire();
    const owned = new Set([3]);
    const a = routerOf('a', owned, transportOf('a'));
    const merchant = merchantOfShard(3);
    a.handleOperations('step', () => Promise.resolve('done'));
    let failure: unknown = null;
    await a
      .runForShardOf(merchant, (scope) => {
        owned.delete(3);
        return a.forward('step', merchant, {}, scope);
      })
      .catch((error: unknown) => {
        failure = error;
      });
    expect(isNotApplied(failure)).to.equal(true);
    expect(requests, 'no wait for an owner, not even one try elsewhere').to.deep.equal([]);
  });
});
