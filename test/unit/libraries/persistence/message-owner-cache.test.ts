import { expect } from 'chai';
import type { Directory } from '../../../../src/libraries/persistence/directory-port.js';
import { OWNER_LOOKUP_BATCH, withMessageOwnerCache } from '../../../../src/libraries/persistence/message-owner-cache.js';

/** The owner half of a directory, counting the database round trips and releasing lookups on demand. */
function fakeDirectory() {
  const owners = new Map<string, string>();
  const waiting: (() => void)[] = [];
  const calls = { lookups: 0, ids: [] as string[][] };
  let failNext = false;
  const directory = {
    messageOwners(messageIds: readonly string[]) {
      calls.lookups++;
      calls.ids.push([...messageIds]);
      const fail = failNext;
      failNext = false;
      return new Promise<ReadonlyMap<string, string>>((resolve, reject) => {
        waiting.push(() => {
          if (fail) reject(new Error('connection lost'));
          else resolve(new Map(messageIds.flatMap((id) => (owners.has(id) ? [[id, owners.get(id)!] as const] : []))));
        });
      });
    },
  } as Pick<Directory, 'messageOwners'> as Directory;
  return {
    directory,
    owners,
    calls,
    failNextLookup() {
      failNext = true;
    },
    /** Lets the lookups of this turn go out, then answers every query waiting so far. */
    async answer() {
      await new Promise((resolve) => setImmediate(resolve));
      for (const release of waiting.splice(0)) release();
    },
  };
}

/** Starts a lookup, answers it, returns its result. */
async function lookup(fake: ReturnType<typeof fakeDirectory>, cached: Directory, messageId: string): Promise<string | null> {
  const result = cached.messageOwner(messageId);
  await fake.answer();
  return result;
}

