import { expect } from 'chai';
import sinon from 'sinon';
import {
  anyPayload,
  createOutboxRelay,
  FRESH_ENTRY_MS,
  IDLE_AFTER_MS,
  IDLE_POLL_MAX_MS,
  LANE_CHUNKS_AT_ONCE,
  type RelayedEntry,
  type TopicHandler,
} from '../../../../src/libraries/persistence/outbox-relay.js';
import { createMemoryJournal } from '../../../helpers/memory-journal.js';

const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);

/** A handler that records the entries it is given and carries them all out (or fails the next `failing` calls). */
function recordingHandler(graceMs?: number): TopicHandler & { readonly seen: string[]; failing: number } {
  const handler = {
    accepts: anyPayload,
    seen: [] as string[],
    failing: 0,
    ...(graceMs !== undefined ? { graceMs } : {}),
    handle(entries: readonly RelayedEntry<unknown>[]) {
      handler.seen.push(...entries.map((e) => e.id));
      if (handler.failing > 0) {
        handler.failing--;
        return Promise.resolve([]);
      }
      return Promise.resolve(entries.map((e) => e.id));
    },
  };
  return handler;
}

/** A relay over `journal` with these handlers, polling every second unless told, 50 entries a batch. */
function relayOf(
  journal: ReturnType<typeof createMemoryJournal>,
  handlers: Readonly<Record<string, TopicHandler>>,
  onError?: (error: unknown) => void,
  more: { readonly pollIntervalMs?: number; readonly shards?: () => readonly number[] } = {},
) {
  return createOutboxRelay<Record<string, unknown>>({
    outbox: journal,
    clock: { now: () => Date.now() },
    handlers,
    pollIntervalMs: more.pollIntervalMs ?? 1_000,
    batchSize: 50,
    ...(onError ? { onError } : {}),
    ...(more.shards ? { shards: more.shards } : {}),
  });
}

/** An append of `key` (record `seq`) with one outbox entry of `topic`, decided `agoMs` ago. */
function appendEntry(journal: ReturnType<typeof createMemoryJournal>, key: string, seq: number, id: string, topic: string, agoMs = 0) {
  return journal.append({ key, seq, events: [{ type: 'x' }], outbox: [{ id, topic, payload: {}, shard: 0 }], at: Date.now() - agoMs });
}

/**
 * Fake timers for the tests of a describe block, and `advance`: fake time forward, then the rest of the event loop's
 * turn (done marks go out at the end of a turn).
 */
function fakeTime(): (ms: number) => Promise<void> {
  let clock: sinon.SinonFakeTimers | null = null;
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: T0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    clock?.restore();
  });
  return async (ms) => {
    if (!clock) throw new Error('fake time is set up per test');
    await clock.tickAsync(ms);
    await new Promise<void>((resolve) => setImmediate(resolve));
    await clock.tickAsync(0);
  };
}

