import { expect } from 'chai';
import { silentLogger } from '../../../../src/libraries/logger/logger.js';
import { createSecretBox } from '../../../../src/libraries/secrets/secret-box.js';
import sinon from 'sinon';
import type { ActorRouter } from '../../../../src/cluster/actor-router.js';
import type { DeadLetter, DeadLetters } from '../../../../src/libraries/persistence/dead-letters-port.js';
import type { HandledInPart, RelayedEntry } from '../../../../src/libraries/persistence/outbox-relay.js';
import {
  ACK,
  retryAfter,
  type Delivery,
  type Disposition,
  type PublishOptions,
  type Transport,
} from '../../../../src/libraries/transport/transport-port.js';
import type { WebhookEvent } from '../../../../src/webhooks/event-envelope.js';
import type { AttemptResult } from '../../../../src/webhooks/retry-plan.js';
import {
  createWebhookRelay,
  isWebhookBatch,
  jobId,
  WEBHOOK_BATCH_MAX_EVENTS,
  type WebhookBatch,
  type WebhookBatchSample,
  type WebhookJob,
  type WebhookOutboxPayload,
} from '../../../../src/webhooks/webhook-jobs.js';
import type { WebhookSender } from '../../../../src/webhooks/webhook-sender.js';
import { createWebhookWorker, QUICK_PACE_MS } from '../../../../src/entry-points/transport/webhook-worker.js';
import { busyMerchantDelayMs } from '../../../../src/webhooks/merchant-slots.js';

const NOW = Date.UTC(2026, 10, 23, 9, 0, 0);
const clock = { now: () => NOW };
const KEY_URL = 'https://merchant.example/hooks';
const CALLBACK_URL = 'https://callback.example/sms';

const event = (n: number): WebhookEvent =>
  ({ event_id: `evt_${n}`, event_type: 'sms.sent', timestamp: '2026-11-23T09:00:00Z', data: {} }) as unknown as WebhookEvent;

/** A transport that records publishes (and fails those `failWhen` picks) and hands the consumer's handler to the test. */
function recordingTransport(failWhen: (payload: unknown) => boolean = () => false) {
  const published: { subject: string; payload: unknown; id: string }[] = [];
  let handler: ((delivery: Delivery) => Promise<Disposition>) | null = null;
  const transport: Transport = {
    kind: 'nats',
    publish(subject: string, payload: unknown, options: PublishOptions) {
      if (failWhen(payload)) return Promise.reject(new Error('broker unreachable'));
      published.push({ subject, payload, id: options.id });
      return Promise.resolve();
    },
    consume(spec) {
      handler = spec.handler;
      return Promise.resolve({ stop: () => Promise.resolve() });
    },
    request: () => Promise.reject(new Error('not used')),
    serve: () => Promise.reject(new Error('not used')),
    notify: () => {
      throw new Error('not used');
    },
    listen: () => Promise.reject(new Error('not used')),
    ping: () => Promise.resolve(),
    close: () => Promise.resolve(),
  };
  const deliver = (payload: unknown, deliveryCount = 1): Promise<Disposition> => {
    if (!handler) throw new Error('no consumer');
    return handler({ subject: 'webhook.jobs.mer_a', id: 'delivery-1', payload, headers: {}, deliveryCount });
  };
  return { transport, published, deliver };
}

/** Keys' webhook URLs as their actors would answer them. */
function routerWith(webhooks: Record<string, string | null>): ActorRouter {
  return {
    apiKey: (merchantId: string, keyId: string) => ({
      ask: () =>
        Promise.resolve({
          ok: true,
          target: {
            merchantId,
            webhook: webhooks[keyId] ? { url: webhooks[keyId], username: null, password: null } : null,
            signingSecret: null,
          },
        }),
    }),
  } as unknown as ActorRouter;
}

/** An outbox entry of event n; entries of one journal record share its key and sequence number. */
function entry(
  n: number,
  keyId: string,
  callbackUrl: string | null = null,
  record = `message:msg_${n}`,
): RelayedEntry<WebhookOutboxPayload> {
  return {
    id: `out_${String(n).padStart(3, '0')}`,
    key: record,
    seq: 1,
    topic: 'webhook.event',
    shard: 0,
    createdAt: NOW,
    payload: { merchantId: 'mer_a', keyId, callbackUrl, event: event(n) },
  };
}

