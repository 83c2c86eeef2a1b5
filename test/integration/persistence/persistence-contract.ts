import { expect } from 'chai';
import type { MerchantRecord } from '../../../src/libraries/persistence/directory-port.js';
import type { JournalAppend } from '../../../src/libraries/persistence/journal-port.js';
import type { Persistence } from '../../../src/libraries/persistence/persistence.js';
import { DuplicateRecordError, EnvironmentMismatchError, JournalConflictError } from '../../../src/libraries/errors/internal-errors.js';

/**
 * The contract every persistence adapter passes (PostgreSQL, PGlite, MongoDB). `open` gives a fresh, empty
 * store for each test. `writesCompanions`: whether the adapter writes companion records (JournalAppend.companions),
 * which it must also say of itself.
 */
export function persistenceContract(open: () => Promise<Persistence>, { writesCompanions }: { writesCompanions: boolean }): void {
  let store: Persistence;
  beforeEach(async () => {
    store = await open();
  });
  afterEach(async () => {
    await store.close();
  });

  const append = (key: string, seq: number, events: unknown[], extra: Partial<JournalAppend> = {}): JournalAppend => ({
    key,
    seq,
    events,
    outbox: [],
    at: 1_780_000_000_000 + seq,
    ...extra,
  });

  describe('journal', () => {
    it('when records are appended, then they read back in sequence order with their events intact', async () => {
      const events = [{ type: 'charged', amount: 1_234_567, note: 'ünïcødé ✉️', nested: { list: [1, 2, 3] }, none: null }];
      await store.journal.append(append('wallet:m1', 1, events));
      await store.journal.append(append('wallet:m1', 2, [{ type: 'refunded' }]));
      await store.journal.append(append('wallet:m2', 1, [{ type: 'other' }]));
      const records = await store.journal.read('wallet:m1', 0);
      expect(records.map((r) => r.seq)).to.deep.equal([1, 2]);
      expect(records[0]!.events).to.deep.equal(events);
      expect(records[0]!.at).to.equal(1_780_000_000_001);
      expect((await store.journal.read('wallet:m1', 1)).map((r) => r.seq)).to.deep.equal([2]);
      expect(await store.journal.read('wallet:unknown', 0)).to.deep.equal([]);
    });

    it('when a sequence number is taken, then a second append of it fails with a conflict and changes nothing', async () => {
      await store.journal.append(append('k', 1, [{ v: 'first' }]));
      const error = await store.journal.append(append('k', 1, [{ v: 'second' }])).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(JournalConflictError).with.property('reason', 'sequence_taken');
      expect((await store.journal.read('k', 0)).map((r) => r.events)).to.deep.equal([[{ v: 'first' }]]);
    });

    it('when two writers race for the same sequence number, then exactly one wins', async () => {
      const results = await Promise.allSettled(
        Array.from({ length: 8 }, (_, i) => store.journal.append(append('race', 1, [{ writer: i }]))),
      );
      expect(results.filter((r) => r.status === 'fulfilled')).to.have.length(1);
      for (const r of results) if (r.status === 'rejected') expect(r.reason).to.be.instanceOf(JournalConflictError);
      expect(await store.journal.read('race', 0)).to.have.length(1);
    });

    it('when many appends to different keys run at once, then all of them are written', async () => {
      await Promise.all(
        Array.from({ length: 300 }, (_, i) => store.journal.append(append(`many:${i % 30}`, Math.floor(i / 30) + 1, [{ i }]))),
      );
      for (let k = 0; k < 30; k++) {
        expect((await store.journal.read(`many:${k}`, 0)).map((r) => r.seq)).to.deep.equal([1, 2, 3, 4, 5, 6, 7, 8, 9, 10]);
      }
    });

    it('when one append of many holds what the store cannot keep (a NUL in text), then at most that one fails: those written beside it are unharmed', async () => {
      const poisoned = append('poison:0', 1, [{ text: 'a\u0000b' }], {
        outbox: [{ id: 'poison-entry', topic: 'dispatch', payload: { text: 'a\u0000b' }, shard: 1 }],
      });
      const beside = (i: number) =>
        store.journal.append(
          append(`beside:${i}`, 1, [{ i }], { outbox: [{ id: `beside-entry-${i}`, topic: 'dispatch', payload: { i }, shard: 1 }] }),
        );
      // in the middle, so that a store writing in batches has it in one with others (the first few go alone)
      const settled = await Promise.allSettled([
        ...Array.from({ length: 10 }, (_, i) => beside(i)),
        store.journal.append(poisoned),
        ...Array.from({ length: 10 }, (_, i) => beside(10 + i)),
      ]);
      const results = [settled[10]!, ...settled.slice(0, 10), ...settled.slice(11)];
      expect(results.slice(1).map((r) => r.status)).to.deep.equal(Array.from({ length: 20 }, () => 'fulfilled'));
      for (let i = 0; i < 20; i++) expect((await store.journal.read(`beside:${i}`, 0)).map((r) => r.events)).to.deep.equal([[{ i }]]);
      const pendingIds = (await store.outbox.pending({ limit: 100 })).map((entry) => entry.id);
      expect(pendingIds.filter((id) => id.startsWith('beside-entry-'))).to.have.length(20);
      // PostgreSQL and PGlite refuse the NUL (jsonb cannot hold it), MongoDB keeps it: either way, all or nothing
      const stored = await store.journal.read('poison:0', 0);
      if (results[0]!.status === 'fulfilled') expect(stored.map((r) => r.events)).to.deep.equal([[{ text: 'a\u0000b' }]]);
      else expect({ stored, entry: pendingIds.includes('poison-entry') }).to.deep.equal({ stored: [], entry: false });
    });

    it('when an append carries outbox entries, then they are pending with their key, sequence and shard until marked done', async () => {
      const notified: string[][] = [];
      const unsubscribe = store.outbox.onAppended((entries) =>
        notified.push(entries.map((e) => `${e.id} ${e.topic} ${e.key}#${e.seq} shard ${e.shard}`).sort()),
      );
      await store.journal.append(
        append('message:x', 1, [{ type: 'created' }], {
          outbox: [
            { id: 'evt-1', topic: 'webhook.event', payload: { event_id: 'evt-1' }, shard: 3 },
            { id: 'dsp-1', topic: 'carrier.dispatch', payload: { to: '+243810000001' }, shard: 3 },
          ],
        }),
      );
      unsubscribe();
      expect(notified, 'one notice, with the entries written').to.deep.equal([
        ['dsp-1 carrier.dispatch message:x#1 shard 3', 'evt-1 webhook.event message:x#1 shard 3'],
      ]);
      const pending = await store.outbox.pending({ limit: 10 });
      expect(pending.map((e) => e.id).sort()).to.deep.equal(['dsp-1', 'evt-1']);
      expect(pending.find((e) => e.id === 'evt-1')).to.deep.include({
        key: 'message:x',
        seq: 1,
        shard: 3,
        topic: 'webhook.event',
        payload: { event_id: 'evt-1' },
      });
      expect(await store.outbox.backlog()).to.equal(2);
      await store.outbox.markDone(['evt-1']);
      expect((await store.outbox.pending({ limit: 10 })).map((e) => e.id)).to.deep.equal(['dsp-1']);
      await store.outbox.markDone(['dsp-1', 'unknown']);
      expect(await store.outbox.backlog()).to.equal(0);
    });

    it('when an append conflicts, then its outbox entries are not written either (atomic)', async () => {
      await store.journal.append(append('atomic', 1, [{}]));
      await store.journal
        .append(append('atomic', 1, [{}], { outbox: [{ id: 'lost', topic: 't', payload: {}, shard: 0 }] }))
        .catch(() => undefined);
      expect(await store.outbox.pending({ limit: 10 })).to.deep.equal([]);
    });

    it('when an append retires entries its key wrote, then they leave the outbox with it; another key’s entry and unknown ids change nothing', async () => {
      const deadline = (id: string) => ({ id, topic: 'receipt.timeout', payload: {}, shard: 4 });
      await store.journal.append(append('message:m', 1, [{}], { outbox: [deadline('timeout:m:0'), deadline('timeout:m:1')] }));
      await store.journal.append(append('message:other', 1, [{}], { outbox: [deadline('timeout:other:0')] }));

      await store.journal.append(
        append('message:m', 2, [{ type: 'final' }], { retire: ['timeout:m:0', 'timeout:other:0', 'timeout:unknown:0'] }),
      );

      expect((await store.outbox.pending({ limit: 10 })).map((e) => e.id).sort()).to.deep.equal(['timeout:m:1', 'timeout:other:0']);
      expect(await store.outbox.backlog()).to.equal(2);
      expect((await store.journal.read('message:m', 0)).map((r) => r.events)).to.deep.equal([[{}], [{ type: 'final' }]]);
    });

    it('when an append that retires entries is refused, then nothing is retired', async () => {
      await store.journal.append(
        append('message:r', 1, [{}], { outbox: [{ id: 'timeout:r:0', topic: 'receipt.timeout', payload: {}, shard: 0 }] }),
      );
      const refused = await store.journal.append(append('message:r', 1, [{}], { retire: ['timeout:r:0'] })).catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(JournalConflictError);
      expect((await store.outbox.pending({ limit: 10 })).map((e) => e.id)).to.deep.equal(['timeout:r:0']);
    });

    it('when many appends retire at once (one batch), then each retires its own entry and writes its own', async () => {
      const keys = Array.from({ length: 40 }, (_, i) => `message:batch-${i}`);
      await Promise.all(
        keys.map((key) =>
          store.journal.append(
            append(key, 1, [{}], { outbox: [{ id: `timeout:${key}`, topic: 'receipt.timeout', payload: {}, shard: 1 }] }),
          ),
        ),
      );
      await Promise.all(
        keys.map((key) =>
          store.journal.append(
            append(key, 2, [{}], {
              retire: [`timeout:${key}`],
              outbox: [{ id: `event:${key}`, topic: 'webhook.event', payload: {}, shard: 1 }],
            }),
          ),
        ),
      );
      expect((await store.outbox.pending({ limit: 100 })).map((e) => e.id).sort()).to.deep.equal(keys.map((key) => `event:${key}`).sort());
    });

    it('when an append establishes an owner, then the directory finds it; an id never recorded has none', async () => {
      await store.journal.append(append('message:msg_1', 1, [{ type: 'message_created' }], { owner: { id: 'msg_1', owner: 'mer_1' } }));
      expect(await store.directory.messageOwner('msg_1')).to.equal('mer_1');
      expect(await store.directory.messageOwner('msg_2')).to.equal(null);
    });

    it('when an append establishing an owner is refused, then no owner is recorded by it, and a recorded owner stays', async () => {
      await store.journal.append(append('message:msg_1', 1, [{}], { owner: { id: 'msg_1', owner: 'mer_1' } }));
      const refused = await store.journal
        .append(append('message:msg_1', 1, [{}], { owner: { id: 'msg_1', owner: 'mer_2' } }))
        .catch((e: unknown) => e);
      expect(refused).to.be.instanceOf(JournalConflictError);
      expect(await store.directory.messageOwner('msg_1')).to.equal('mer_1');
      // a later record naming another owner (a repeated creation) does not change it either
      await store.journal.append(append('message:msg_1', 2, [{}], { owner: { id: 'msg_1', owner: 'mer_3' } }));
      expect(await store.directory.messageOwner('msg_1')).to.equal('mer_1');
    });

    it('when 600 appends establish owners at once (one batch), 100 of them repeats, then every message has its owner and appends without one record none', async () => {
      const ids = Array.from({ length: 500 }, (_, i) => `msg_many_${i}`);
      await Promise.all([
        ...ids.map((id, i) => store.journal.append(append(`message:${id}`, 1, [{}], { owner: { id, owner: `mer_${i % 7}` } }))),
        ...ids
          .slice(0, 100)
          .map((id, i) => store.journal.append(append(`message:${id}`, 2, [{}], { owner: { id, owner: `mer_${i % 7}` } }))),
        ...Array.from({ length: 50 }, (_, i) => store.journal.append(append(`message:msg_none_${i}`, 1, [{}]))),
      ]);
      const owners = await Promise.all(ids.map((id) => store.directory.messageOwner(id)));
      expect(owners).to.deep.equal(ids.map((_, i) => `mer_${i % 7}`));
      expect(await store.directory.messageOwner('msg_none_0')).to.equal(null);
      // the same, in one query: the owners found, the others absent
      const many = await store.directory.messageOwners([...ids, 'msg_none_0', 'msg_never']);
      expect(many.size).to.equal(ids.length);
      expect(ids.map((id) => many.get(id))).to.deep.equal(owners);
      expect(many.has('msg_none_0') || many.has('msg_never')).to.equal(false);
      expect((await store.directory.messageOwners([])).size).to.equal(0);
    });

    describe(writesCompanions ? 'companion records' : 'companion records (not written by this adapter)', () => {
      const companion = (id: string, outboxId = `dsp-${id}`) => ({
        key: `message:${id}`,
        seq: 1,
        events: [{ type: 'message_created', id }],
        outbox: [{ id: outboxId, topic: 'carrier.dispatch', payload: { id }, shard: 2 }],
        owner: { id, owner: 'mer_1' },
      });
      const keysOf = async (id: string) => (await store.journal.read(`message:${id}`, 0)).map((r) => r.seq);

      if (writesCompanions) {
        it("when an append carries a companion, then both records, their outbox entries and the companion's owner are written, in one notice", async () => {
          expect(store.journal.writesCompanions).to.equal(true);
          const notified: string[][] = [];
          const unsubscribe = store.outbox.onAppended((entries) => notified.push(entries.map((e) => `${e.id} ${e.key}#${e.seq}`).sort()));
          await store.journal.append(
            append('wallet:mer_1', 1, [{ type: 'charged' }], {
              outbox: [{ id: 'own-1', topic: 't', payload: {}, shard: 2 }],
              companions: [companion('msg_c1')],
            }),
          );
          unsubscribe();
          const [record] = await store.journal.read('message:msg_c1', 0);
          expect(record).to.deep.equal({
            key: 'message:msg_c1',
            seq: 1,
            events: [{ type: 'message_created', id: 'msg_c1' }],
            at: 1_780_000_000_001,
          });
          expect((await store.journal.read('wallet:mer_1', 0)).map((r) => r.seq)).to.deep.equal([1]);
          expect(notified).to.deep.equal([['dsp-msg_c1 message:msg_c1#1', 'own-1 wallet:mer_1#1']]);
          const pending = await store.outbox.pending({ limit: 10 });
          expect(pending.find((e) => e.id === 'dsp-msg_c1')).to.deep.include({
            key: 'message:msg_c1',
            seq: 1,
            shard: 2,
            topic: 'carrier.dispatch',
          });
          expect(await store.directory.messageOwner('msg_c1')).to.equal('mer_1');
        });

        it('when the carrying append is refused (its sequence number taken, or fenced), then its companion is not written at all', async () => {
          expect(store.journal.writesCompanions).to.equal(true);
          await store.journal.append(append('wallet:mer_1', 1, [{}]));
          const taken = await store.journal
            .append(append('wallet:mer_1', 1, [{}], { companions: [companion('msg_c2')] }))
            .catch((e: unknown) => e);
          expect(taken).to.be.instanceOf(JournalConflictError).with.property('reason', 'sequence_taken');
          const [lease] = await store.leases.acquire('node-a', [2], 1, 60_000);
          await store.leases.release('node-a', [2]);
          const fenced = await store.journal
            .append(
              append('wallet:mer_1', 2, [{}], {
                companions: [companion('msg_c3')],
                fence: { shard: 2, owner: 'node-a', epoch: lease!.epoch },
              }),
            )
            .catch((e: unknown) => e);
          expect(fenced).to.be.instanceOf(JournalConflictError).with.property('reason', 'fenced');
          expect(await keysOf('msg_c2')).to.deep.equal([]);
          expect(await keysOf('msg_c3')).to.deep.equal([]);
          expect(await store.outbox.pending({ limit: 10 })).to.deep.equal([]);
          expect(await store.directory.messageOwner('msg_c2')).to.equal(null);
          expect(await store.directory.messageOwner('msg_c3')).to.equal(null);
        });

        it("when a companion's key already holds a record, then the carrying append is refused as taken and writes nothing", async () => {
          expect(store.journal.writesCompanions).to.equal(true);
          await store.journal.append(append('message:msg_c4', 1, [{ first: true }]));
          const refused = await store.journal
            .append(
              append('wallet:mer_1', 1, [{}], {
                outbox: [{ id: 'own-4', topic: 't', payload: {}, shard: 2 }],
                companions: [companion('msg_c4')],
              }),
            )
            .catch((e: unknown) => e);
          expect(refused).to.be.instanceOf(JournalConflictError).with.property('reason', 'sequence_taken');
          expect(await store.journal.read('wallet:mer_1', 0)).to.deep.equal([]);
          expect((await store.journal.read('message:msg_c4', 0)).map((r) => r.events)).to.deep.equal([[{ first: true }]]);
          expect(await store.outbox.pending({ limit: 10 })).to.deep.equal([]);
        });

        it('when 300 appends carry companions at once (one batch), one of them refused, then every other carrier and companion is written', async () => {
          expect(store.journal.writesCompanions).to.equal(true);
          await store.journal.append(append('wallet:w_0', 1, [{}]));
          const outcomes = await Promise.all(
            Array.from({ length: 300 }, (_, i) =>
              store.journal.append(append(`wallet:w_${i}`, 1, [{}], { companions: [companion(`msg_b${i}`)] })).then(
                () => 'written',
                () => 'refused',
              ),
            ),
          );
          expect(outcomes.filter((o) => o === 'refused')).to.have.length(1);
          expect(outcomes[0]).to.equal('refused');
          expect(await keysOf('msg_b0')).to.deep.equal([]);
          expect(await keysOf('msg_b299')).to.deep.equal([1]);
          expect(await store.outbox.backlog()).to.equal(299);
        });
      } else
        it('when the journal cannot write companions, then an append carrying one is refused and writes nothing', async () => {
          expect(store.journal.writesCompanions).to.equal(false);
          const refused = await store.journal
            .append(append('wallet:mer_1', 1, [{}], { companions: [companion('msg_c5')] }))
            .catch((e: unknown) => e);
          expect(refused).to.be.instanceOf(Error);
          expect(await store.journal.read('wallet:mer_1', 0)).to.deep.equal([]);
          expect(await keysOf('msg_c5')).to.deep.equal([]);
        });
    });

    it('when pending entries are listed, then they can be restricted to shards and to older entries, oldest first', async () => {
      await store.journal.append(append('a', 1, [{}], { at: 1000, outbox: [{ id: 'a1', topic: 't', payload: {}, shard: 1 }] }));
      await store.journal.append(append('b', 1, [{}], { at: 2000, outbox: [{ id: 'b1', topic: 't', payload: {}, shard: 2 }] }));
      await store.journal.append(append('c', 1, [{}], { at: 3000, outbox: [{ id: 'c1', topic: 't', payload: {}, shard: 1 }] }));
      expect((await store.outbox.pending({ limit: 10 })).map((e) => e.id)).to.deep.equal(['a1', 'b1', 'c1']);
      expect((await store.outbox.pending({ limit: 10, shards: [1] })).map((e) => e.id)).to.deep.equal(['a1', 'c1']);
      expect((await store.outbox.pending({ limit: 10, olderThan: 2500 })).map((e) => e.id)).to.deep.equal(['a1', 'b1']);
      expect((await store.outbox.pending({ limit: 1 })).map((e) => e.id)).to.deep.equal(['a1']);
      expect(await store.outbox.pending({ limit: 10, shards: [] })).to.deep.equal([]);
      expect((await store.outbox.pending({ limit: 10, topics: ['t'] })).map((e) => e.id)).to.deep.equal(['a1', 'b1', 'c1']);
      expect(await store.outbox.pending({ limit: 10, topics: ['other'] })).to.deep.equal([]);
    });

    it('when lanes ask which of their topics have entries due, then one query answers, each topic with its own age limit and the shards asked', async () => {
      await store.journal.append(append('a', 1, [{}], { at: 1000, outbox: [{ id: 'a1', topic: 'dispatch', payload: {}, shard: 1 }] }));
      await store.journal.append(append('b', 1, [{}], { at: 5000, outbox: [{ id: 'b1', topic: 'deadline', payload: {}, shard: 2 }] }));
      const due = async (topics: { topic: string; olderThan?: number }[], shards?: number[]) =>
        [...(await store.outbox.pendingTopics({ topics, ...(shards ? { shards } : {}) }))].sort();
      expect(
        await due([{ topic: 'dispatch', olderThan: 2000 }, { topic: 'deadline', olderThan: 2000 }, { topic: 'webhook' }]),
      ).to.deep.equal(['dispatch']);
      expect(await due([{ topic: 'dispatch', olderThan: 1000 }, { topic: 'deadline' }])).to.deep.equal(['deadline']);
      expect(await due([{ topic: 'dispatch' }, { topic: 'deadline' }], [2])).to.deep.equal(['deadline']);
      expect(await due([{ topic: 'dispatch' }, { topic: 'deadline' }], [])).to.deep.equal([]);
      expect(await due([])).to.deep.equal([]);
      await store.outbox.markDone(['a1']);
      expect(await due([{ topic: 'dispatch' }, { topic: 'deadline', olderThan: 6000 }])).to.deep.equal(['deadline']);
    });
  });

  describe('pruning', () => {
    const at = (seq: number) => 1_780_000_000_000 + seq;

    it('when old keys are listed, then only those of the prefix whose last record is older than the bound and that have records to prune come back', async () => {
      for (const seq of [1, 2, 3]) await store.journal.append(append('message:old', seq, [{ seq }]));
      await store.journal.append(append('message:single', 1, [{}]));
      for (const seq of [1, 2]) await store.journal.append(append('message:recent', seq, [{}], { at: at(100) }));
      for (const seq of [1, 2]) await store.journal.append(append('wallet:m1', seq, [{}]));
      const listed = await store.journal.prunable({ prefix: 'message:', lastBefore: at(50), limit: 10 });
      expect(listed).to.deep.equal([{ key: 'message:old', seq: 3 }]);
      expect(await store.journal.prunable({ prefix: 'message:', lastBefore: at(101), limit: 10 })).to.deep.equal([
        { key: 'message:old', seq: 3 },
        { key: 'message:recent', seq: 2 },
      ]);
      expect(await store.journal.prunable({ prefix: 'message:', lastBefore: at(101), limit: 1 })).to.have.length(1);
    });

    it('when a key is pruned under its snapshot, then the records before it go, recovery reads snapshot and later records, and a stale append still conflicts', async () => {
      for (const seq of [1, 2, 3]) await store.journal.append(append('message:p', seq, [{ seq }]));
      await store.journal.saveSnapshot({ key: 'message:p', seq: 3, state: { upTo: 3 }, at: at(3) });

      expect(await store.journal.pruneBefore('message:p', 3)).to.equal(2);

      expect((await store.journal.read('message:p', 0)).map((r) => r.seq)).to.deep.equal([3]);
      expect(await store.journal.prunable({ prefix: 'message:', lastBefore: at(1000), limit: 10 })).to.deep.equal([]);
      const stale = await store.journal.append(append('message:p', 2, [{ again: true }])).catch((e: unknown) => e);
      expect(stale).to.be.instanceOf(JournalConflictError).with.property('reason', 'sequence_taken');
      await store.journal.append(append('message:p', 4, [{ seq: 4 }]));
      expect(await store.journal.latestSnapshot('message:p')).to.deep.include({ seq: 3, state: { upTo: 3 } });
      expect((await store.journal.read('message:p', 3)).map((r) => r.events)).to.deep.equal([[{ seq: 4 }]]);
    });

    it('when no snapshot covers the sequence number, then nothing is deleted', async () => {
      for (const seq of [1, 2, 3]) await store.journal.append(append('message:q', seq, [{ seq }]));
      await store.journal.saveSnapshot({ key: 'message:q', seq: 2, state: {}, at: at(2) });
      expect(await store.journal.pruneBefore('message:q', 3)).to.equal(0);
      expect(await store.journal.pruneBefore('message:none', 3)).to.equal(0);
      expect((await store.journal.read('message:q', 0)).map((r) => r.seq)).to.deep.equal([1, 2, 3]);
    });

    it('when a pruned key is appended under a lease, then the current epoch writes the next record and a superseded one is fenced', async () => {
      const [lease] = await store.leases.acquire('node-a', [3], 1, 60_000);
      const fence = { shard: 3, owner: 'node-a', epoch: lease!.epoch };
      for (const seq of [1, 2]) await store.journal.append(append('message:f', seq, [{ seq }], { fence }));
      await store.journal.saveSnapshot({ key: 'message:f', seq: 2, state: {}, at: at(2) });
      expect(await store.journal.pruneBefore('message:f', 2)).to.equal(1);

      await store.journal.append(append('message:f', 3, [{ seq: 3 }], { fence }));
      const stale = await store.journal
        .append(append('message:f', 4, [{}], { fence: { ...fence, epoch: fence.epoch + 1 } }))
        .catch((e: unknown) => e);
      expect(stale).to.be.instanceOf(JournalConflictError).with.property('reason', 'fenced');
      expect((await store.journal.read('message:f', 0)).map((r) => r.seq)).to.deep.equal([2, 3]);
    });
  });

  describe('snapshots', () => {
    it('when none was saved, then the latest is null', async () => {
      expect(await store.journal.latestSnapshot('nothing')).to.equal(null);
    });

    it('when snapshots are saved, then the one with the highest sequence number wins', async () => {
      await store.journal.saveSnapshot({ key: 's', seq: 5, state: { total: 5 }, at: 1 });
      await store.journal.saveSnapshot({ key: 's', seq: 3, state: { total: 3 }, at: 2 });
      expect(await store.journal.latestSnapshot('s')).to.deep.equal({ key: 's', seq: 5, state: { total: 5 }, at: 1 });
      await store.journal.saveSnapshot({ key: 's', seq: 9, state: { total: 9 }, at: 3 });
      expect(await store.journal.latestSnapshot('s')).to.deep.equal({ key: 's', seq: 9, state: { total: 9 }, at: 3 });
    });
  });

  describe('directory', () => {
    const merchant: MerchantRecord = {
      id: 'mer_1',
      name: 'Shop',
      timezone: 'Africa/Kinshasa',
      defaultCountry: 'CD',
      currency: 'USD',
      locale: 'fr-CD',
      currencySymbol: null,
      unitPrice: null,
      wallets: { prepaid: true, postpaid: false },
      createdAt: 1_780_000_000_000,
    };

    it('when a merchant is created, then it reads back, lists, updates, and cannot be created twice', async () => {
      await store.directory.createMerchant(merchant);
      expect(await store.directory.merchant('mer_1')).to.deep.equal(merchant);
      expect(await store.directory.merchant('mer_none')).to.equal(null);
      const updated = await store.directory.updateMerchant('mer_1', {
        timezone: 'Europe/Paris',
        unitPrice: 150,
        wallets: { prepaid: true, postpaid: true },
      });
      expect(updated).to.deep.equal({ ...merchant, timezone: 'Europe/Paris', unitPrice: 150, wallets: { prepaid: true, postpaid: true } });
      expect(await store.directory.merchant('mer_1')).to.deep.equal(updated);
      expect(await store.directory.updateMerchant('mer_none', { name: 'x' })).to.equal(null);
      const error = await store.directory.createMerchant(merchant).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(DuplicateRecordError);
      await store.directory.createMerchant({ ...merchant, id: 'mer_2', createdAt: merchant.createdAt + 1 });
      expect((await store.directory.merchants()).map((m) => m.id)).to.deep.equal(['mer_1', 'mer_2']);
    });

    it('when pricing is set, then it replaces the previous rows', async () => {
      await store.directory.createMerchant(merchant);
      await store.directory.setPricing('mer_1', [
        { countryCallingCode: '243', networkPrefix: '81', price: 200, carrier: 'vodacom' },
        { countryCallingCode: '243', networkPrefix: '', price: 300, carrier: 'orange' },
      ]);
      expect(await store.directory.pricing('mer_1')).to.deep.equal([
        { countryCallingCode: '243', networkPrefix: '', price: 300, carrier: 'orange' },
        { countryCallingCode: '243', networkPrefix: '81', price: 200, carrier: 'vodacom' },
      ]);
      await store.directory.setPricing('mer_1', [{ countryCallingCode: '33', networkPrefix: '6', price: 1, carrier: 'sfr' }]);
      expect(await store.directory.pricing('mer_1')).to.deep.equal([
        { countryCallingCode: '33', networkPrefix: '6', price: 1, carrier: 'sfr' },
      ]);
      await store.directory.setPricing('mer_1', []);
      expect(await store.directory.pricing('mer_1')).to.deep.equal([]);
    });

    it('when a key is registered, then it resolves by hash and id until rotated or deleted', async () => {
      await store.directory.createMerchant(merchant);
      const key = {
        keyId: 'key_1',
        merchantId: 'mer_1',
        environment: 'sandbox' as const,
        hash: 'a'.repeat(64),
        display: 'sk_test_…abcd',
        createdAt: 5,
        deletedAt: null,
      };
      await store.directory.registerKey(key);
      expect(await store.directory.keyByHash('a'.repeat(64))).to.deep.equal(key);
      expect(await store.directory.key('key_1')).to.deep.equal(key);
      expect(await store.directory.keys('mer_1')).to.deep.equal([key]);
      await store.directory.replaceKeyHash('key_1', 'b'.repeat(64), 'sk_test_…wxyz');
      expect(await store.directory.keyByHash('a'.repeat(64))).to.equal(null);
      expect(await store.directory.keyByHash('b'.repeat(64))).to.deep.equal({ ...key, hash: 'b'.repeat(64), display: 'sk_test_…wxyz' });
      await store.directory.markKeyDeleted('key_1', 99);
      await store.directory.markKeyDeleted('key_1', 100);
      expect((await store.directory.key('key_1'))?.deletedAt).to.equal(99);
      const duplicate = await store.directory.registerKey({ ...key, keyId: 'key_2', hash: 'b'.repeat(64) }).catch((e: unknown) => e);
      expect(duplicate).to.be.instanceOf(DuplicateRecordError);
    });
  });

  describe('dead letters', () => {
    const letter = {
      id: 'evt-1:abc',
      eventId: 'evt-1',
      merchantId: 'mer_1',
      keyId: 'key_1',
      url: 'https://hooks.example/sms',
      auth: 'key' as const,
      event: { event_id: 'evt-1', event_type: 'sms.delivered', data: { segments: 1 } },
      attempts: 5,
      reason: 'retries_exhausted' as const,
      lastStatus: 503,
      lastError: null,
      droppedAt: 1000,
    };

    it('when a letter is recorded twice, then it is listed once, by merchant, and taken once', async () => {
      await store.deadLetters.record(letter);
      await store.deadLetters.record({ ...letter, attempts: 9 });
      await store.deadLetters.record({
        ...letter,
        id: 'evt-2:abc',
        eventId: 'evt-2',
        merchantId: 'mer_2',
        droppedAt: 2000,
        lastStatus: null,
        lastError: 'timeout',
      });
      expect(await store.deadLetters.list({ limit: 10 })).to.have.length(2);
      expect(await store.deadLetters.list({ merchantId: 'mer_1', limit: 10 })).to.deep.equal([letter]);
      expect(await store.deadLetters.take('evt-1:abc')).to.deep.equal(letter);
      expect(await store.deadLetters.take('evt-1:abc')).to.equal(null);
      expect((await store.deadLetters.list({ limit: 10 })).map((l) => l.id)).to.deep.equal(['evt-2:abc']);
    });
  });

  describe('shard leases', () => {
    it('when nodes heartbeat, then they are live until they leave', async () => {
      await store.leases.heartbeat('node-b', 60_000);
      await store.leases.heartbeat('node-a', 60_000);
      expect(await store.leases.liveNodes()).to.deep.equal(['node-a', 'node-b']);
      await store.leases.leave('node-b');
      expect(await store.leases.liveNodes()).to.deep.equal(['node-a']);
    });

    it('when two nodes race for the same shards, then each shard has one owner, with epoch 1', async () => {
      const shards = Array.from({ length: 16 }, (_, i) => i);
      const [a, b] = await Promise.all([
        store.leases.acquire('node-a', shards, 16, 60_000),
        store.leases.acquire('node-b', shards, 16, 60_000),
      ]);
      const owned = [...a, ...b].map((l) => l.shard).sort((x, y) => x - y);
      expect(owned).to.deep.equal(shards);
      expect([...a, ...b].every((l) => l.epoch === 1)).to.equal(true);
      expect(await store.leases.acquire('node-c', shards, 16, 60_000)).to.deep.equal([]);
    });

    it('when a node asks for at most N, then it gets at most N', async () => {
      expect(await store.leases.acquire('node-a', [0, 1, 2, 3], 2, 60_000)).to.have.length(2);
    });

    it('when a lease is renewed at its epoch, then it is kept; at another epoch or by another node, it is not', async () => {
      const [lease] = await store.leases.acquire('node-a', [5], 1, 60_000);
      expect(await store.leases.renew('node-a', [{ shard: 5, epoch: lease!.epoch }], 60_000)).to.deep.equal([5]);
      expect(await store.leases.renew('node-a', [{ shard: 5, epoch: lease!.epoch + 1 }], 60_000)).to.deep.equal([]);
      expect(await store.leases.renew('node-b', [{ shard: 5, epoch: lease!.epoch }], 60_000)).to.deep.equal([]);
    });

    it('when a lease is released or expires, then another node takes it with the next epoch and the old holder cannot renew', async () => {
      await store.leases.acquire('node-a', [7], 1, 60_000);
      await store.leases.release('node-a', [7]);
      const [taken] = await store.leases.acquire('node-b', [7], 1, 60_000);
      expect(taken).to.include({ shard: 7, owner: 'node-b', epoch: 2 });
      expect(await store.leases.renew('node-a', [{ shard: 7, epoch: 1 }], 60_000)).to.deep.equal([]);
      await store.leases.acquire('node-a', [8], 1, 1);
      await new Promise((resolve) => setTimeout(resolve, 20));
      expect((await store.leases.acquire('node-b', [8], 1, 60_000))[0]).to.include({ owner: 'node-b', epoch: 2 });
      expect((await store.leases.list()).map((l) => [l.shard, l.owner, l.epoch])).to.deep.equal([
        [7, 'node-b', 2],
        [8, 'node-b', 2],
      ]);
    });

    it('when an append carries a fence, then it is written only while that lease is current', async () => {
      const [lease] = await store.leases.acquire('node-a', [3], 1, 60_000);
      const fence = { shard: 3, owner: 'node-a', epoch: lease!.epoch };
      await store.journal.append(append('fenced:1', 1, [{ ok: true }], { fence }));
      await store.leases.release('node-a', [3]);
      await store.leases.acquire('node-b', [3], 1, 60_000);
      const stale = await store.journal.append(append('fenced:1', 2, [{ ok: false }], { fence })).catch((e: unknown) => e);
      expect(stale).to.be.instanceOf(JournalConflictError).with.property('reason', 'fenced');
      expect((await store.journal.read('fenced:1', 0)).map((r) => r.seq)).to.deep.equal([1]);
    });
  });

  describe('environment', () => {
    it('when first claimed, then the environment is recorded; the same claim passes again, the other is refused naming both, and nothing is overwritten', async () => {
      await store.claimEnvironment('sandbox');
      await store.claimEnvironment('sandbox');

      const refused = await store.claimEnvironment('production').catch((e: unknown) => e);

      expect(refused).to.be.instanceOf(EnvironmentMismatchError);
      expect((refused as Error).message).to.match(/initialised for the sandbox environment and cannot serve production/);
      await store.claimEnvironment('sandbox');
      expect(await store.claimEnvironment('production').catch((e: unknown) => e)).to.be.instanceOf(EnvironmentMismatchError);
    });

    it('when two openers claim different environments at once, then exactly one wins', async () => {
      const outcomes = await Promise.allSettled([store.claimEnvironment('production'), store.claimEnvironment('sandbox')]);

      expect(outcomes.filter((o) => o.status === 'fulfilled')).to.have.length(1);
      const refused = outcomes.find((o) => o.status === 'rejected');
      expect(refused?.status === 'rejected' ? refused.reason : null).to.be.instanceOf(EnvironmentMismatchError);
    });
  });

  it('answers a ping', async () => {
    await store.ping();
  });
}
