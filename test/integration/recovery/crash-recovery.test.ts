import { expect } from 'chai';
import type { Gateway } from '../../../src/gateway.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { mustParseMoney, toDecimalNumber } from '../../../src/pricing/money.js';
import type { WalletEvent } from '../../../src/wallets/wallet-behaviour.js';
import { startChild } from '../../helpers/child-node.js';
import { gatewayOnPostgres, seedMerchant } from '../../helpers/gateway-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

describe('crash recovery on PostgreSQL (a node killed with SIGKILL)', function () {
  this.timeout(120_000);
  let url: string;
  let operator: Gateway;

  before(async () => {
    url = await (await testPostgres()).createDatabase('recovery');
    operator = await gatewayOnPostgres(url);
  });
  after(async () => {
    await operator.stop();
  });

  it('when the node dies in the middle of a stream of charges, then every acknowledged charge is there exactly once', async () => {
    const created = await operator.useCases.merchants.createMerchant({ name: 'Stream' });
    if (!created.ok) throw new Error('merchant');
    const merchantId = created.value.id;
    await operator.useCases.wallets.openWallet(merchantId, 'prepaid');
    await operator.useCases.wallets.topUp(merchantId, 'prepaid', mustParseMoney('100000'), 'fund');
    operator.hosts.wallets.passivate();

    const node = startChild('gateway-child.ts', { DATABASE_URL: url });
    await node.waitFor((m) => m.event === 'ready');
    // a steady stream: the kill lands while charges are in flight
    let sent = 0;
    const streaming = { on: true };
    const stream = (async () => {
      while (streaming.on) {
        for (let i = 0; i < 200; i++, sent++) node.send({ op: 'charge', merchantId, chargeId: `c-${sent}`, amount: 10_000 });
        await new Promise((resolve) => setTimeout(resolve, 5));
      }
    })();
    await node.waitUntil(() => node.messages.length > 2000);
    await node.kill('SIGKILL');
    streaming.on = false;
    await stream;
    const total = sent;
    const acked = new Set(node.messages.filter((m) => 'ack' in m && m.ok === true).map((m) => String(m.ack)));
    expect(acked.size).to.be.at.least(2000).and.below(total);

    const records = await operator.persistence.journal.read(`wallet:${merchantId}`, 0);
    const charges = records.flatMap((r) => r.events as WalletEvent[]).filter((e) => e.type === 'charged');
    const counts = new Map<string, number>();
    for (const c of charges) counts.set(c.chargeId, (counts.get(c.chargeId) ?? 0) + 1);
    for (const id of acked) expect(counts.get(id), id).to.equal(1);
    for (const count of counts.values()) expect(count).to.equal(1);
    // a restarted node folds exactly the journaled charges
    const restarted = await gatewayOnPostgres(url);
    try {
      const balance = await restarted.router.wallet(merchantId).ask({ type: 'balance' });
      expect(toDecimalNumber(balance.total)).to.equal(100_000 - charges.length);
    } finally {
      await restarted.stop();
    }
  });

  /**
   * A node in a child process sends a 2-recipient message and is SIGKILLed right after the charge's write: the
   * merchant, and the message id its one charge names.
   */
  async function killedRightAfterCharge(name: string, env: Record<string, string>) {
    const shop = await seedMerchant(operator, { name, prepaid: '10' });
    operator.hosts.wallets.passivate();
    const node = startChild('gateway-child.ts', { DATABASE_URL: url, FAULT: 'crash_after_charge', ...env });
    await node.waitFor((m) => m.event === 'ready');
    node.send({
      op: 'send',
      merchantId: shop.merchantId,
      keyId: shop.keyId,
      body: { to: ['+243812345678', '+243812345679'], message: 'survive' },
      ref: 's1',
    });
    await node.waitFor((m) => m.event === 'charged_then_crashing');
    await node.kill('SIGKILL');
    await new Promise((resolve) => setTimeout(resolve, 100));
    const walletEvents = (await operator.persistence.journal.read(`wallet:${shop.merchantId}`, 0)).flatMap(
      (r) => r.events as WalletEvent[],
    );
    const charged = walletEvents.filter((e): e is Extract<WalletEvent, { type: 'charged' }> => e.type === 'charged');
    expect(charged).to.have.length(1);
    return { shop, messageId: charged[0]!.chargeId };
  }

  /** The message is found with its 2 recipients, and the wallet was charged for them once (10 − 2 × 0.02). */
  async function expectCreatedAndChargedOnce(node: Gateway, merchantId: string, messageId: string): Promise<void> {
    const status = await node.useCases.getStatus(merchantId, messageId);
    expect(status.found).to.equal(true);
    if (status.found) expect(status.view.total_recipients).to.equal(2);
    const balance = await node.useCases.wallets.getBalance(merchantId);
    if (!balance.ok) throw balance.error;
    expect(balance.value.balance).to.equal(9.96);
  }

  it('when the node dies right after a charge that created its message in the same statement, then the message exists with its dispatch, charged once', async () => {
    const { shop, messageId } = await killedRightAfterCharge('One statement', {});
    const created = await operator.persistence.journal.read(`message:${messageId}`, 0);
    expect(created.map((r) => r.seq)).to.deep.equal([1]);
    expect((created[0]!.events as { type: string }[]).map((e) => e.type)).to.include('message_created');
    expect(await operator.persistence.directory.messageOwner(messageId)).to.equal(shop.merchantId);
    const pending = await operator.persistence.outbox.pending({ limit: 20 });
    expect(pending.filter((e) => e.topic === 'carrier.dispatch' && e.key === `message:${messageId}`)).to.have.length(1);
    expect(pending.filter((e) => e.topic === 'message.create')).to.deep.equal([]);

    const restarted = await gatewayOnPostgres(url);
    try {
      await expectCreatedAndChargedOnce(restarted, shop.merchantId, messageId);
    } finally {
      await restarted.stop();
    }
  });

  it('when the node dies between the charge and the creation of a message (a journal without companion records), then after restart the message exists and was charged once', async () => {
    const { shop, messageId } = await killedRightAfterCharge('Interrupted', { JOURNAL: 'without_companions' });
    // the charge is journaled, the message is not (yet)
    expect(await operator.persistence.journal.read(`message:${messageId}`, 0)).to.deep.equal([]);

    // a restarted node (its clock past the relay's grace period) finishes the send from the outbox
    const clock = createManualClock(Date.now() + 60_000);
    const restarted = await gatewayOnPostgres(url, { clock });
    try {
      await restarted.relay.drain();
      await expectCreatedAndChargedOnce(restarted, shop.merchantId, messageId);
      expect(await restarted.persistence.outbox.pending({ limit: 10, topics: ['message.create'] })).to.deep.equal([]);
      // finishing again (a second relay pass or node) changes nothing
      await restarted.relay.drain();
      expect((await restarted.persistence.journal.read(`message:${messageId}`, 0)).length).to.equal(1);
    } finally {
      await restarted.stop();
    }
  });
});