/** What a pass carried out at once (a relay without first attempts on its node carries everything out at once). */
function doneNow(handled: readonly string[] | HandledInPart): readonly string[] {
  if ('later' in handled) throw new Error('expected every entry carried out at once');
  return handled;
}

const batchOf = (events: readonly WebhookEvent[], url = KEY_URL): WebhookBatch => ({
  version: 1,
  kind: 'batch',
  merchantId: 'mer_a',
  keyId: 'key_a',
  url,
  auth: 'none',
  events,
  dueAt: NOW,
});

describe('webhook batches: the relay', () => {
  it("when entries of two keys are relayed, then each record's events go out in batches per URL of at most 64, each event once per distinct URL, and every entry is done", async () => {
    const { transport, published } = recordingTransport();
    const relay = createWebhookRelay({ router: routerWith({ key_a: KEY_URL, key_b: null }), transport, clock });
    const entries = [
      // one journal record of 70 events (a message that took 70 receipts at once)
      ...Array.from({ length: 70 }, (_, i) => entry(i, 'key_a', null, 'message:msg_big')),
      entry(100, 'key_b', CALLBACK_URL),
      entry(101, 'key_b'),
      // its callback_url is the key's webhook_url: one delivery, not two
      entry(102, 'key_a', KEY_URL),
    ];

    const done = doneNow(await relay.handle(entries));

    expect([...done].sort()).to.deep.equal(entries.map((e) => e.id).sort());
    const batches = published.map((p) => p.payload as WebhookBatch);
    expect(published.every((p) => p.subject === 'webhook.jobs.mer_a')).to.equal(true);
    expect(batches.map((b) => [b.url, b.auth, b.events.length])).to.have.deep.members([
      [KEY_URL, 'key', WEBHOOK_BATCH_MAX_EVENTS],
      [KEY_URL, 'key', 70 - WEBHOOK_BATCH_MAX_EVENTS],
      [KEY_URL, 'key', 1],
      [CALLBACK_URL, 'none', 1],
    ]);
    const toKeyUrl = batches.filter((b) => b.url === KEY_URL).flatMap((b) => b.events.map((e) => e.event_id));
    expect(new Set(toKeyUrl).size).to.equal(71);
  });

  it("when a later pass carries a record's entries out again in another order or beside other entries, then it forms the same batches with the same publish ids", async () => {
    const { transport, published } = recordingTransport();
    const relay = createWebhookRelay({ router: routerWith({ key_a: KEY_URL }), transport, clock });
    const record = Array.from({ length: 70 }, (_, i) => entry(i, 'key_a', null, 'message:msg_big'));
    await relay.handle(record);
    const firstIds = published.splice(0).map((p) => p.id);

    await relay.handle([entry(200, 'key_a'), ...[...record].reverse()]);

    const again = published.map((p) => p.id);
    expect(firstIds).to.have.length(2);
    expect(again).to.include.members(firstIds);
    expect(again).to.have.length(3);
  });

  it('when the same entries are relayed again, then the batches carry the same publish ids (the broker drops the copies)', async () => {
    const { transport, published } = recordingTransport();
    const relay = createWebhookRelay({ router: routerWith({ key_a: KEY_URL }), transport, clock });
    const entries = Array.from({ length: 3 }, (_, i) => entry(i, 'key_a', null, 'message:msg_1'));
    await relay.handle(entries);
    await relay.handle(entries);
    expect(published).to.have.length(2);
    expect(published[0]?.id).to.match(/^batch:/);
    expect(published[1]?.id).to.equal(published[0]?.id);
  });

  it('when one batch cannot be published, then exactly its entries stay pending and the failure is reported', async () => {
    const failing = (payload: unknown) => (payload as WebhookBatch).events.some((e) => e.event_id === 'evt_65');
    const { transport } = recordingTransport(failing);
    const errors: unknown[] = [];
    const relay = createWebhookRelay({ router: routerWith({ key_a: KEY_URL }), transport, clock, onError: (error) => errors.push(error) });
    const entries = Array.from({ length: 70 }, (_, i) => entry(i, 'key_a', null, 'message:msg_big'));

    const done = doneNow(await relay.handle(entries));

    expect([...done].sort()).to.deep.equal(
      entries
        .slice(0, WEBHOOK_BATCH_MAX_EVENTS)
        .map((e) => e.id)
        .sort(),
    );
    expect(errors).to.have.length(1);
  });

  it('when batches are published, then each is counted as published with its events, and one that could not be published is not counted', async () => {
    const failing = (payload: unknown) => (payload as WebhookBatch).events.some((e) => e.event_id === 'evt_65');
    const { transport } = recordingTransport(failing);
    const samples: WebhookBatchSample[] = [];
    const relay = createWebhookRelay({
      router: routerWith({ key_a: KEY_URL }),
      transport,
      clock,
      onError: () => undefined,
      onBatch: (sample) => samples.push(sample),
    });
    // one record of 70 events (batches of 64 and 6, the second failing) and one event to the key's URL and a callback
    const entries = [
      ...Array.from({ length: 70 }, (_, i) => entry(i, 'key_a', null, 'message:msg_big')),
      entry(100, 'key_a', CALLBACK_URL),
    ];

    await relay.handle(entries);

    expect(samples).to.have.deep.members([
      { path: 'published', events: WEBHOOK_BATCH_MAX_EVENTS },
      { path: 'published', events: 1 },
      { path: 'published', events: 1 },
    ]);
  });
});