describe('outbox relay: waking the lanes', () => {
  const advance = fakeTime();

  function setUp() {
    const journal = createMemoryJournal();
    const pending = sinon.spy(journal, 'pending');
    const dispatch = recordingHandler();
    const webhook = recordingHandler();
    const followUp = recordingHandler(2_000);
    const relay = relayOf(journal, { 'carrier.dispatch': dispatch, 'webhook.event': webhook, 'message.create': followUp });
    let seq = 0;
    const append = (...topics: string[]) =>
      journal.append({
        key: 'message:m1',
        seq: ++seq,
        events: [{ type: 'x' }],
        outbox: topics.map((topic, i) => ({ id: `${topic}-${seq}-${i}`, topic, payload: {}, shard: 0 })),
        at: Date.now(),
      });
    /** The topics each `pending` query asked for, since the last call. */
    const queried = () => {
      const topics = pending.getCalls().map((call) => call.args[0].topics?.join(',') ?? '*');
      pending.resetHistory();
      return topics;
    };
    return { journal, relay, dispatch, webhook, followUp, append, queried };
  }

  it('when an append writes a dispatch, then the dispatch lane carries it out at once without querying the outbox', async () => {
    const { journal, relay, dispatch, webhook, append, queried } = setUp();
    relay.start();
    await advance(0);
    queried(); // the start-up pass looks at every lane
    await append('carrier.dispatch');
    await advance(0);
    expect(dispatch.seen).to.deep.equal(['carrier.dispatch-1-0']);
    expect(webhook.seen).to.deep.equal([]);
    expect(queried()).to.deep.equal([]);
    expect(await journal.pending({ limit: 10 }), 'marked done').to.deep.equal([]);
    await relay.stop();
  });

  it('when entries were pending before the relay started, then its first pass carries them out', async () => {
    const { relay, dispatch, append } = setUp();
    await append('carrier.dispatch');
    relay.start();
    await advance(0);
    expect(dispatch.seen).to.deep.equal(['carrier.dispatch-1-0']);
    await relay.stop();
  });

  it('when carrying a fresh entry out fails, then it stays pending and a poll carries it out once it is older than the fresh period', async () => {
    const { journal, relay, dispatch, append } = setUp();
    relay.start();
    await advance(0);
    dispatch.failing = 1;
    await append('carrier.dispatch');
    await advance(0);
    expect(dispatch.seen).to.deep.equal(['carrier.dispatch-1-0']);
    // polls within the fresh period leave it alone
    await advance(FRESH_ENTRY_MS - 1_000);
    expect(dispatch.seen).to.have.length(1);
    await advance(1_000);
    expect(dispatch.seen).to.deep.equal(['carrier.dispatch-1-0', 'carrier.dispatch-1-0']);
    expect(await journal.pending({ limit: 10 })).to.deep.equal([]);
    await relay.stop();
  });

  it('when a poll finds nothing due, then it asks the outbox once for every lane together, and no lane queries for entries', async () => {
    const { journal, relay, queried } = setUp();
    const probes = sinon.spy(journal, 'pendingTopics');
    relay.start();
    await advance(0);
    queried();
    probes.resetHistory();
    await advance(1_000);
    expect(probes.callCount, 'one probe per poll').to.equal(1);
    const asked = probes.getCall(0).args[0].topics;
    expect(asked.map((t) => t.topic).sort()).to.deep.equal(['carrier.dispatch', 'message.create', 'webhook.event']);
    // each lane's age limit: the fresh period, or its own grace when longer
    expect(asked.every((t) => t.olderThan === Date.now() - FRESH_ENTRY_MS + 1)).to.equal(true);
    expect(queried(), 'no lane queried').to.deep.equal([]);
    await relay.stop();
  });

  it('when one lane has an entry due, then a poll has that lane alone query for it', async () => {
    const { relay, dispatch, append, queried } = setUp();
    relay.start();
    await advance(0);
    dispatch.failing = 1;
    await append('carrier.dispatch');
    await advance(0);
    queried();
    await advance(FRESH_ENTRY_MS);
    expect(queried()).to.deep.equal(['carrier.dispatch']);
    expect(dispatch.seen).to.deep.equal(['carrier.dispatch-1-0', 'carrier.dispatch-1-0']);
    await relay.stop();
  });

  it('when one lane is slow carrying its entries out, then polls go on and another lane left with an entry carries it out meanwhile', async () => {
    const journal = createMemoryJournal();
    const dispatch = recordingHandler();
    let release: () => void = () => undefined;
    const slowSeen: string[] = [];
    const relay = createOutboxRelay({
      outbox: journal,
      clock: { now: () => Date.now() },
      handlers: {
        'carrier.dispatch': dispatch,
        'webhook.event': {
          accepts: anyPayload,
          async handle(entries) {
            slowSeen.push(...entries.map((e) => e.id));
            await new Promise<void>((resolve) => {
              release = resolve;
            });
            return entries.map((e) => e.id);
          },
        },
      },
      pollIntervalMs: 1_000,
      batchSize: 50,
    });
    relay.start();
    await advance(0);
    // decided a while ago: due at the very next poll, which finds its lane busy
    await appendEntry(journal, 'message:m1', 1, 'slow-event', 'webhook.event', 3_000);
    await advance(0);
    expect(slowSeen, 'the webhook lane is busy').to.deep.equal(['slow-event']);
    // a dispatch whose carrying out failed, left for a poll
    dispatch.failing = 1;
    await appendEntry(journal, 'message:m2', 1, 'left-dispatch', 'carrier.dispatch');
    await advance(0);
    await advance(FRESH_ENTRY_MS);
    expect(dispatch.seen).to.deep.equal(['left-dispatch', 'left-dispatch']);
    expect(await journal.pending({ limit: 10, topics: ['carrier.dispatch'] })).to.deep.equal([]);
    release();
    await advance(0);
    await relay.stop();
    expect(await journal.pending({ limit: 10 })).to.deep.equal([]);
  });

  it('when the relay stops while a poll asks which lanes have entries due, then it waits for the answer and starts no lane after it', async () => {
    const journal = createMemoryJournal();
    const dispatch = recordingHandler();
    const probe = journal.pendingTopics.bind(journal);
    let answer: () => void = () => undefined;
    sinon.stub(journal, 'pendingTopics').callsFake(async (query) => {
      await new Promise<void>((resolve) => {
        answer = resolve;
      });
      return probe(query);
    });
    const relay = relayOf(journal, { 'carrier.dispatch': dispatch });
    relay.start();
    await advance(0);
    // carrying it out fails at once: left behind, and due at the next poll
    dispatch.failing = 1;
    await appendEntry(journal, 'message:m1', 1, 'left-behind', 'carrier.dispatch', 3_000);
    await advance(0);
    expect(dispatch.seen).to.deep.equal(['left-behind']);
    dispatch.seen.length = 0;
    await advance(1_000);
    let stopped = false;
    const stopping = relay.stop().then(() => {
      stopped = true;
    });
    await advance(0);
    expect(stopped, 'stop waits for the probe').to.equal(false);
    answer();
    await stopping;
    await advance(0);
    expect(dispatch.seen, 'no lane started once stopping').to.deep.equal([]);
    expect(
      (await journal.pending({ limit: 10 })).map((e) => e.id),
      'still pending for the next start',
    ).to.deep.equal(['left-behind']);
  });

  it('when the probe of a poll fails, then the failure is reported and the next poll carries the entry out', async () => {
    const journal = createMemoryJournal();
    const dispatch = recordingHandler();
    const errors: unknown[] = [];
    const probe = journal.pendingTopics.bind(journal);
    sinon
      .stub(journal, 'pendingTopics')
      .onFirstCall()
      .rejects(new Error('connection lost'))
      .callsFake((query) => probe(query));
    const relay = relayOf(journal, { 'carrier.dispatch': dispatch }, (error) => errors.push(error));
    // written while nobody listened, older than the fresh period
    await appendEntry(journal, 'message:m1', 1, 'left-behind', 'carrier.dispatch', 3_000);
    dispatch.failing = 1;
    relay.start();
    await advance(0);
    expect(dispatch.seen, 'the first pass failed it').to.deep.equal(['left-behind']);
    await advance(1_000);
    expect(errors.map((e) => (e as Error).message)).to.deep.equal(['connection lost']);
    expect(dispatch.seen).to.have.length(1);
    await advance(1_000);
    expect(dispatch.seen).to.deep.equal(['left-behind', 'left-behind']);
    expect(await journal.pending({ limit: 10 })).to.deep.equal([]);
    await relay.stop();
  });

  it('when an append hands over an entry older than the fresh period while a poll is out, then the entry is carried out once, not by both paths', async () => {
    const journal = createMemoryJournal();
    const dispatch = recordingHandler();
    const query = journal.pending.bind(journal);
    let gate: Promise<void> | null = null;
    let open: () => void = () => undefined;
    sinon.stub(journal, 'pending').callsFake(async (options) => {
      if (gate) await gate;
      return query(options);
    });
    const relay = relayOf(journal, { 'carrier.dispatch': dispatch });
    relay.start();
    await advance(0);
    gate = new Promise<void>((resolve) => {
      open = resolve;
    });
    // the poll goes out and waits for the database
    await advance(1_000);
    // meanwhile a slow write completes: its record was decided 3 s ago, so the poll's answer will include it
    await appendEntry(journal, 'message:m1', 1, 'late-dispatch', 'carrier.dispatch', 3_000);
    gate = null;
    open();
    await advance(0);
    await advance(0);

    expect(dispatch.seen).to.deep.equal(['late-dispatch']);
    expect(await query({ limit: 10 })).to.deep.equal([]);
    await relay.stop();
  });

  it('when drained, then even an entry younger than the fresh period that no notice brought is carried out', async () => {
    const { journal, relay, webhook } = setUp();
    relay.start();
    await advance(0);
    await relay.stop();
    // written while the relay was not listening
    await appendEntry(journal, 'message:m2', 1, 'evt-quiet', 'webhook.event');
    await relay.drain();
    expect(webhook.seen).to.deep.equal(['evt-quiet']);
  });

  it('when an append writes an entry of a lane with a grace period, then that lane waits for the poll and the grace', async () => {
    const { relay, followUp, append, queried } = setUp();
    relay.start();
    await advance(0);
    queried();
    await append('message.create');
    await advance(0);
    expect(queried(), 'the append woke no lane').to.deep.equal([]);
    await advance(1_000);
    expect(followUp.seen, 'polled, but still within the grace').to.deep.equal([]);
    await advance(1_000);
    expect(followUp.seen).to.deep.equal(['message.create-1-0']);
    await relay.stop();
  });

  it('when one append writes two topics, then both lanes carry their entries out and nothing is left pending', async () => {
    const { journal, relay, dispatch, webhook, append } = setUp();
    relay.start();
    await append('carrier.dispatch', 'webhook.event');
    await advance(0);
    expect(dispatch.seen).to.deep.equal(['carrier.dispatch-1-0']);
    expect(webhook.seen).to.deep.equal(['webhook.event-1-1']);
    expect(await journal.pending({ limit: 10 })).to.deep.equal([]);
    await relay.stop();
  });

  it('when more fresh entries arrive than one batch holds, then up to LANE_CHUNKS_AT_ONCE batches are carried out at once, and every entry once', async () => {
    const journal = createMemoryJournal();
    let inHand = 0;
    let most = 0;
    const seen: string[] = [];
    const releases: (() => void)[] = [];
    const slow: TopicHandler = {
      accepts: anyPayload,
      async handle(entries) {
        inHand++;
        most = Math.max(most, inHand);
        seen.push(...entries.map((e) => e.id));
        await new Promise<void>((resolve) => releases.push(resolve));
        inHand--;
        return entries.map((e) => e.id);
      },
    };
    const relay = createOutboxRelay({
      outbox: journal,
      clock: { now: () => Date.now() },
      handlers: { 'webhook.event': slow },
      pollIntervalMs: 1_000,
      batchSize: 2,
    });
    relay.start();
    await advance(0);
    const outbox = Array.from({ length: 2 * (LANE_CHUNKS_AT_ONCE + 2) }, (_, i) => ({
      id: `evt-${i}`,
      topic: 'webhook.event',
      payload: {},
      shard: 0,
    }));
    await journal.append({ key: 'message:m1', seq: 1, events: [{ type: 'x' }], outbox, at: Date.now() });
    await advance(0);

    expect(inHand).to.equal(LANE_CHUNKS_AT_ONCE);
    while (releases.length > 0) {
      for (const release of releases.splice(0)) release();
      await advance(0);
    }

    expect(most).to.equal(LANE_CHUNKS_AT_ONCE);
    expect([...seen].sort()).to.deep.equal(outbox.map((e) => e.id).sort());
    expect(await journal.pending({ limit: 100 })).to.deep.equal([]);
    await relay.stop();
  });
});

