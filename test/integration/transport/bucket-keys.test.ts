import { expect } from 'chai';
import { jetstreamManager, type JetStreamManager } from '@nats-io/jetstream';
import { Kvm } from '@nats-io/kv';
import type { NatsConnection } from '@nats-io/nats-core';
import { bucketKeys } from '../../../src/libraries/transport/bucket-keys.js';
import { connectNats } from '../../../src/libraries/transport/nats-connect.js';
import { testNats } from '../../helpers/nats.js';

describe('bucket keys: what a key-value bucket holds, in one request', function () {
  this.timeout(30_000);
  let nc: NatsConnection;
  let jsm: JetStreamManager;
  before(async () => {
    nc = await connectNats({ servers: [(await testNats()).url] });
    jsm = await jetstreamManager(nc);
  });
  after(async () => {
    await jsm.streams.delete('KV_bucket-keys').catch(() => false);
    await nc.close();
  });

  it('when keys were written and one deleted, then the filter lists the matching ones, the deleted one included', async () => {
    const kv = await new Kvm(nc).create('bucket-keys', { history: 1 });
    await kv.put('alpha.one', '1');
    await kv.put('alpha.two', '2');
    await kv.put('alpha.two', '2 again');
    await kv.put('beta.one', '3');
    await kv.delete('alpha.one');
    expect((await bucketKeys(jsm, 'bucket-keys', 'alpha.*')).sort()).to.deep.equal(['alpha.one', 'alpha.two']);
    expect((await bucketKeys(jsm, 'bucket-keys')).sort()).to.deep.equal(['alpha.one', 'alpha.two', 'beta.one']);
    expect(await bucketKeys(jsm, 'bucket-keys', 'gamma.*')).to.deep.equal([]);
    expect((await kv.get('alpha.one'))?.operation, 'its read says it is deleted').to.equal('DEL');
  });
});
