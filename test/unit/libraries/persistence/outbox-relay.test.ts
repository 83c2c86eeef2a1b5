import { expect } from 'chai';
import sinon from 'sinon';
import type { PendingOutboxEntry } from '../../../../src/libraries/persistence/journal-port.js';
import { createOutboxRelay, type TopicHandler } from '../../../../src/libraries/persistence/outbox-relay.js';
import { createMemoryJournal } from '../../../helpers/memory-journal.js';

const T0 = Date.UTC(2026, 0, 5, 9, 0, 0);

/** A handler that records the entries it is given and carries them all out. */
function recordingHandler(graceMs?: number): TopicHandler & { readonly seen: string[] } {
  const seen: string[] = [];
  return {
    seen,
    ...(graceMs !== undefined ? { graceMs } : {}),
    handle(entries: readonly PendingOutboxEntry[]) {
      seen.push(...entries.map((e) => e.id));
      return Promise.resolve(entries.map((e) => e.id));
    },
  };
}

describe('outbox relay: waking the lanes', () => {
  let clock: sinon.SinonFakeTimers;
  beforeEach(() => {
    clock = sinon.useFakeTimers({ now: T0, toFake: ['setTimeout', 'clearTimeout', 'Date'] });
  });
  afterEach(() => {
    clock.restore();
  });

  function setUp() {
    const journal = createMemoryJournal();
    const pending = sinon.spy(journal, 'pending');
    const dispatch = recordingHandler();
    const webhook = recordingHandler();
    const followUp = recordingHandler(2_000);
    const relay = createOutboxRelay({
      outbox: journal,
      clock: { now: () => Date.now() },
      handlers: { 'carrier.dispatch': dispatch, 'webhook.event': webhook, 'message.create': followUp },
      pollIntervalMs: 1_000,
      batchSize: 50,
    });
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

  it('when an append writes a dispatch, then only the dispatch lane queries the outbox, without waiting for the poll', async () => {
    const { relay, dispatch, webhook, append, queried } = setUp();
    relay.start();
    await clock.tickAsync(0);
    queried(); // the start-up pass looks at every lane
    await append('carrier.dispatch');
    await clock.tickAsync(0);
    expect(dispatch.seen).to.deep.equal(['carrier.dispatch-1-0']);
    expect(webhook.seen).to.deep.equal([]);
    expect(queried()).to.deep.equal(['carrier.dispatch']);
    await relay.stop();
  });

  it('when an append writes an entry of a lane with a grace period, then that lane waits for the poll and the grace', async () => {
    const { relay, followUp, append, queried } = setUp();
    relay.start();
    await clock.tickAsync(0);
    queried();
    await append('message.create');
    await clock.tickAsync(0);
    expect(queried(), 'the append woke no lane').to.deep.equal([]);
    await clock.tickAsync(1_000);
    expect(followUp.seen, 'polled, but still within the grace').to.deep.equal([]);
    await clock.tickAsync(1_000);
    expect(followUp.seen).to.deep.equal(['message.create-1-0']);
    await relay.stop();
  });

  it('when one append writes two topics, then both lanes carry their entries out and nothing is left pending', async () => {
    const { journal, relay, dispatch, webhook, append } = setUp();
    relay.start();
    await append('carrier.dispatch', 'webhook.event');
    await clock.tickAsync(0);
    expect(dispatch.seen).to.deep.equal(['carrier.dispatch-1-0']);
    expect(webhook.seen).to.deep.equal(['webhook.event-1-1']);
    expect(await journal.pending({ limit: 10 })).to.deep.equal([]);
    await relay.stop();
  });
});