describe('outbox relay: an idle relay polls less', () => {
  const advance = fakeTime();

  /** A relay polling every 200 ms, and the times of its polls' probes since the last call (relative to T0). */
  function setUp(shards?: () => readonly number[]) {
    const journal = createMemoryJournal();
    const dispatch = recordingHandler();
    const relay = relayOf(journal, { 'carrier.dispatch': dispatch }, undefined, { pollIntervalMs: 200, ...(shards ? { shards } : {}) });
    const probes = sinon.spy(journal, 'pendingTopics');
    let seen = 0;
    const probeTimes = () => {
      const times = probes
        .getCalls()
        .slice(seen)
        .map((call) => call.args[0].topics[0]?.olderThan ?? 0);
      seen = probes.callCount;
      // a probe asks for entries older than the fresh period: its time is that limit plus the period
      return times.map((olderThan) => olderThan + FRESH_ENTRY_MS - 1 - T0);
    };
    return { journal, relay, dispatch, probeTimes };
  }
  const gaps = (times: readonly number[]) => times.slice(1).map((t, i) => t - (times[i] ?? 0));

  it('when nothing happens for IDLE_AFTER_MS, then its polls back off, doubling up to IDLE_POLL_MAX_MS; an append brings back the interval', async () => {
    const { journal, relay, probeTimes } = setUp();
    relay.start();
    await advance(0);
    await advance(IDLE_AFTER_MS);
    const busy = probeTimes();
    expect(busy).to.have.length(IDLE_AFTER_MS / 200);
    expect(new Set(gaps(busy))).to.deep.equal(new Set([200]));
    await advance(7_000);
    expect(gaps([IDLE_AFTER_MS, ...probeTimes()]), 'idle: doubling, then the ceiling').to.deep.equal([
      400,
      800,
      1_600,
      IDLE_POLL_MAX_MS,
      IDLE_POLL_MAX_MS,
    ]);
    // an append (17 000 ms): the poll set for 18 800 ms is set again for 200 ms later, and so on
    await appendEntry(journal, 'message:m1', 1, 'fresh', 'carrier.dispatch');
    await advance(1_000);
    expect(probeTimes()).to.deep.equal([17_200, 17_400, 17_600, 17_800, 18_000]);
    await relay.stop();
  });

  it('when an idle relay finds an entry due, or its shards change, then it polls at the interval again', async () => {
    let shards: readonly number[] = [0, 1];
    const { journal, relay, dispatch, probeTimes } = setUp(() => shards);
    // every append here is another writer's: none is handed over to this relay
    sinon.stub(journal, 'onAppended').returns(() => undefined);
    relay.start();
    await advance(0);
    await advance(IDLE_AFTER_MS + 7_000);
    probeTimes();
    // the last poll was at 16 800 ms, the next is set for 18 800; another writer leaves an entry (not handed over here)
    await journal.append({
      key: 'message:m2',
      seq: 1,
      events: [{ type: 'x' }],
      outbox: [{ id: 'elsewhere', topic: 'carrier.dispatch', payload: {}, shard: 1 }],
      at: Date.now() - FRESH_ENTRY_MS,
    });
    await advance(2_200);
    expect(probeTimes(), 'found due at 18 800: busy again').to.deep.equal([18_800, 19_000, 19_200]);
    expect(dispatch.seen).to.include('elsewhere');
    // idle again, then the node takes more shards (a failover)
    await advance(IDLE_AFTER_MS + 7_000);
    const idle = probeTimes();
    expect(gaps(idle.slice(-3))).to.deep.equal([IDLE_POLL_MAX_MS, IDLE_POLL_MAX_MS]);
    shards = [0, 1, 2, 3];
    await advance(IDLE_POLL_MAX_MS + 400);
    const after = probeTimes();
    // the poll set while idle notices the change, and the next ones come at the interval
    const [first, ...rest] = gaps([idle.at(-1) ?? 0, ...after]);
    expect(first).to.equal(IDLE_POLL_MAX_MS);
    expect(rest).to.have.length.at.least(2);
    expect(new Set(rest)).to.deep.equal(new Set([200]));
    await relay.stop();
  });
});

