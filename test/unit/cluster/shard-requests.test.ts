import { expect } from 'chai';
import { createClusterRouter } from '../../../src/cluster/cluster-router.js';
import { encodeShardSet } from '../../../src/cluster/shards.js';
import type { DomainHosts } from '../../../src/cluster/actor-router.js';
import type { ShardManager } from '../../../src/cluster/shard-manager.js';
import { systemClock } from '../../../src/libraries/clock/clock.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';

const SHARD = 3;

/** A router owning SHARD, and the handler it serves the shard's subject with. */
async function servedShard() {
  const served: { handler?: (payload: unknown) => Promise<unknown> } = {};
  const asked: unknown[] = [];
  const transport = {
    kind: 'nats',
    serve(_subject: string, serve: (payload: unknown) => Promise<unknown>) {
      served.handler = serve;
      return Promise.resolve({ stop: () => Promise.resolve() });
    },
  } as unknown as Transport;
  const host = {
    handles: (type: string) => type === 'balance',
    ref: () => ({
      ask: (command: unknown) => {
        asked.push(command);
        return Promise.resolve({ answered: true });
      },
    }),
  };
  const hosts = { wallets: host, apiKeys: host, messages: host } as unknown as DomainHosts;
  const manager = { owns: (shard: number) => shard === SHARD, ownedShards: () => [SHARD] } as unknown as ShardManager;
  const router = createClusterRouter({
    nodeId: 'node-a',
    hosts,
    shards: 8,
    manager,
    transport,
    clock: systemClock,
    requestTimeoutMs: 1_000,
    failoverDeadlineMs: 300,
  });
  await router.serveShard(SHARD);
  const serve = served.handler;
  if (!serve) throw new Error('the shard is not served');
  return { serve, asked };
}

describe('cluster router: requests off the wire are checked', () => {
  it('when a request is not a shard request (not an object, unknown kind, no id, a command without a type, a deadline that is not a number), then it is refused and no actor is asked', async () => {
    const { serve, asked } = await servedShard();
    const malformed: unknown[] = [
      null,
      'wallet',
      [],
      { kind: 'ledger', id: 'mer_a', command: { type: 'balance' } },
      { kind: 'wallet', command: { type: 'balance' } },
      { kind: 'wallet', id: 'mer_a', command: { kind: 'balance' } },
      { kind: 'wallet', id: 'mer_a', command: 'balance' },
      { kind: 'wallet', id: 'mer_a', command: { type: 'balance' }, deadline: 'soon' },
      { kind: 'operation', merchantId: 'mer_a', operation: {} },
    ];
    for (const payload of malformed) {
      expect(await serve(payload), JSON.stringify(payload)).to.deep.equal({ outcome: 'refused', detail: 'not a shard request' });
    }
    expect(asked).to.deep.equal([]);
  });

  it('when a command names no command of its actor, then it is refused and the actor is not asked', async () => {
    const { serve, asked } = await servedShard();
    const reply = await serve({ kind: 'wallet', id: 'mer_a', command: { type: 'drain_everything' } });
    expect(reply).to.deep.include({ outcome: 'refused' });
    expect(asked).to.deep.equal([]);
  });

  it('when a request is well formed, then its command reaches the actor whole and the answer goes back, naming the shards this node holds', async () => {
    const { serve, asked } = await servedShard();
    const reply = await serve({ kind: 'wallet', id: 'mer_a', command: { type: 'balance' }, deadline: Date.now() + 1_000 });
    expect(reply).to.deep.equal({ outcome: 'ok', value: { answered: true }, owned: encodeShardSet([SHARD], 8) });
    expect(asked).to.deep.equal([{ type: 'balance' }]);
  });
});
