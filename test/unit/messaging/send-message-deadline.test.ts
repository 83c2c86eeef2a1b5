import { expect } from 'chai';
import {
  createDomainHosts,
  createLocalActorRouter,
  type ActorRouter,
  type MessageRef,
  type WalletRef,
} from '../../../src/cluster/actor-router.js';
import { createActorRuntime, type ActorRuntime } from '../../../src/libraries/actors/actor-runtime.js';
import { createManualClock, createSequentialIds } from '../../../src/libraries/clock/clock.js';
import type { MerchantRecord } from '../../../src/libraries/persistence/directory-port.js';
import type { MerchantCatalog } from '../../../src/merchants/merchant-catalog.js';
import { createSendMessageUseCase } from '../../../src/messaging/send-message-use-case.js';
import { mustParseMoney } from '../../../src/pricing/money.js';
import { createPriceList } from '../../../src/pricing/pricing-table.js';
import { createMemoryJournal } from '../../helpers/memory-journal.js';
import { DeadlineExpiredError } from '../../../src/libraries/errors/internal-errors.js';

const MERCHANT: MerchantRecord = {
  id: 'm1',
  name: 'Shop',
  timezone: 'Africa/Kinshasa',
  defaultCountry: 'CD',
  currency: 'USD',
  locale: 'fr-CD',
  currencySymbol: null,
  unitPrice: null,
  wallets: { prepaid: true, postpaid: false },
  createdAt: 0,
};
const BUDGET_MS = 5_000;
/** Deadline left, in real time, when the charge is asked (see the test that uses it). */
const REAL_MARGIN_MS = 4_000;

/**
 * The send use case on real actors (memory journal) with a manual clock: the request's deadline is passed by
 * moving the clock inside a step, exactly where a slow database or a frozen process would spend the time.
 */