describe('outbox relay: entries a handler finishes later', () => {
  const advance = fakeTime();

  /**
   * A handler that carries out entries whose id starts with `now-` at once and answers the others as finished later,
   * each pass with a promise the test settles.
   */
  function laterHandler() {
    const passes: { resolve: (ids: readonly string[]) => void; reject: (error: Error) => void }[] = [];
    const seen: string[] = [];
    const handler: TopicHandler = {
      accepts: anyPayload,
      handle(entries) {
        const ids = entries.map((e) => e.id);
        seen.push(...ids);
        const awaiting = ids.filter((id) => !id.startsWith('now-'));
        if (awaiting.length === 0) return Promise.resolve(ids);
        const later = new Promise<readonly string[]>((resolve, reject) => passes.push({ resolve, reject }));
        return Promise.resolve({ done: ids.filter((id) => id.startsWith('now-')), awaiting, later });
      },
    };
    return { handler, passes, seen };
  }

  async function setUp() {
    const journal = createMemoryJournal();
    const { handler, passes, seen } = laterHandler();
    const errors: unknown[] = [];
    const relay = relayOf(journal, { 'webhook.event': handler }, (error) => errors.push(error));
    relay.start();
    await advance(0);
    await journal.append({
      key: 'message:m1',
      seq: 1,
      events: [{ type: 'x' }],
      outbox: ['now-1', 'later-1', 'later-2'].map((id) => ({ id, topic: 'webhook.event', payload: {}, shard: 0 })),
      at: Date.now(),
    });
    await advance(0);
    const pendingIds = async () => (await journal.pending({ limit: 10 })).map((e) => e.id).sort();
    return { relay, passes, seen, errors, pendingIds };
  }

  it('when a handler answers some entries as finished later, then those stay pending and no poll carries them out again until they are finished, then they are marked done', async () => {
    const { relay, passes, seen, pendingIds } = await setUp();
    expect(await pendingIds(), 'the entry done now is marked at once').to.deep.equal(['later-1', 'later-2']);

    // polls well past the fresh period meet the entries still pending, and leave them alone
    await advance(FRESH_ENTRY_MS + 3_000);
    expect(seen).to.deep.equal(['now-1', 'later-1', 'later-2']);
    expect(await pendingIds()).to.deep.equal(['later-1', 'later-2']);

    passes[0]?.resolve(['later-1', 'later-2']);
    await advance(0);
    expect(await pendingIds()).to.deep.equal([]);
    await relay.stop();
  });

  it('when the later answer holds only some of them, then only those are marked done and a poll carries the rest out again', async () => {
    const { relay, passes, seen, pendingIds } = await setUp();
    passes[0]?.resolve(['later-2']);
    await advance(0);
    expect(await pendingIds()).to.deep.equal(['later-1']);

    await advance(FRESH_ENTRY_MS + 1_000);
    expect(seen).to.deep.equal(['now-1', 'later-1', 'later-2', 'later-1']);
    passes[1]?.resolve(['later-1']);
    await advance(0);
    expect(await pendingIds()).to.deep.equal([]);
    await relay.stop();
  });

  it('when the later answer fails, then the entries stay pending, the failure is reported and a poll carries them out again', async () => {
    const { relay, passes, seen, errors, pendingIds } = await setUp();
    passes[0]?.reject(new Error('settling failed'));
    await advance(0);
    expect(await pendingIds()).to.deep.equal(['later-1', 'later-2']);
    expect(errors.map((e) => (e as Error).message)).to.deep.equal(['settling failed']);

    await advance(FRESH_ENTRY_MS + 1_000);
    expect(seen).to.deep.equal(['now-1', 'later-1', 'later-2', 'later-1', 'later-2']);
    passes[1]?.resolve(['later-1', 'later-2']);
    await relay.stop();
    expect(await pendingIds()).to.deep.equal([]);
  });

  it('when the relay stops or drains while entries are finishing later, then it resolves only once they are finished and marked', async () => {
    const { relay, passes, pendingIds } = await setUp();
    let drained = false;
    const drain = relay.drain().then(() => {
      drained = true;
    });
    await advance(0);
    expect(drained).to.equal(false);
    let stopped = false;
    const stop = relay.stop().then(() => {
      stopped = true;
    });
    await advance(0);
    expect(stopped).to.equal(false);

    passes[0]?.resolve(['later-1', 'later-2']);
    await drain;
    await stop;
    expect(await pendingIds()).to.deep.equal([]);
  });
});
