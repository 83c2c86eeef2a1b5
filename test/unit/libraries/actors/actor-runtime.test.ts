import { expect } from 'chai';
import {
  createActorRuntime,
  type ActorHostOptions,
  type ActorRuntime,
  type RecordedEvents,
} from '../../../../src/libraries/actors/actor-runtime.js';
import { createManualClock, createSequentialIds } from '../../../../src/libraries/clock/clock.js';
import type { JournalAppend } from '../../../../src/libraries/persistence/journal-port.js';
import { COMPACT_JOURNAL, type CompactJournalReply } from '../../../../src/libraries/actors/behaviour.js';
import { createMemoryJournal } from '../../../helpers/memory-journal.js';
import { counterBehaviour, type CounterCommand, type CounterEvent, type CounterState } from './counter-behaviour.js';
import { ActorFailureError, JournalConflictError } from '../../../../src/libraries/errors/internal-errors.js';

const HOST = { askTimeoutMs: 2000, idleShutdownMs: 60_000, snapshotEvery: 3 };

describe('actor runtime', () => {
  let runtime: ActorRuntime;
  let journal: ReturnType<typeof createMemoryJournal>;
  const clock = createManualClock(Date.parse('2026-06-01T00:00:00Z'));

  beforeEach(() => {
    journal = createMemoryJournal();
    runtime = createActorRuntime({ journal, clock, newId: createSequentialIds('id') });
  });
  afterEach(() => {
    runtime.stop();
  });

  it('when a command produces events, then they are journaled before the reply and folded into the state', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const counter = counters.ref('c1', 7);
    expect(await counter.ask({ type: 'add', amount: 2 })).to.deep.equal({ total: 2 });
    expect(await counter.ask({ type: 'add', amount: 3 })).to.deep.equal({ total: 5 });
    expect(journal.records('counter:c1').map((r) => [r.seq, r.events])).to.deep.equal([
      [1, [{ type: 'added', amount: 2 }]],
      [2, [{ type: 'added', amount: 3 }]],
    ]);
    expect(await counter.ask({ type: 'read' })).to.deep.equal({ total: 5, applied: 2 });
  });

  it('when an actor is passivated, then it is reactivated from its journal with the same state', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    await counters.ref('c2', 7).ask({ type: 'add', amount: 4 });
    await counters.ref('c2', 7).ask({ type: 'add', amount: 1 });
    expect(counters.activeCount()).to.equal(1);
    counters.passivate();
    expect(counters.activeCount()).to.equal(0);
    expect(await counters.ref('c2', 7).ask({ type: 'read' })).to.deep.equal({ total: 5, applied: 2 });
  });

  it('when idle for longer than idleShutdownMs, then the actor stops by itself', async () => {
    const counters = runtime.host(counterBehaviour, { ...HOST, idleShutdownMs: 20 });
    await counters.ref('idle', 7).ask({ type: 'add', amount: 1 });
    expect(counters.activeCount()).to.equal(1);
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(counters.activeCount()).to.equal(0);
    expect(await counters.ref('idle', 7).ask({ type: 'read' })).to.deep.equal({ total: 1, applied: 1 });
  });

  describe("companions: a new actor's first record written with the deciding actor's record", () => {
    /** Every journal read, by key. */
    function readsOf(): string[] {
      const reads: string[] = [];
      const read = journal.read.bind(journal);
      journal.read = (key, afterSeq) => {
        reads.push(key);
        return read(key, afterSeq);
      };
      return reads;
    }

    it('when a decision names a companion, then both records go in one append, and the companion starts from its record without reading the journal', async () => {
      const appends: JournalAppend[] = [];
      const append = journal.append.bind(journal);
      journal.append = (entry) => {
        appends.push(entry);
        return append(entry);
      };
      const recorded: string[] = [];
      const counters = runtime.host(counterBehaviour, HOST, {}, ({ key, events }) => recorded.push(`${key}:${events.length}`));
      await counters.ref('parent', 7).ask({ type: 'add', amount: 1 });
      const reads = readsOf();
      expect(await counters.ref('parent', 7).ask({ type: 'found', amount: 2, child: 'child', childAmount: 5 })).to.deep.equal({ total: 3 });
      expect(appends.map((a) => [a.key, a.seq, (a.companions ?? []).map((c) => `${c.key}#${c.seq}`)])).to.deep.equal([
        ['counter:parent', 1, []],
        ['counter:parent', 2, ['counter:child#1']],
      ]);
      expect(journal.records('counter:child').map((r) => [r.seq, r.events])).to.deep.equal([[1, [{ type: 'added', amount: 5 }]]]);
      expect(recorded, 'the host hears of the companion record as of its own').to.deep.equal([
        'counter:parent:1',
        'counter:parent:1',
        'counter:child:1',
      ]);
      expect(await counters.ref('child', 7).ask({ type: 'add', amount: 1 })).to.deep.equal({ total: 6 });
      expect(reads).to.deep.equal([]);
      expect(journal.records('counter:child').map((r) => r.seq)).to.deep.equal([1, 2]);
    });

    it('when the companion is passivated, then it recovers its first record from the journal like any record', async () => {
      const counters = runtime.host(counterBehaviour, HOST);
      await counters.ref('p2', 7).ask({ type: 'found', amount: 1, child: 'c2', childAmount: 4 });
      counters.passivate();
      expect(await counters.ref('c2', 7).ask({ type: 'read' })).to.deep.equal({ total: 4, applied: 1 });
    });

    it('when the append fails, then neither record exists and the companion starts empty', async () => {
      const counters = runtime.host(counterBehaviour, HOST);
      journal.failNextAppend(new Error('database down'));
      const error = await counters
        .ref('p3', 7)
        .ask({ type: 'found', amount: 1, child: 'c3', childAmount: 4 })
        .catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ActorFailureError).with.property('reason', 'unavailable');
      expect(journal.records('counter:p3')).to.deep.equal([]);
      expect(journal.records('counter:c3')).to.deep.equal([]);
      expect(await counters.ref('c3', 7).ask({ type: 'read' })).to.deep.equal({ total: 0, applied: 0 });
    });

    it('when the companion names no host, or the journal cannot write companions, then the command fails and nothing is written', async () => {
      const counters = runtime.host(counterBehaviour, HOST);
      const unknown = await counters
        .ref('p4', 7)
        .ask({ type: 'found', amount: 1, child: 'c4', childAmount: 4, kind: 'nobody' })
        .catch((e: unknown) => e);
      expect(unknown).to.be.instanceOf(ActorFailureError).with.property('reason', 'crashed');
      const without = createMemoryJournal();
      const plain = createActorRuntime({ journal: { ...without, writesCompanions: false }, clock, newId: createSequentialIds('id') });
      try {
        const refused = await plain
          .host(counterBehaviour, HOST)
          .ref('p5', 7)
          .ask({ type: 'found', amount: 1, child: 'c5', childAmount: 4 })
          .catch((e: unknown) => e);
        expect(refused).to.be.instanceOf(ActorFailureError).with.property('reason', 'crashed');
      } finally {
        plain.stop();
      }
      expect(journal.records('counter:p4')).to.deep.equal([]);
      expect(without.records('counter:p5')).to.deep.equal([]);
      expect(without.records('counter:c5')).to.deep.equal([]);
    });
  });

  describe('settled actors (HostPolicy.settled) leave memory after settledIdleMs', () => {
    // a counter is settled once its total reaches 10: nothing more is expected of it
    const settling = { settled: (state: { readonly total: number }) => state.total >= 10 };
    const settledHost = { ...HOST, settledIdleMs: 1_000 };
    /** Long enough for two sweeps (every 100 ms). */
    const sweeps = () => new Promise((resolve) => setTimeout(resolve, 250));

    it('when an actor is settled and idle for settledIdleMs, then it is passivated, and a later command reactivates it from its journal', async () => {
      const counters = runtime.host(counterBehaviour, settledHost, settling);
      await counters.ref('done', 7).ask({ type: 'add', amount: 10 });
      expect(counters.activeCount()).to.equal(1);
      clock.advance(999);
      await sweeps();
      expect(counters.activeCount(), 'not idle long enough yet').to.equal(1);
      clock.advance(1);
      await sweeps();
      expect(counters.activeCount()).to.equal(0);
      expect(await counters.ref('done', 7).ask({ type: 'read' })).to.deep.equal({ total: 10, applied: 1 });
    });

    /** How many actors are in memory after a counter added `amount`, then stayed idle `idleMs` and sweeps ran. */
    async function activeAfterIdle(hostOptions: ActorHostOptions, amount: number, idleMs: number): Promise<number> {
      const counters = runtime.host(counterBehaviour, hostOptions, settling);
      await counters.ref('idle', 7).ask({ type: 'add', amount });
      clock.advance(idleMs);
      await sweeps();
      return counters.activeCount();
    }

    it('when an actor is not settled, then it stays for idleShutdownMs however long it has been idle', async () => {
      expect(await activeAfterIdle(settledHost, 9, 59_000)).to.equal(1);
    });

    it('when a settled actor takes a command, then its idle time starts again', async () => {
      const counters = runtime.host(counterBehaviour, settledHost, settling);
      await counters.ref('read', 7).ask({ type: 'add', amount: 12 });
      clock.advance(900);
      expect(await counters.ref('read', 7).ask({ type: 'read' })).to.deep.equal({ total: 12, applied: 1 });
      clock.advance(900);
      await sweeps();
      expect(counters.activeCount()).to.equal(1);
    });

    it('when the host has no settledIdleMs, then a settled actor stays for idleShutdownMs', async () => {
      expect(await activeAfterIdle(HOST, 10, 30_000)).to.equal(1);
    });
  });

  it('when a snapshot exists, then recovery starts from it and replays only later records', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    for (const amount of [1, 2, 3, 4]) await counters.ref('snap', 7).ask({ type: 'add', amount });
    await new Promise((resolve) => setImmediate(resolve));
    const snapshot = await journal.latestSnapshot('counter:snap');
    expect(snapshot?.seq).to.equal(3);
    expect(snapshot?.state).to.deep.equal({ total: 6, applied: 3 });
    counters.passivate();
    // the snapshot state and record 4 are all that recovery reads
    expect(await counters.ref('snap', 7).ask({ type: 'read' })).to.deep.equal({ total: 10, applied: 4 });
  });

  describe('compaction (COMPACT_JOURNAL)', () => {
    const settling = { settled: (state: { readonly total: number }) => state.total >= 10 };
    const noSnapshots = { ...HOST, snapshotEvery: 1_000 };
    // the command every host answers itself; the counter's own commands do not list it
    const compact = (ref: { ask(command: CounterCommand): Promise<unknown> }) =>
      ref.ask({ type: COMPACT_JOURNAL } as unknown as CounterCommand) as Promise<CompactJournalReply>;

    it('when a settled actor is compacted, then it snapshots at its last sequence number, earlier records go, and it recovers and appends after them', async () => {
      const counters = runtime.host(counterBehaviour, noSnapshots, settling);
      for (const amount of [3, 3, 4]) await counters.ref('done', 7).ask({ type: 'add', amount });

      expect(await compact(counters.ref('done', 7))).to.deep.equal({ compacted: true, seq: 3, deleted: 2 });

      expect(journal.records('counter:done').map((r) => r.seq)).to.deep.equal([3]);
      expect(await journal.latestSnapshot('counter:done')).to.deep.include({ seq: 3, state: { total: 10, applied: 3 } });
      counters.passivate();
      expect(await counters.ref('done', 7).ask({ type: 'read' })).to.deep.equal({ total: 10, applied: 3 });
      await counters.ref('done', 7).ask({ type: 'add', amount: 1 });
      counters.passivate();
      expect(await counters.ref('done', 7).ask({ type: 'read' })).to.deep.equal({ total: 11, applied: 4 });
      expect(journal.records('counter:done').map((r) => r.seq)).to.deep.equal([3, 4]);
    });

    it('when the actor is not settled, or its behaviour has no notion of settled, then nothing is compacted', async () => {
      const settlingCounters = runtime.host(counterBehaviour, noSnapshots, settling);
      for (const amount of [3, 3]) await settlingCounters.ref('busy', 7).ask({ type: 'add', amount });
      expect(await compact(settlingCounters.ref('busy', 7))).to.deep.equal({ compacted: false, reason: 'not_settled' });
      const plain = runtime.host(counterBehaviour, noSnapshots);
      for (const amount of [30, 30]) await plain.ref('ledger', 7).ask({ type: 'add', amount });
      expect(await compact(plain.ref('ledger', 7))).to.deep.equal({ compacted: false, reason: 'not_settled' });
      expect(journal.records('counter:busy').map((r) => r.seq)).to.deep.equal([1, 2]);
      expect(journal.records('counter:ledger').map((r) => r.seq)).to.deep.equal([1, 2]);
      expect(await journal.latestSnapshot('counter:ledger')).to.equal(null);
    });

    it('when a key is pruned while an activation recovers it, then that recovery fails instead of starting from a partial journal', async () => {
      const counters = runtime.host(counterBehaviour, noSnapshots, settling);
      for (const amount of [3, 3, 4]) await counters.ref('race', 7).ask({ type: 'add', amount });
      counters.passivate();
      // the snapshot read finds none; the prune lands before the records are read
      const latest = journal.latestSnapshot.bind(journal);
      let raced = false;
      journal.latestSnapshot = async (key) => {
        const found = await latest(key);
        if (!raced) {
          raced = true;
          await journal.saveSnapshot({ key, seq: 3, state: { total: 10, applied: 3 }, at: 0 });
          await journal.pruneBefore(key, 3);
        }
        return found;
      };

      const error = await counters
        .ref('race', 7)
        .ask({ type: 'read' })
        .catch((e: unknown) => e);

      expect(error).to.be.instanceOf(ActorFailureError).with.property('reason', 'unavailable');
      expect(await counters.ref('race', 7).ask({ type: 'read' })).to.deep.equal({ total: 10, applied: 3 });
    });
  });

  it('when a handler throws, then the caller gets a prompt failure and the actor comes back from its journal', async () => {
    // an ask timeout longer than the test's: waiting for it instead of failing at once would time the test out
    const counters = runtime.host(counterBehaviour, { ...HOST, askTimeoutMs: 3_600_000 });
    const counter = counters.ref('crash', 7);
    await counter.ask({ type: 'add', amount: 5 });
    const error = await counter.ask({ type: 'explode' }).then(
      () => null,
      (e: unknown) => e,
    );
    expect(error).to.be.instanceOf(ActorFailureError).with.property('reason', 'crashed');
    expect(await counter.ask({ type: 'read' })).to.deep.equal({ total: 5, applied: 1 });
  });

  it('when commands are queued behind one that crashes, then only that one fails and the others are handled by the next activation', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const counter = counters.ref('queue', 7);
    const results = await Promise.allSettled([
      counter.ask({ type: 'add', amount: 1 }),
      counter.ask({ type: 'explode' }),
      counter.ask({ type: 'add', amount: 10 }),
      counter.ask({ type: 'add', amount: 100 }),
    ]);
    expect(results.map((r) => r.status)).to.deep.equal(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    expect(await counter.ask({ type: 'read' })).to.deep.equal({ total: 111, applied: 3 });
  });

  it('when another activation took the sequence number, then this one stops and its command is decided again on the journal', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const counter = counters.ref('fence', 7);
    await counter.ask({ type: 'add', amount: 1 });
    // another writer appends seq 2 behind this activation's back
    await journal.append({ key: 'counter:fence', seq: 2, events: [{ type: 'added', amount: 10 }], outbox: [], at: 0 });
    expect(await counter.ask({ type: 'add', amount: 100 })).to.deep.equal({ total: 111 });
    expect(journal.records('counter:fence').map((r) => r.seq)).to.deep.equal([1, 2, 3]);
  });

  it('when the sequence number is taken again on the retry, then the caller gets "fenced" and nothing is applied', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const counter = counters.ref('fence2', 7);
    await counter.ask({ type: 'add', amount: 1 });
    // the first attempt and its retry both meet a conflict
    journal.failNextAppend(new JournalConflictError('counter:fence2', 2, 'sequence_taken'), 2);
    const error = await counter.ask({ type: 'add', amount: 100 }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ActorFailureError).with.property('reason', 'fenced');
    expect(await counter.ask({ type: 'read' })).to.deep.equal({ total: 1, applied: 1 });
  });

  it('when the journal is unavailable, then the caller gets "unavailable" and the state is unchanged', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const counter = counters.ref('down', 7);
    journal.failNextAppend(new Error('connection refused'));
    const error = await counter.ask({ type: 'add', amount: 1 }).catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ActorFailureError).with.property('reason', 'unavailable');
    expect(await counter.ask({ type: 'add', amount: 2 })).to.deep.equal({ total: 2 });
    expect(journal.records('counter:down').map((r) => r.seq)).to.deep.equal([1]);
  });

  it('when a fence is configured and superseded, then the append is refused', async () => {
    const counters = runtime.host(counterBehaviour, { ...HOST, fenceOf: (shard) => ({ shard, owner: 'node-a', epoch: 1 }) });
    journal.fence(7, 1);
    await counters.ref('epoch', 7).ask({ type: 'add', amount: 1 });
    journal.fence(7, 2);
    const error = await counters
      .ref('epoch', 7)
      .ask({ type: 'add', amount: 1 })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ActorFailureError).with.property('reason', 'fenced');
  });

  it('when a command has effects, then they are written to the outbox with the shard, in the same append', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const reply = await counters.ref('fx', 7).ask({ type: 'announce', topic: 'test.topic' });
    const pending = await journal.pending({ limit: 10 });
    expect(pending).to.have.length(1);
    expect(pending[0]).to.include({ id: reply.id, topic: 'test.topic', shard: 7, key: 'counter:fx', seq: 1 });
  });

  it("when the host policy packs effects, then a record's outbox holds what packEffects made of all its commands' effects", async () => {
    // a policy that merges every entry of a record into one, listing the ids it took
    const packing = {
      packEffects: (effects: readonly { readonly id: string; readonly topic: string; readonly payload: unknown }[]) =>
        effects.length === 0 ? [] : [{ id: effects.map((e) => e.id).join('+'), topic: 'packed', payload: effects.length }],
    };
    const counters = runtime.host(counterBehaviour, HOST, packing);
    const replies = await Promise.all([
      counters.ref('pack', 7).ask({ type: 'announce', topic: 'a' }),
      counters.ref('pack', 7).ask({ type: 'announce', topic: 'b' }),
    ]);
    expect(journal.records('counter:pack'), 'both commands in one record').to.have.length(1);
    const pending = await journal.pending({ limit: 10 });
    expect(pending.map((entry) => [entry.id, entry.topic, entry.payload, entry.shard])).to.deep.equal([
      [replies.map((r) => r.id).join('+'), 'packed', 2, 7],
    ]);
  });

  it('when the host policy names an owner for a record, then its append carries it; a record without one carries none', async () => {
    const appends: JournalAppend[] = [];
    const append = journal.append.bind(journal);
    journal.append = (a) => {
      appends.push(a);
      return append(a);
    };
    // the record whose events add 5 or more establishes an owner
    const owning = {
      ownerOf: (events: readonly CounterEvent[]) =>
        events.some((e) => e.amount >= 5) ? { id: 'owned-thing', owner: 'someone' } : undefined,
    };
    const counters = runtime.host(counterBehaviour, HOST, owning);
    await counters.ref('owner', 7).ask({ type: 'add', amount: 1 });
    await counters.ref('owner', 7).ask({ type: 'add', amount: 5 });
    expect(appends.map((a) => [a.seq, a.owner ?? null])).to.deep.equal([
      [1, null],
      [2, { id: 'owned-thing', owner: 'someone' }],
    ]);
  });

  describe('onRecorded: each durable record, with the state before it', () => {
    type Recorded = RecordedEvents<CounterState, CounterEvent>;

    it('when commands are journaled, then each record is reported once, after its append, with the state before it and its events', async () => {
      const reported: { recorded: Recorded; durable: number[] }[] = [];
      const counters = runtime.host(counterBehaviour, HOST, {}, (recorded) => {
        reported.push({ recorded, durable: journal.records(recorded.key).map((r) => r.seq) });
      });
      const counter = counters.ref('observed', 7);

      await Promise.all([counter.ask({ type: 'add', amount: 2 }), counter.ask({ type: 'add', amount: 3 })]);
      await counter.ask({ type: 'add', amount: 4 });
      await counter.ask({ type: 'read' });
      await counter.ask({ type: 'announce', topic: 'test.topic' });

      // the announce's record holds an outbox entry and no event: nothing to report
      const records = journal.records('counter:observed').filter((r) => r.events.length > 0);
      expect(records.length, 'the two first adds may share a record').to.be.oneOf([2, 3]);
      expect(reported.map((r) => r.recorded.events)).to.deep.equal(records.map((r) => r.events));
      expect(
        reported.map((r) => r.durable.at(-1)),
        'reported once durable',
      ).to.deep.equal(records.map((r) => r.seq));
      const totals = records.map((_, i) =>
        records
          .slice(0, i)
          .flatMap((r) => r.events as CounterEvent[])
          .reduce((sum, e) => sum + e.amount, 0),
      );
      expect(reported.map((r) => r.recorded.before.total)).to.deep.equal(totals);
      expect(reported.every((r) => r.recorded.key === 'counter:observed')).to.equal(true);
    });

    it('when an actor recovers from its journal, then the replayed records are not reported again', async () => {
      const reported: Recorded[] = [];
      const counters = runtime.host(counterBehaviour, HOST, {}, (recorded) => reported.push(recorded));
      await counters.ref('replayed', 7).ask({ type: 'add', amount: 1 });
      counters.passivate();

      expect(await counters.ref('replayed', 7).ask({ type: 'read' })).to.deep.equal({ total: 1, applied: 1 });
      expect(reported).to.have.length(1);
    });

    it('when the append fails, then nothing is reported', async () => {
      const reported: Recorded[] = [];
      const counters = runtime.host(counterBehaviour, HOST, {}, (recorded) => reported.push(recorded));
      journal.failNextAppend(new Error('connection refused'));

      await counters
        .ref('lost', 7)
        .ask({ type: 'add', amount: 1 })
        .catch(() => undefined);
      journal.failNextAppend(new JournalConflictError('counter:lost', 1, 'fenced'));
      await counters
        .ref('lost', 7)
        .ask({ type: 'add', amount: 1 })
        .catch(() => undefined);

      expect(journal.records('counter:lost')).to.deep.equal([]);
      expect(reported).to.deep.equal([]);
    });

    it('when the observer throws, then the command still succeeds and the failure is an incident', async () => {
      const incidents: string[] = [];
      const observed = createActorRuntime({
        journal,
        clock,
        newId: createSequentialIds('id'),
        onIncident: (incident) => incidents.push(`${incident.what} ${incident.key}`),
      });
      try {
        const counters = observed.host(counterBehaviour, HOST, {}, () => {
          throw new Error('observer broke');
        });

        expect(await counters.ref('brittle', 7).ask({ type: 'add', amount: 5 })).to.deep.equal({ total: 5 });
        expect(await counters.ref('brittle', 7).ask({ type: 'add', amount: 1 })).to.deep.equal({ total: 6 });
        expect(incidents).to.deep.equal(['record_observer_failed counter:brittle', 'record_observer_failed counter:brittle']);
      } finally {
        observed.stop();
      }
    });
  });

  describe('retired outbox entries (Decision.retire)', () => {
    /** The appends the runtime makes, as the journal receives them. */
    function recordAppends(): JournalAppend[] {
      const appends: JournalAppend[] = [];
      const append = journal.append.bind(journal);
      journal.append = (a) => {
        appends.push(a);
        return append(a);
      };
      return appends;
    }

    it('when a command retires an entry the actor wrote earlier, then its append carries the retirement and the entry leaves the outbox', async () => {
      const counters = runtime.host(counterBehaviour, HOST);
      const counter = counters.ref('retire', 7);
      const { id } = await counter.ask({ type: 'announce', topic: 'test.deadline' });
      const kept = await counter.ask({ type: 'announce', topic: 'test.deadline' });
      const appends = recordAppends();

      await counter.ask({ type: 'withdraw', ids: [id] });

      expect(appends.map((a) => [a.seq, a.outbox.length, a.retire])).to.deep.equal([[3, 0, [id]]]);
      expect((await journal.pending({ limit: 10 })).map((e) => e.id)).to.deep.equal([kept.id]);
    });

    it('when the same batch writes an entry and retires it, then it is never written and the record retires only the others', async () => {
      const counters = runtime.host(counterBehaviour, HOST);
      const counter = counters.ref('same-batch', 7);
      const appends = recordAppends();

      await Promise.all([
        counter.ask({ type: 'announce', topic: 'test.deadline', id: 'deadline-1' }),
        counter.ask({ type: 'announce', topic: 'test.deadline', id: 'deadline-2' }),
        counter.ask({ type: 'withdraw', ids: ['deadline-1', 'elsewhere-1'] }),
        counter.ask({ type: 'add', amount: 1 }),
      ]);

      expect(appends.map((a) => [a.outbox.map((e) => e.id), a.retire])).to.deep.equal([[['deadline-2'], ['elsewhere-1']]]);
      expect((await journal.pending({ limit: 10 })).map((e) => e.id)).to.deep.equal(['deadline-2']);
    });

    it('when a command retires nothing, then its append has no retirement', async () => {
      const counters = runtime.host(counterBehaviour, HOST);
      const appends = recordAppends();
      await counters.ref('plain', 7).ask({ type: 'announce', topic: 'test.deadline' });
      expect(appends.map((a) => 'retire' in a)).to.deep.equal([false]);
    });
  });

  it('when many commands race on one actor, then they are decided in order and journaled together in few records', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const replies = await Promise.all(Array.from({ length: 50 }, () => counters.ref('race', 7).ask({ type: 'add', amount: 1 })));
    expect(replies.map((r) => r.total)).to.deep.equal(Array.from({ length: 50 }, (_, i) => i + 1));
    const records = journal.records('counter:race');
    expect(records.length).to.be.below(50);
    expect(records.flatMap((r) => r.events)).to.have.length(50);
    expect(records.map((r) => r.seq)).to.deep.equal(records.map((_, i) => i + 1));
  });

  it('when commands weigh more than one, then a record holds at most maxBatch in weight, and a heavier command goes alone', async () => {
    const weighted = { weightOf: (command: CounterCommand) => (command.type === 'add' ? command.amount : 1) };
    const counters = runtime.host(counterBehaviour, { ...HOST, maxBatch: 10 }, weighted);
    const amounts = [4, 4, 4, 4, 4, 25, 4, 4, 4, 4];
    await Promise.all(amounts.map((amount) => counters.ref('heavy', 7).ask({ type: 'add', amount })));

    const records = journal.records('counter:heavy').map((r) => (r.events as { amount: number }[]).map((e) => e.amount));
    expect(records.flat()).to.deep.equal(amounts);
    for (const record of records) {
      const weight = record.reduce((a, b) => a + b, 0);
      expect(weight <= 10 || record.length === 1, JSON.stringify(records)).to.equal(true);
    }
    expect(
      records.some((record) => record.length > 1),
      'commands still share records',
    ).to.equal(true);
  });

  it('when the append of a batch fails, then every command of the batch fails and none is applied', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const counter = counters.ref('batchfail', 7);
    await counter.ask({ type: 'add', amount: 1 });
    journal.failNextAppend(new Error('disk full'));
    const results = await Promise.allSettled(Array.from({ length: 5 }, () => counter.ask({ type: 'add', amount: 1 })));
    const failed = results.filter((r) => r.status === 'rejected');
    expect(failed.length).to.be.at.least(1);
    const read = await counter.ask({ type: 'read' });
    expect(read.total).to.equal(1 + results.filter((r) => r.status === 'fulfilled').length);
    expect(read.total).to.equal(journal.records('counter:batchfail').flatMap((r) => r.events).length);
  });

  it('when recovery cannot read the journal, then waiting callers fail promptly with "unavailable"', async () => {
    // an ask timeout longer than the test's: waiting for it instead of failing at once would time the test out
    const counters = runtime.host(counterBehaviour, { ...HOST, askTimeoutMs: 3_600_000 });
    journal.failNextRead(new Error('database is down'));
    const error = await counters
      .ref('norecovery', 7)
      .ask({ type: 'read' })
      .catch((e: unknown) => e);
    expect(error).to.be.instanceOf(ActorFailureError).with.property('reason', 'unavailable');
    expect(await counters.ref('norecovery', 7).ask({ type: 'read' })).to.deep.equal({ total: 0, applied: 0 });
  });

  describe('deadlines: a command the actor has not taken by its deadline is refused, one it took is waited for', () => {
    /** Holds every append until released: the actor is busy journaling, the next commands wait in its queue. */
    function holdAppends(): { release(): void; readonly entered: Promise<void> } {
      let release = (): void => undefined;
      let enter = (): void => undefined;
      const gate = new Promise<void>((resolve) => {
        release = resolve;
      });
      const entered = new Promise<void>((resolve) => {
        enter = resolve;
      });
      const append = journal.append.bind(journal);
      journal.append = async (record) => {
        enter();
        await gate;
        return append(record);
      };
      return { release, entered };
    }
    const realMs = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

    it('when a command is asked with its deadline already passed, then it is refused at once and nothing is journaled', async () => {
      const counter = runtime.host(counterBehaviour, HOST).ref('late', 7);
      const error = await counter.ask({ type: 'add', amount: 1 }, { deadline: clock.now() }).catch((e: unknown) => e);
      expect(error).to.be.instanceOf(ActorFailureError).with.property('reason', 'expired');
      expect(journal.records('counter:late')).to.deep.equal([]);
    });

    it("when a queued command's deadline passes before the actor takes it (a frozen process resuming), then the actor refuses it and journals nothing of it", async () => {
      const counter = runtime.host(counterBehaviour, HOST).ref('frozen', 7);
      const held = holdAppends();
      const first = counter.ask({ type: 'add', amount: 1 }, { deadline: clock.now() + 60_000 });
      // the actor is journaling it: what comes next waits in its queue
      await held.entered;
      // its timer would fire in 1 s of real time: the clock jumps instead, as after SIGCONT, so the actor sees it first
      const late = counter.ask({ type: 'add', amount: 10 }, { deadline: clock.now() + 1_000 }).catch((e: unknown) => e);
      clock.advance(5_000);
      held.release();
      expect(await first).to.deep.equal({ total: 1 });
      expect(await late)
        .to.be.instanceOf(ActorFailureError)
        .with.property('reason', 'expired');
      expect(journal.records('counter:frozen').flatMap((r) => r.events)).to.deep.equal([{ type: 'added', amount: 1 }]);
      expect(await counter.ask({ type: 'read' })).to.deep.equal({ total: 1, applied: 1 });
    });

    it('when commands decided together include one past its deadline, then only that one is refused and the others share one record', async () => {
      const counter = runtime.host(counterBehaviour, HOST).ref('grouped', 7);
      const held = holdAppends();
      const first = counter.ask({ type: 'add', amount: 1 });
      // the actor is journaling it: what comes next waits in its queue
      await held.entered;
      const before = counter.ask({ type: 'add', amount: 2 }, { deadline: clock.now() + 60_000 });
      const expired = counter.ask({ type: 'add', amount: 100 }, { deadline: clock.now() + 1_000 }).catch((e: unknown) => e);
      const after = counter.ask({ type: 'add', amount: 4 }, { deadline: clock.now() + 60_000 });
      clock.advance(5_000);
      held.release();
      expect(await first).to.deep.equal({ total: 1 });
      expect(await before).to.deep.equal({ total: 3 });
      expect(await expired)
        .to.be.instanceOf(ActorFailureError)
        .with.property('reason', 'expired');
      expect(await after).to.deep.equal({ total: 7 });
      expect(journal.records('counter:grouped').map((r) => r.events.length)).to.deep.equal([1, 2]);
    });

    it('when a command\'s deadline passes while it waits in the queue, then its caller gets "expired" and it is never decided', async () => {
      const counter = runtime.host(counterBehaviour, HOST).ref('queued', 7);
      const held = holdAppends();
      const first = counter.ask({ type: 'add', amount: 1 });
      // the actor is journaling it: what comes next waits in its queue
      await held.entered;
      const waiting = counter.ask({ type: 'add', amount: 10 }, { deadline: clock.now() + 20 }).catch((e: unknown) => e);
      expect(await waiting)
        .to.be.instanceOf(ActorFailureError)
        .with.property('reason', 'expired');
      held.release();
      expect(await first).to.deep.equal({ total: 1 });
      expect(await counter.ask({ type: 'read' })).to.deep.equal({ total: 1, applied: 1 });
    });

    it('when a command was taken just before its deadline and is still being journaled, then its caller waits for the outcome past the deadline', async () => {
      const counter = runtime.host(counterBehaviour, HOST).ref('decided', 7);
      const held = holdAppends();
      let outcome: unknown = 'pending';
      const charge = counter.ask({ type: 'add', amount: 5 }, { deadline: clock.now() + 20 }).then(
        (reply) => (outcome = reply),
        (error: unknown) => (outcome = error),
      );
      // timers fire in order of expiry: the deadline's (20 ms) has fired when this one (60 ms) does
      await realMs(60);
      expect(outcome).to.equal('pending');
      held.release();
      await charge;
      expect(outcome).to.deep.equal({ total: 5 });
      expect(journal.records('counter:decided').flatMap((r) => r.events)).to.deep.equal([{ type: 'added', amount: 5 }]);
    });

    it('when a taken command is not journaled within askTimeoutMs after its deadline, then its caller gets "timeout" (outcome unknown), a read "expired"', async () => {
      const counters = runtime.host(counterBehaviour, { ...HOST, askTimeoutMs: 20 });
      const held = holdAppends();
      const write = counters
        .ref('stuck', 7)
        .ask({ type: 'add', amount: 5 }, { deadline: clock.now() + 10 })
        .catch((e: unknown) => e);
      expect(await write)
        .to.be.instanceOf(ActorFailureError)
        .with.property('reason', 'timeout');
      held.release();
    });
  });

  describe('a command that starts fresh (HostPolicy.startsFresh)', () => {
    const freshCounters = { startsFresh: (command: { readonly type: string }) => command.type === 'add' };
    const countReads = () => {
      const reads: string[] = [];
      const read = journal.read.bind(journal);
      const snapshot = journal.latestSnapshot.bind(journal);
      journal.read = (key, afterSeq) => {
        reads.push(`read ${key}`);
        return read(key, afterSeq);
      };
      journal.latestSnapshot = (key) => {
        reads.push(`snapshot ${key}`);
        return snapshot(key);
      };
      return reads;
    };

    it('when it wakes an actor with no journal, then the activation reads nothing and the command is journaled at 1', async () => {
      const reads = countReads();
      const counters = runtime.host(counterBehaviour, HOST, freshCounters);
      expect(await counters.ref('new', 7).ask({ type: 'add', amount: 2 })).to.deep.equal({ total: 2 });
      expect(reads).to.deep.equal([]);
      expect(journal.records('counter:new').map((r) => r.seq)).to.deep.equal([1]);
    });

    it('when the guess is wrong (the journal exists), then the append conflicts, the journal is read and the command decided again on it', async () => {
      const counters = runtime.host(counterBehaviour, HOST, freshCounters);
      await counters.ref('old', 7).ask({ type: 'add', amount: 5 });
      counters.passivate();
      const reads = countReads();
      expect(await counters.ref('old', 7).ask({ type: 'add', amount: 1 })).to.deep.equal({ total: 6 });
      expect(reads).to.include('read counter:old');
      expect(journal.records('counter:old').map((r) => [r.seq, r.events])).to.deep.equal([
        [1, [{ type: 'added', amount: 5 }]],
        [2, [{ type: 'added', amount: 1 }]],
      ]);
      expect(await counters.ref('old', 7).ask({ type: 'read' })).to.deep.equal({ total: 6, applied: 2 });
    });

    it('when another command wakes the actor, then it recovers from the journal as usual', async () => {
      const counters = runtime.host(counterBehaviour, HOST, freshCounters);
      await counters.ref('other', 7).ask({ type: 'add', amount: 3 });
      counters.passivate();
      const reads = countReads();
      expect(await counters.ref('other', 7).ask({ type: 'read' })).to.deep.equal({ total: 3, applied: 1 });
      expect(reads).to.include('read counter:other');
    });
  });

  it('refuses ids that are not safe actor names', async () => {
    const counters = runtime.host(counterBehaviour, HOST);
    const error = await counters
      .ref('a:b', 7)
      .ask({ type: 'read' })
      .catch((e: unknown) => e);
    expect(error)
      .to.be.instanceOf(Error)
      .with.property('message')
      .that.matches(/invalid actor id/);
  });
});