describe('message owner cache', () => {
  it('when this node remembered a message owner (its creation just recorded it), then looking it up asks the database nothing', async () => {
    const fake = fakeDirectory();
    const cached = withMessageOwnerCache(fake.directory, 10);
    cached.rememberOwner('msg_1', 'mer_1');
    expect(await cached.messageOwner('msg_1')).to.equal('mer_1');
    expect(fake.calls.lookups).to.equal(0);
  });

  it('when an owner is remembered again with another merchant, then the first stays (an owner never changes)', async () => {
    const fake = fakeDirectory();
    const cached = withMessageOwnerCache(fake.directory, 10);
    cached.rememberOwner('msg_1', 'mer_1');
    cached.rememberOwner('msg_1', 'mer_2');
    expect(await cached.messageOwner('msg_1')).to.equal('mer_1');
  });

  it('when a known message is looked up twice, then the database is asked once', async () => {
    const fake = fakeDirectory();
    fake.owners.set('msg_1', 'mer_1');
    const cached = withMessageOwnerCache(fake.directory, 10);
    expect(await lookup(fake, cached, 'msg_1')).to.equal('mer_1');
    expect(await cached.messageOwner('msg_1')).to.equal('mer_1');
    expect(fake.calls.lookups).to.equal(1);
  });

  it('when five lookups of one message arrive together, then they share one query', async () => {
    const fake = fakeDirectory();
    fake.owners.set('msg_1', 'mer_1');
    const cached = withMessageOwnerCache(fake.directory, 10);
    const lookups = Array.from({ length: 5 }, () => cached.messageOwner('msg_1'));
    await fake.answer();
    expect(await Promise.all(lookups)).to.deep.equal(['mer_1', 'mer_1', 'mer_1', 'mer_1', 'mer_1']);
    expect(fake.calls.lookups).to.equal(1);
  });

  it('when lookups of several messages miss in one turn, then one query asks for all of them, and each gets its own owner', async () => {
    const fake = fakeDirectory();
    fake.owners.set('msg_1', 'mer_1');
    fake.owners.set('msg_2', 'mer_2');
    const cached = withMessageOwnerCache(fake.directory, 10);
    cached.rememberOwner('msg_3', 'mer_3');
    const lookups = ['msg_1', 'msg_2', 'msg_3', 'msg_unknown', 'msg_1'].map((id) => cached.messageOwner(id));
    await fake.answer();
    expect(await Promise.all(lookups)).to.deep.equal(['mer_1', 'mer_2', 'mer_3', null, 'mer_1']);
    // the remembered one is not asked for, the repeated one once
    expect(fake.calls.ids).to.deep.equal([['msg_1', 'msg_2', 'msg_unknown']]);
    expect(await cached.messageOwner('msg_2')).to.equal('mer_2');
    expect(fake.calls.lookups, 'found owners are remembered').to.equal(1);
  });

  it('when more lookups miss in one turn than one query takes, then they go out as several queries', async () => {
    const fake = fakeDirectory();
    const ids = Array.from({ length: OWNER_LOOKUP_BATCH + 1 }, (_, i) => `msg_${i}`);
    for (const id of ids) fake.owners.set(id, 'mer_1');
    const cached = withMessageOwnerCache(fake.directory, ids.length);
    const lookups = ids.map((id) => cached.messageOwner(id));
    await fake.answer();
    expect(await Promise.all(lookups)).to.deep.equal(ids.map(() => 'mer_1'));
    expect(fake.calls.ids.map((chunk) => chunk.length)).to.deep.equal([OWNER_LOOKUP_BATCH, 1]);
  });

  it('when a message is unknown, then that is not remembered: once recorded elsewhere, the next lookup finds it', async () => {
    const fake = fakeDirectory();
    const cached = withMessageOwnerCache(fake.directory, 10);
    expect(await lookup(fake, cached, 'msg_1')).to.equal(null);
    // another node records the owner
    fake.owners.set('msg_1', 'mer_1');
    expect(await lookup(fake, cached, 'msg_1')).to.equal('mer_1');
    expect(fake.calls.lookups).to.equal(2);
  });

  it('when lookups go to the database, then the observer is told how many message ids each query asks for, and nothing for hits', async () => {
    const fake = fakeDirectory();
    const asked: number[] = [];
    const cached = withMessageOwnerCache(fake.directory, 10_000, (messageIds) => asked.push(messageIds));
    cached.rememberOwner('msg_known', 'mer_1');
    fake.owners.set('msg_a', 'mer_1');
    const ids = Array.from({ length: OWNER_LOOKUP_BATCH + 2 }, (_, i) => `msg_${i}`);
    const lookups = [...ids, 'msg_known', 'msg_0'].map((id) => cached.messageOwner(id));
    await fake.answer();
    await Promise.all(lookups);
    expect(asked).to.deep.equal([OWNER_LOOKUP_BATCH, 2]);
  });

  it('when a lookup fails, then its callers see the failure and the next lookup asks again', async () => {
    const fake = fakeDirectory();
    fake.owners.set('msg_1', 'mer_1');
    const cached = withMessageOwnerCache(fake.directory, 10);
    fake.failNextLookup();
    const failed = await lookup(fake, cached, 'msg_1').catch((error: unknown) => error);
    expect(failed).to.be.instanceOf(Error);
    expect(await lookup(fake, cached, 'msg_1')).to.equal('mer_1');
    expect(fake.calls.lookups).to.equal(2);
  });

  it('when more owners than the limit are remembered, then the oldest is forgotten first', async () => {
    const fake = fakeDirectory();
    fake.owners.set('msg_1', 'mer_1');
    const cached = withMessageOwnerCache(fake.directory, 2);
    cached.rememberOwner('msg_1', 'mer_1');
    cached.rememberOwner('msg_2', 'mer_2');
    cached.rememberOwner('msg_3', 'mer_3');
    expect(await cached.messageOwner('msg_3')).to.equal('mer_3');
    expect(await cached.messageOwner('msg_2')).to.equal('mer_2');
    expect(fake.calls.lookups, 'the two newest are remembered').to.equal(0);
    expect(await lookup(fake, cached, 'msg_1')).to.equal('mer_1');
    expect(fake.calls.lookups, 'the oldest was forgotten').to.equal(1);
  });

  it('when another directory method is replaced after wrapping, then the cache calls the replacement (nothing is copied)', async () => {
    const fake = fakeDirectory();
    const cached = withMessageOwnerCache(fake.directory, 10);
    Object.assign(fake.directory, { merchants: () => Promise.resolve([]) });
    expect(await cached.merchants()).to.deep.equal([]);
  });
});
