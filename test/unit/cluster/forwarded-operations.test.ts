import { expect } from 'chai';
import { createClusterRouter, isNotApplied } from '../../../src/cluster/cluster-router.js';
import type { DomainHosts } from '../../../src/cluster/actor-router.js';
import type { ShardManager } from '../../../src/cluster/shard-manager.js';
import { shardOf } from '../../../src/cluster/shards.js';
import { systemClock } from '../../../src/libraries/clock/clock.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { ActorFailureError, NoResponderError } from '../../../src/libraries/errors/internal-errors.js';
import { requestDeadline } from '../../../src/libraries/actors/request-deadline.js';

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

function routerOf(name: string, owned: Set<number>, transport: Transport) {
  const manager = { owns: (shard: number) => owned.has(shard) } as unknown as ShardManager;
  const passivate = (): void => undefined;
  const hosts = {
    wallets: { passivate },
    apiKeys: { passivate },
    messages: { passivate },
    keyWebhooks: { forgetShard: passivate },
  } as unknown as DomainHosts;
  return createClusterRouter({
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
    a.handleOperations('work', async (merchantId) => {
      served += 1;
      // the hand-over begins while the operation runs: its next step is for the shard this node just left
      ownedByA.delete(SHARD);
      return a.forward('step', merchantId, {});
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
    a.handleOperations('work', () => {
      seen.push(requestDeadline());
      return Promise.resolve('done');
    });
    // further away than routerOf's ask timeout (1 s): a stalled owner may still answer it definitively
    const requestDeadlineAt = systemClock.now() + 60_000;

    expect(await b.forward('work', MERCHANT, {}, requestDeadlineAt)).to.equal('done');
    expect(await a.forward('work', MERCHANT, {}, requestDeadlineAt)).to.equal('done');

    expect(seen).to.deep.equal([requestDeadlineAt, requestDeadlineAt]);
  });
});