describe('send use case under a deadline (the message created by a second write)', () => {
  let runtime: ActorRuntime;
  let journal: ReturnType<typeof createMemoryJournal>;
  const clock = createManualClock(Date.parse('2026-06-01T00:00:00Z'));
  /** Run inside each step of the fakes, in order: the test moves the clock there. */
  let onPricing: () => void;
  let onCreate: () => void;
  let ownersKnown: string[];
  let followUpsDone: string[];
  /** Each wallet command asked, with the request deadline it carried. */
  let walletAsks: string[];
  /** The journal writes companions: the message is created in the charge's write (set by the suites below). */
  let creationWithCharge = false;
  let sending: ReturnType<typeof useCase>['sending'];
  let router: ActorRouter;
  const routerOf = () => router;

  function useCase() {
    const hosts = createDomainHosts(runtime, {
      host: { askTimeoutMs: BUDGET_MS, idleShutdownMs: 60_000, snapshotEvery: 100 },
      ratePolicy: {
        windowMs: 1_000,
        limits: { send: 100, status: 100, balance: 100, calculate: 100, management: 100 },
        suspendAfterRejections: 100,
        suspensionMs: 1_000,
      },
      idempotencyTtlMs: 86_400_000,
    });
    const routed = createLocalActorRouter(hosts, 4);
    // the creation, the first step after the charge, runs onCreate just before it is asked
    const router: ActorRouter = {
      wallet(merchantId) {
        const ref = routed.wallet(merchantId);
        const ask: WalletRef['ask'] = (command, options) => {
          walletAsks.push(`${command.type} within ${String(options?.scope?.deadline ?? null)}`);
          return ref.ask(command, options);
        };
        return { key: ref.key, ask };
      },
      apiKey: (merchantId, keyId) => routed.apiKey(merchantId, keyId),
      shardOf: (merchantId) => routed.shardOf(merchantId),
      message(merchantId, messageId) {
        const ref = routed.message(merchantId, messageId);
        const ask: MessageRef['ask'] = (command, options) => {
          if (command.type === 'create') onCreate();
          return ref.ask(command, options);
        };
        return { key: ref.key, ask };
      },
    };
    const catalog = {
      merchant: () => Promise.resolve(MERCHANT),
      priceList: () => {
        onPricing();
        return Promise.resolve(createPriceList([], mustParseMoney('0.01')));
      },
    } as unknown as MerchantCatalog;
    const sending = createSendMessageUseCase({
      router,
      catalog,
      clock,
      newMessageId: createSequentialIds('msg'),
      environment: 'sandbox',
      defaultCarrier: 'simulator',
      scheduling: { horizonDays: 30, maxScheduledSms: 100 },
      webhookUrlPolicy: { publicAddressesOnly: false, allowHttpLocalhost: true },
      decidedWaitMs: BUDGET_MS,
      creationWithCharge,
      followUpDone: (id) => followUpsDone.push(id),
      ownerKnown: (messageId, merchantId) => ownersKnown.push(`${messageId}:${merchantId}`),
    });
    return { router, sending };
  }

  const send = () =>
    sending.sendMessage(
      { merchantId: 'm1', keyId: 'k1', body: { to: ['0812345678'], message: 'hi' }, idempotencyKey: null },
      { deadline: clock.now() + BUDGET_MS },
    );
  const walletEvents = () =>
    journal
      .records('wallet:m1')
      .flatMap((r) => r.events as { type: string }[])
      .map((e) => e.type);

  beforeEach(async () => {
    journal = createMemoryJournal();
    runtime = createActorRuntime({ journal, clock, newId: createSequentialIds('id') });
    onPricing = () => undefined;
    onCreate = () => undefined;
    followUpsDone = [];
    ownersKnown = [];
    walletAsks = [];
    const built = useCase();
    router = built.router;
    sending = built.sending;
    await router.wallet('m1').ask({ type: 'open', wallet: 'prepaid' });
    await router.wallet('m1').ask({ type: 'top_up', wallet: 'prepaid', amount: mustParseMoney('10'), reference: 'funding' });
  });
  afterEach(() => {
    runtime.stop();
  });

  it('when the deadline passes before the charge, then the send is refused before it and nothing is charged or created', async () => {
    onPricing = () => {
      clock.advance(BUDGET_MS);
    };
    const error = await send().catch((e: unknown) => e);
    expect(error).to.be.instanceOf(DeadlineExpiredError).with.property('step', 'the charge');
    expect(walletEvents()).to.deep.equal(['wallet_opened', 'topped_up']);
    expect(journal.records('message:msg-1')).to.deep.equal([]);
  });

  it('when the charge was decided just before the deadline, then the message is still created after it and the send succeeds', async () => {
    // the charge is asked with REAL_MARGIN_MS of the deadline left: the runtime withdraws a command still queued at
    // its deadline on a real timer, so a 1 ms margin made the test depend on how fast a loaded machine takes it
    onPricing = () => {
      clock.advance(BUDGET_MS - REAL_MARGIN_MS);
    };
    // the first step after the charge finds the deadline passed: it must go on all the same
    onCreate = () => {
      clock.advance(REAL_MARGIN_MS + 10);
    };
    const deadline = clock.now() + BUDGET_MS;
    walletAsks = [];
    const result = await send();
    expect(result.ok).to.equal(true);
    expect(walletAsks, 'the charge carries the request deadline: a wallet that has not taken it by then refuses it').to.deep.equal([
      `charge within ${deadline}`,
    ]);
    expect(walletEvents()).to.deep.equal(['wallet_opened', 'topped_up', 'charged']);
    expect(journal.records('message:msg-1').flatMap((r) => r.events as { type: string }[])[0]?.type).to.equal('message_created');
    expect(followUpsDone).to.deep.equal(['create:msg-1']);
    expect(ownersKnown, 'the owner the creation recorded, remembered').to.deep.equal(['msg-1:m1']);
  });

  it('when the creation keeps failing after the charge, then it is tried again until the bound, and the send is answered as accepted, left to the outbox', async () => {
    let attempts = 0;
    onCreate = () => {
      attempts++;
      clock.advance(1_000);
      throw new Error('database unreachable');
    };
    const result = await send();
    expect(result.ok).to.equal(true);
    expect(attempts).to.be.greaterThan(1);
    expect(walletEvents()).to.deep.equal(['wallet_opened', 'topped_up', 'charged']);
    // the follow-up journaled with the charge stays in the outbox: the relay creates the message
    expect(followUpsDone).to.deep.equal([]);
    expect(ownersKnown).to.deep.equal([]);
    expect((await journal.pending({ limit: 10 })).map((entry) => entry.id)).to.include('create:msg-1');
  });

  describe("with the message created in the charge's write", () => {
    before(() => {
      creationWithCharge = true;
    });
    after(() => {
      creationWithCharge = false;
    });

    it('when the charge is written, then the message is created by the same write: no second ask, no follow-up left', async () => {
      const appends: string[] = [];
      const append = journal.append.bind(journal);
      journal.append = (entry) => {
        appends.push([entry.key, ...(entry.companions ?? []).map((c) => c.key)].join('+'));
        return append(entry);
      };
      let creates = 0;
      onCreate = () => {
        creates++;
      };
      const deadline = clock.now() + BUDGET_MS;
      walletAsks = [];
      const result = await send();
      expect(result.ok).to.equal(true);
      expect(walletAsks, 'the charge carries the request deadline').to.deep.equal([`charge_and_create within ${deadline}`]);
      expect(appends).to.deep.equal(['wallet:m1+message:msg-1']);
      expect(creates, 'no create asked of the message').to.equal(0);
      expect(walletEvents()).to.deep.equal(['wallet_opened', 'topped_up', 'charged']);
      expect(journal.records('message:msg-1').flatMap((r) => r.events as { type: string }[])[0]?.type).to.equal('message_created');
      const pending = (await journal.pending({ limit: 10 })).map((entry) => entry.topic);
      expect(pending, 'the dispatch, written with the charge').to.include('carrier.dispatch');
      expect(pending).to.not.include('message.create');
      expect(followUpsDone).to.deep.equal([]);
      expect(ownersKnown).to.deep.equal(['msg-1:m1']);
    });

    it('when the message is asked right after, then it answers from the record written with the charge, without reading the journal', async () => {
      const reads: string[] = [];
      const read = journal.read.bind(journal);
      journal.read = (key, afterSeq) => {
        reads.push(key);
        return read(key, afterSeq);
      };
      const result = await send();
      expect(result.ok).to.equal(true);
      const status = await routerOf().message('m1', 'msg-1').ask({ type: 'status', merchantId: 'm1' });
      expect(status).to.have.nested.property('state.spec.messageId', 'msg-1');
      expect(reads).to.deep.equal([]);
    });

    it('when the wallet cannot pay, then nothing is charged and no message is written', async () => {
      const refused = await sending.sendMessage(
        {
          merchantId: 'm1',
          keyId: 'k1',
          body: { to: Array.from({ length: 1001 }, (_, i) => `08123${String(i).padStart(5, '0')}`), message: 'hi' },
          idempotencyKey: null,
        },
        { deadline: clock.now() + BUDGET_MS },
      );
      expect(refused.ok).to.equal(false);
      expect(walletEvents()).to.deep.equal(['wallet_opened', 'topped_up']);
      expect(journal.records('message:msg-1')).to.deep.equal([]);
    });

    it("when the charge's write fails, then the send fails and neither the charge nor the message exists", async () => {
      journal.failNextAppend(new Error('database unreachable'));
      const error = await send().catch((e: unknown) => e);
      expect(error).to.be.instanceOf(Error);
      expect(walletEvents()).to.deep.equal(['wallet_opened', 'topped_up']);
      expect(journal.records('message:msg-1')).to.deep.equal([]);
      expect(ownersKnown).to.deep.equal([]);
    });
  });
});