describe("webhook batches: the relay, entries holding a record's events", () => {
  /** The entry one journal record of a message writes today: all its events, the first one's id. */
  function recordEntry(first: number, count: number, keyId: string, callbackUrl: string | null = null): RelayedEntry<WebhookOutboxPayload> {
    const [head, ...rest] = Array.from({ length: count }, (_, i) => event(first + i));
    if (!head) throw new Error('an entry holds at least one event');
    return {
      id: head.event_id,
      key: `message:msg_${first}`,
      seq: 2,
      topic: 'webhook.event',
      shard: 0,
      createdAt: NOW,
      payload: { merchantId: 'mer_a', keyId, callbackUrl, events: [head, ...rest] },
    };
  }

  it('when an entry holds several events, then each goes once to each distinct URL, in their order, in one batch per URL, and the entry is done', async () => {
    const { transport, published } = recordingTransport();
    const relay = createWebhookRelay({ router: routerWith({ key_a: KEY_URL }), transport, clock });
    const held = recordEntry(10, 3, 'key_a', CALLBACK_URL);

    const done = doneNow(await relay.handle([held]));

    expect(done).to.deep.equal([held.id]);
    const batches = published.map((p) => p.payload as WebhookBatch);
    expect(batches.map((b) => [b.url, b.events.map((e) => e.event_id)])).to.have.deep.members([
      [KEY_URL, ['evt_10', 'evt_11', 'evt_12']],
      [CALLBACK_URL, ['evt_10', 'evt_11', 'evt_12']],
    ]);
  });

  it('when an entry holds more events than a batch takes, then they go in batches of at most 64, and a failed one keeps the whole entry pending', async () => {
    const failing = (payload: unknown) => (payload as WebhookBatch).events.some((e) => e.event_id === 'evt_69');
    const { transport, published } = recordingTransport(failing);
    const errors: unknown[] = [];
    const relay = createWebhookRelay({ router: routerWith({ key_a: KEY_URL }), transport, clock, onError: (error) => errors.push(error) });
    const big = recordEntry(0, 70, 'key_a');
    const small = recordEntry(100, 2, 'key_a');

    const done = doneNow(await relay.handle([big, small]));

    expect(done).to.deep.equal([small.id]);
    expect(published.map((p) => (p.payload as WebhookBatch).events.length)).to.have.members([WEBHOOK_BATCH_MAX_EVENTS, 2]);
    expect(errors).to.have.length(1);
  });

  it("when entries of both shapes wait together (one event each, written before an upgrade, and a record's events), then all their events go out", async () => {
    const { transport, published } = recordingTransport();
    const relay = createWebhookRelay({ router: routerWith({ key_a: KEY_URL }), transport, clock });
    const entries = [entry(1, 'key_a'), recordEntry(20, 2, 'key_a')];

    const done = doneNow(await relay.handle(entries));

    expect([...done].sort()).to.deep.equal(entries.map((e) => e.id).sort());
    const sent = published.flatMap((p) => (p.payload as WebhookBatch).events.map((e) => e.event_id));
    expect(sent.sort()).to.deep.equal(['evt_1', 'evt_20', 'evt_21']);
  });
});

