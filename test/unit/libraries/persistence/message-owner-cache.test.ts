import { expect } from 'chai';
import type { Directory } from '../../../../src/libraries/persistence/directory-port.js';
import { withMessageOwnerCache } from '../../../../src/libraries/persistence/message-owner-cache.js';

/** The owner half of a directory, counting the database round trips and releasing lookups on demand. */
function fakeDirectory() {
  const owners = new Map<string, string>();
  const waiting: (() => void)[] = [];
  const calls = { lookups: 0 };
  let failNext = false;
  const directory = {
    messageOwner(messageId: string) {
      calls.lookups++;
      const fail = failNext;
      failNext = false;
      return new Promise<string | null>((resolve, reject) => {
        waiting.push(() => {
          if (fail) reject(new Error('connection lost'));
          else resolve(owners.get(messageId) ?? null);
        });
      });
    },
  } as Pick<Directory, 'messageOwner'> as Directory;
  return {
    directory,
    owners,
    calls,
    failNextLookup() {
      failNext = true;
    },
    /** Answers every lookup waiting so far. */
    answer() {
      for (const release of waiting.splice(0)) release();
    },
  };
}

/** Starts a lookup, answers it, returns its result. */
async function lookup(fake: ReturnType<typeof fakeDirectory>, cached: Directory, messageId: string): Promise<string | null> {
  const result = cached.messageOwner(messageId);
  fake.answer();
  return result;
}

describe('message owner cache', () => {
  it('when this node remembered a message owner (its creation just recorded it), then looking it up asks the database nothing', async () => {
    const fake = fakeDirectory();
    const cached = withMessageOwnerCache(fake.directory, 10);
    cached.rememberOwner('msg_1', 'mer_1');
    expect(await cached.messageOwner('msg_1')).to.equal('mer_1');
    expect(fake.calls).to.deep.equal({ lookups: 0 });
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
    fake.answer();
    expect(await Promise.all(lookups)).to.deep.equal(['mer_1', 'mer_1', 'mer_1', 'mer_1', 'mer_1']);
    expect(fake.calls.lookups).to.equal(1);
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
