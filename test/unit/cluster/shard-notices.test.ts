import { expect } from 'chai';
import { announceShardOwners, listenForShardOwners, shardOwnersNoticeOf } from '../../../src/cluster/shard-notices.js';
import type { ShardHold } from '../../../src/cluster/shard-manager.js';
import { SHARD_OWNERS_SUBJECT } from '../../../src/libraries/transport/nats-names.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';

/** A transport that only notifies and listens, in this process, on any subject. */
function noticeTransport() {
  const notified: { subject: string; payload: unknown }[] = [];
  const listeners: { subject: string; handler: (payload: unknown) => void }[] = [];
  const transport = {
    notify(subject: string, payload: unknown) {
      notified.push({ subject, payload });
      for (const listener of listeners) if (listener.subject === subject) listener.handler(JSON.parse(JSON.stringify(payload)));
    },
    listen(subject: string, handler: (payload: unknown) => void) {
      listeners.push({ subject, handler });
      return Promise.resolve({ stop: () => Promise.resolve() });
    },
  } as unknown as Transport;
  return { transport, notified };
}

describe('shard owners notices', () => {
  it('when a node announces what it acquired, then the other nodes learn it and the node itself does not', async () => {
    const { transport, notified } = noticeTransport();
    const learnt: { on: string; owner: string; acquired: readonly ShardHold[] }[] = [];
    for (const on of ['node-1', 'node-2']) {
      await listenForShardOwners(transport, { learn: (owner, acquired) => learnt.push({ on, owner, acquired }) }, on);
    }
    announceShardOwners(transport, 'node-1')([{ shard: 4, epoch: 3 }]);
    expect(notified).to.deep.equal([{ subject: SHARD_OWNERS_SUBJECT, payload: { owner: 'node-1', acquired: [{ shard: 4, epoch: 3 }] } }]);
    expect(learnt).to.deep.equal([{ on: 'node-2', owner: 'node-1', acquired: [{ shard: 4, epoch: 3 }] }]);
  });

  it('when a notice is not one (another version, a stray message), then it is ignored', async () => {
    const { transport } = noticeTransport();
    const learnt: string[] = [];
    await listenForShardOwners(transport, { learn: (owner) => learnt.push(owner) }, 'node-2');
    const strays: unknown[] = [
      null,
      'node-1',
      { owner: '', acquired: [] },
      { owner: 'node-1' },
      { owner: 'node-1', acquired: [{ shard: '4', epoch: 3 }] },
      { owner: 'node-1', acquired: [{ shard: 4, epoch: 1.5 }] },
      { owner: 'node-1', acquired: [null] },
      { owner: 7, acquired: [] },
    ];
    for (const stray of strays) {
      expect(shardOwnersNoticeOf(stray), JSON.stringify(stray)).to.equal(null);
      transport.notify(SHARD_OWNERS_SUBJECT, stray);
    }
    expect(learnt).to.deep.equal([]);
    expect(shardOwnersNoticeOf({ owner: 'node-1', acquired: [{ shard: 0, epoch: 1, extra: true }], version: 2 })).to.deep.equal({
      owner: 'node-1',
      acquired: [{ shard: 0, epoch: 1 }],
    });
  });
});