describe('webhook batches: the worker', () => {
  /** A sender answering per event id (200 unless told), optionally holding every answer until released. */
  function scriptedSender(statusOf: (eventId: string) => number = () => 200) {
    const sent: string[] = [];
    let hold: Promise<void> | null = null;
    let release: () => void = () => undefined;
    const sender: WebhookSender = {
      async send(_url, body): Promise<AttemptResult> {
        const eventId = (JSON.parse(body) as { event_id: string }).event_id;
        sent.push(eventId);
        if (hold) await hold;
        return { type: 'response', status: statusOf(eventId) };
      },
      close: () => Promise.resolve(),
    };
    return {
      sender,
      sent,
      holdAnswers() {
        hold = new Promise<void>((resolve) => {
          release = resolve;
        });
      },
      releaseAnswers: () => {
        release();
      },
    };
  }

  const deadLetters: DeadLetters & { letters: DeadLetter[] } = {
    letters: [],
    record(letter) {
      this.letters.push(letter);
      return Promise.resolve();
    },
    list: () => Promise.resolve([]),
    take: () => Promise.resolve(null),
  };

  async function startWorker(
    transport: Transport,
    sender: WebhookSender,
    concurrencyPerMerchant: number,
    workerClock: { now(): number } = clock,
    concurrency = 64,
  ) {
    const worker = createWebhookWorker({
      transport,
      router: routerWith({}),
      sender,
      deadLetters,
      clock: workerClock,
      secrets: createSecretBox({ current: Buffer.alloc(32, 7) }),
      retryDelaysMs: [30_000, 120_000],
      concurrencyPerMerchant,
      concurrency,
      logger: silentLogger,
    });
    await worker.start();
    return worker;
  }

  it('when a batch arrives for a merchant with room, then each event is delivered once and the batch is acknowledged', async () => {
    const { transport, published, deliver } = recordingTransport();
    const { sender, sent } = scriptedSender();
    await startWorker(transport, sender, 4);
    const events = [1, 2, 3].map(event);

    expect(await deliver(batchOf(events))).to.deep.equal(ACK);
    expect([...sent].sort()).to.deep.equal(['evt_1', 'evt_2', 'evt_3']);
    expect(published).to.deep.equal([]);
  });

  it('when a batch holds more events than the merchant has room for, then the rest go back first as a smaller batch and the room is delivered', async () => {
    const { transport, published, deliver } = recordingTransport();
    const { sender, sent } = scriptedSender();
    // 1 slot and 2 waiting places: room for 3
    await startWorker(transport, sender, 1);
    const events = [1, 2, 3, 4, 5].map(event);

    expect(await deliver(batchOf(events))).to.deep.equal(ACK);

    expect(sent).to.deep.equal(['evt_1', 'evt_2', 'evt_3']);
    expect(published).to.have.length(1);
    expect((published[0]?.payload as WebhookBatch).events.map((e) => e.event_id)).to.deep.equal(['evt_4', 'evt_5']);
  });

  it('when one event of a batch fails with a 5xx, then only it is retried, as a job of its own with attempt 2 after the first delay', async () => {
    const { transport, published, deliver } = recordingTransport();
    const { sender } = scriptedSender((id) => (id === 'evt_2' ? 503 : 200));
    await startWorker(transport, sender, 4);

    expect(await deliver(batchOf([1, 2, 3].map(event)))).to.deep.equal(ACK);

    expect(published).to.have.length(1);
    const retry = published[0]?.payload as WebhookJob;
    expect(retry.jobId).to.equal(jobId('evt_2', KEY_URL));
    expect(retry.event.event_id).to.equal('evt_2');
    expect(retry.attempt).to.equal(2);
    expect(retry.dueAt).to.equal(NOW + 30_000);
  });

  it('when two batches arrive together and both exceed the room, then the second sees the room the first took and nothing goes back one by one', async () => {
    const { transport, published, deliver } = recordingTransport();
    const scripted = scriptedSender();
    // 1 slot and 2 waiting places: room for 3, all of it taken by the first batch
    await startWorker(transport, scripted.sender, 1);
    scripted.holdAnswers();

    const first = deliver(batchOf([1, 2, 3, 4, 5].map(event)));
    const second = deliver(batchOf([6, 7, 8, 9].map(event)), 2);

    expect(await second).to.deep.equal(retryAfter(busyMerchantDelayMs(2)));
    scripted.releaseAnswers();
    expect(await first).to.deep.equal(ACK);
    expect(scripted.sent).to.deep.equal(['evt_1', 'evt_2', 'evt_3']);
    expect(published.map((p) => (p.payload as WebhookBatch).events.map((e) => e.event_id))).to.deep.equal([['evt_4', 'evt_5']]);
  });

  it('when the merchant’s attempts have been quick, then its room grows and a batch larger than the first room is taken whole', async () => {
    const { transport, published, deliver } = recordingTransport();
    const { sender, sent } = scriptedSender();
    // 1 slot: room for 3 while the pace is unknown; the fake clock makes every attempt take 0 ms
    await startWorker(transport, sender, 1);
    expect(await deliver(batchOf([1].map(event)))).to.deep.equal(ACK);

    expect(await deliver(batchOf([2, 3, 4, 5, 6, 7, 8, 9].map(event)))).to.deep.equal(ACK);

    expect(sent).to.have.length(9);
    expect(published).to.deep.equal([]);
  });

  it('when one merchant’s deliveries each carry one event, then it holds at most 3 per slot of the consumer’s places, however quick it was', async () => {
    const { transport, deliver } = recordingTransport();
    const scripted = scriptedSender();
    await startWorker(transport, scripted.sender, 1);
    expect(await deliver(batchOf([1].map(event)))).to.deep.equal(ACK);
    scripted.holdAnswers();

    const inHand = [2, 3, 4].map((n) => deliver(batchOf([event(n)])));
    const fourth = await deliver(batchOf([event(5)]), 5);

    // back to the broker; with the merchant's pace known (0 ms a attempt on the fake clock) not for the busy
    // schedule's 4 s, but for the floor of 50 ms
    expect(busyMerchantDelayMs(5)).to.equal(4_000);
    expect(fourth).to.deep.equal(retryAfter(50));
    scripted.releaseAnswers();
    expect(await Promise.all(inHand)).to.deep.equal([ACK, ACK, ACK]);
  });

  it('when a merchant’s deliveries would take more than half of the consumer’s places, then the next goes back, leaving the rest to others', async () => {
    const { transport, deliver } = recordingTransport();
    const scripted = scriptedSender();
    // 4 slots of a consumer handling 8 deliveries at once: at most 4 in hand (not 3 per slot = 12)
    await startWorker(transport, scripted.sender, 4, clock, 8);
    scripted.holdAnswers();

    const inHand = [1, 2, 3, 4].map((n) => deliver(batchOf([event(n)])));
    const fifth = await deliver(batchOf([event(5)]));

    expect(fifth.type).to.equal('retry');
    scripted.releaseAnswers();
    expect(await Promise.all(inHand)).to.deep.equal([ACK, ACK, ACK, ACK]);
  });

  it('when events of a batch wait 5 s without a slot (the endpoint stopped answering), then they go back as jobs of their own and the batch is settled', async () => {
    const timers = sinon.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout'] });
    try {
      const { transport, published, deliver } = recordingTransport();
      const scripted = scriptedSender();
      await startWorker(transport, scripted.sender, 1);
      scripted.holdAnswers();
      // 1 slot and 2 waiting places: event 1 is sent and hangs, 2 and 3 wait
      const batch = deliver(batchOf([1, 2, 3].map(event)));
      await timers.tickAsync(5_000);

      expect(published.map((p) => p.id)).to.deep.equal([jobId('evt_2', KEY_URL), jobId('evt_3', KEY_URL)].map((id) => `${id}:1:requeued`));
      scripted.releaseAnswers();
      expect(await batch).to.deep.equal(ACK);
      expect(scripted.sent).to.deep.equal(['evt_1']);
    } finally {
      timers.restore();
    }
  });

  it('when a full merchant’s pace is known, then a delivery comes back after the time its pace needs to clear what it holds, if sooner than the busy schedule', async () => {
    const { transport, deliver } = recordingTransport();
    let now = NOW;
    const scripted = scriptedSender();
    // every attempt takes 40 ms: 5 000 / 40 → 16 waiting places per slot
    const slowBy40: WebhookSender = {
      send: async (...args) => {
        const result = await scripted.sender.send(...args);
        now += 40;
        return result;
      },
      close: () => Promise.resolve(),
    };
    await startWorker(transport, slowBy40, 1, { now: () => now });
    expect(await deliver(batchOf([event(1)]))).to.deep.equal(ACK);
    scripted.holdAnswers();
    const full = deliver(batchOf(Array.from({ length: 17 }, (_, i) => event(i + 2))));

    // 17 held (1 sending, 16 waiting) at 40 ms each through 1 slot: clear in 680 ms
    expect(await deliver(batchOf([event(30)]), 4)).to.deep.equal(retryAfter(680));
    expect(await deliver(batchOf([event(30)]), 1)).to.deep.equal(retryAfter(busyMerchantDelayMs(1)));
    scripted.releaseAnswers();
    expect(await full).to.deep.equal(ACK);
  });

  it('when the merchant has no room left, then a batch goes back to the broker whole with the busy delay', async () => {
    const { transport, published, deliver } = recordingTransport();
    const scripted = scriptedSender();
    await startWorker(transport, scripted.sender, 1);
    scripted.holdAnswers();
    const first = deliver(batchOf([1, 2, 3].map(event)));

    expect(await deliver(batchOf([4, 5].map(event)), 3)).to.deep.equal(retryAfter(busyMerchantDelayMs(3)));

    scripted.releaseAnswers();
    expect(await first).to.deep.equal(ACK);
    expect(published).to.deep.equal([]);
    expect(scripted.sent).to.not.include('evt_4');
  });

  it('when an event cannot be settled nor requeued (the broker unreachable), then the whole batch comes back', async () => {
    const { transport, deliver } = recordingTransport(() => true);
    const { sender } = scriptedSender(() => 503);
    await startWorker(transport, sender, 4);

    expect(await deliver(batchOf([1, 2].map(event)))).to.deep.equal(retryAfter(1_000));
  });

  describe('first attempts offered by the relay', () => {
    /** A worker started on the transport, and a relay of key_a's entries (to KEY_URL) offering it their batches. */
    async function relayAndWorker(
      options: {
        statusOf?: (eventId: string) => number;
        perMerchant?: number;
        tookMs?: number;
        failPublish?: (payload: unknown) => boolean;
      } = {},
    ) {
      const recording = recordingTransport(
        (payload) => (failPublishes && !isWebhookBatch(payload)) || (options.failPublish?.(payload) ?? false),
      );
      let failPublishes = false;
      let now = NOW;
      const scripted = scriptedSender(options.statusOf);
      // every attempt takes `tookMs` on the worker's clock: its pace
      const timed: WebhookSender = {
        send: async (...args) => {
          const result = await scripted.sender.send(...args);
          now += options.tookMs ?? 0;
          return result;
        },
        close: () => Promise.resolve(),
      };
      const worker = await startWorker(recording.transport, timed, options.perMerchant ?? 4, { now: () => now });
      const batchSamples: WebhookBatchSample[] = [];
      const relay = createWebhookRelay({
        router: routerWith({ key_a: KEY_URL }),
        transport: recording.transport,
        clock,
        firstAttempts: worker.firstAttempts,
        onBatch: (sample) => batchSamples.push(sample),
      });
      /** One attempt through the broker's path, so that the merchant's pace is known. */
      const learnPace = async () => {
        expect(await recording.deliver(batchOf([event(900)]))).to.deep.equal(ACK);
        scripted.sent.length = 0;
      };
      const failJobPublishes = () => {
        failPublishes = true;
      };
      return { ...recording, ...scripted, worker, relay, batchSamples, learnPace, failJobPublishes };
    }

    const publishedBatches = (published: readonly { payload: unknown }[]) => published.map((p) => p.payload).filter(isWebhookBatch);

    it('when the merchant’s pace is known and quick and it has a free slot per event, then the batch is attempted here, nothing is published, and the entry is done only once every attempt is answered', async () => {
      const setup = await relayAndWorker();
      await setup.learnPace();
      setup.holdAnswers();
      const held = entry(1, 'key_a');

      const handled = await setup.relay.handle([held]);

      if (!('later' in handled)) throw new Error('expected the entry to be finished later');
      expect(handled.done).to.deep.equal([]);
      expect(handled.awaiting).to.deep.equal([held.id]);
      let finished: readonly string[] | null = null;
      const later = handled.later.then((ids) => {
        finished = ids;
      });
      await new Promise<void>((resolve) => setImmediate(resolve));
      expect(setup.sent).to.deep.equal(['evt_1']);
      expect(finished, 'the answer is still held').to.equal(null);

      setup.releaseAnswers();
      await later;
      expect(finished).to.deep.equal([held.id]);
      expect(setup.published).to.deep.equal([]);
    });

    it('when a batch is attempted here, then it is counted in_process with its events, at once, before its attempts are answered', async () => {
      const setup = await relayAndWorker();
      await setup.learnPace();
      setup.holdAnswers();
      const record = [1, 2, 3].map((n) => entry(n, 'key_a', null, 'message:msg_1'));

      const handled = await setup.relay.handle(record);

      expect(setup.batchSamples).to.deep.equal([{ path: 'in_process', events: 3 }]);
      setup.releaseAnswers();
      if (!('later' in handled)) throw new Error('expected the entries to be finished later');
      await handled.later;
      expect(setup.batchSamples, 'counted once').to.have.length(1);
    });

    it('when the merchant’s pace is not known yet, then the batch is counted as published', async () => {
      const setup = await relayAndWorker();

      await setup.relay.handle([entry(1, 'key_a')]);

      expect(setup.batchSamples).to.deep.equal([{ path: 'published', events: 1 }]);
    });

    it('when one batch of an entry is attempted here and its other batch is published, then each is counted by the way it went', async () => {
      const setup = await relayAndWorker({ perMerchant: 1 });
      await setup.learnPace();

      // to the key's URL (taken here, the merchant's one slot) and to the callback_url (no slot left: published)
      const handled = await setup.relay.handle([entry(1, 'key_a', CALLBACK_URL)]);

      expect(setup.batchSamples).to.have.deep.members([
        { path: 'in_process', events: 1 },
        { path: 'published', events: 1 },
      ]);
      expect(publishedBatches(setup.published).map((b) => b.url)).to.deep.equal([CALLBACK_URL]);
      if ('later' in handled) await handled.later;
    });

    it('when the merchant’s pace is not known yet, then the batch is published as before and the entry is done at once', async () => {
      const setup = await relayAndWorker();
      const handled = await setup.relay.handle([entry(1, 'key_a')]);

      expect(doneNow(handled)).to.deep.equal(['out_001']);
      expect(publishedBatches(setup.published).map((b) => b.events.map((e) => e.event_id))).to.deep.equal([['evt_1']]);
      expect(setup.sent).to.deep.equal([]);
    });

    it(`when the merchant’s attempts take longer than ${QUICK_PACE_MS} ms, then the batch is published as before`, async () => {
      const setup = await relayAndWorker({ tookMs: QUICK_PACE_MS + 1 });
      await setup.learnPace();

      expect(doneNow(await setup.relay.handle([entry(1, 'key_a')]))).to.deep.equal(['out_001']);
      expect(publishedBatches(setup.published)).to.have.length(1);
      expect(setup.sent).to.deep.equal([]);
    });

    it(`when the merchant’s attempts take ${QUICK_PACE_MS} ms, then the batch is still attempted here`, async () => {
      const setup = await relayAndWorker({ tookMs: QUICK_PACE_MS });
      await setup.learnPace();

      const handled = await setup.relay.handle([entry(1, 'key_a')]);

      if (!('later' in handled)) throw new Error('expected the entry to be finished later');
      expect(await handled.later).to.deep.equal(['out_001']);
      expect(setup.published).to.deep.equal([]);
    });

    it('when the merchant has fewer free slots than the batch has events, then the whole batch is published and nothing is attempted here', async () => {
      const setup = await relayAndWorker({ perMerchant: 2 });
      await setup.learnPace();
      // one record of three events: one batch of three, two slots
      const record = [1, 2, 3].map((n) => entry(n, 'key_a', null, 'message:msg_1'));

      expect([...doneNow(await setup.relay.handle(record))].sort()).to.deep.equal(['out_001', 'out_002', 'out_003']);
      expect(publishedBatches(setup.published).map((b) => b.events.length)).to.deep.equal([3]);
      expect(setup.sent).to.deep.equal([]);
    });

    it('when the merchant’s slots are taken by deliveries from the broker, then the batch is published', async () => {
      const setup = await relayAndWorker({ perMerchant: 1 });
      await setup.learnPace();
      setup.holdAnswers();
      const inHand = setup.deliver(batchOf([event(50)]));
      await new Promise<void>((resolve) => setImmediate(resolve));

      expect(doneNow(await setup.relay.handle([entry(1, 'key_a')]))).to.deep.equal(['out_001']);
      expect(publishedBatches(setup.published)).to.have.length(1);
      setup.releaseAnswers();
      expect(await inHand).to.deep.equal(ACK);
      expect(setup.sent).to.deep.equal(['evt_50']);
    });

    it('when the worker is stopped, then the batch is published', async () => {
      const setup = await relayAndWorker();
      await setup.learnPace();
      await setup.worker.stop();

      expect(doneNow(await setup.relay.handle([entry(1, 'key_a')]))).to.deep.equal(['out_001']);
      expect(publishedBatches(setup.published)).to.have.length(1);
    });

    it('when an event attempted here fails with a 5xx, then its retry is a job on the broker (attempt 2, after the first delay) and the entry is done', async () => {
      const setup = await relayAndWorker({ statusOf: (id) => (id === 'evt_2' ? 503 : 200) });
      await setup.learnPace();
      const record = [1, 2].map((n) => entry(n, 'key_a', null, 'message:msg_1'));

      const handled = await setup.relay.handle(record);

      if (!('later' in handled)) throw new Error('expected the entries to be finished later');
      expect([...(await handled.later)].sort()).to.deep.equal(['out_001', 'out_002']);
      expect(setup.published).to.have.length(1);
      const retry = setup.published[0]?.payload as WebhookJob;
      expect(retry.jobId).to.equal(jobId('evt_2', KEY_URL));
      expect(retry.attempt).to.equal(2);
      expect(retry.dueAt).to.equal(NOW + 30_000);
      expect(setup.published[0]?.id).to.equal(`${jobId('evt_2', KEY_URL)}:2`);
    });

    it('when one batch of an entry is attempted here and its other batch cannot be published, then the entry waits for the attempt and is not done', async () => {
      const setup = await relayAndWorker({
        perMerchant: 1,
        failPublish: (payload) => isWebhookBatch(payload) && payload.url === CALLBACK_URL,
      });
      await setup.learnPace();

      // to the key's URL (taken here, the merchant's one slot) and to the callback_url (no slot left: published, which fails)
      const handled = await setup.relay.handle([entry(1, 'key_a', CALLBACK_URL)]);

      if (!('later' in handled)) throw new Error('expected the entry to wait for its attempt');
      expect(handled.done).to.deep.equal([]);
      expect(handled.awaiting).to.deep.equal(['out_001']);
      expect(await handled.later).to.deep.equal([]);
      expect(setup.sent).to.deep.equal(['evt_1']);
      expect(setup.batchSamples, 'the batch that could not be published is not counted').to.deep.equal([{ path: 'in_process', events: 1 }]);
    });

    it('when an event attempted here can neither be retried nor sent back to the broker, then its entry is not done (it stays pending) and the others are', async () => {
      const setup = await relayAndWorker({ statusOf: (id) => (id === 'evt_2' ? 503 : 200) });
      await setup.learnPace();
      setup.failJobPublishes();

      const handled = await setup.relay.handle([entry(1, 'key_a'), entry(2, 'key_a')]);

      if (!('later' in handled)) throw new Error('expected the entries to be finished later');
      expect(await handled.later).to.deep.equal(['out_001']);
    });
  });
});
