import { expect } from 'chai';
import type { Gateway } from '../../../src/gateway.js';
import { fromUnits, mustParseMoney, toDecimalNumber } from '../../../src/pricing/money.js';
import { alteredKey } from '../../helpers/api-helpers.js';
import { gatewayOnPostgres, seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';
import type { WalletEvent } from '../../../src/wallets/wallet-behaviour.js';

describe('gateway use cases on PostgreSQL', function () {
  this.timeout(60_000);
  let url: string;
  let gateway: Gateway;
  let shop: SeededMerchant;

  before(async () => {
    url = await (await testPostgres()).createDatabase('usecases');
    gateway = await gatewayOnPostgres(url);
    shop = await seedMerchant(gateway, { prepaid: '10', postpaid: '5' });
  });
  after(async () => {
    await gateway.stop();
  });

  it('when a key is presented, then it authenticates to its merchant; a garbled or foreign-environment key does not', async () => {
    expect(await gateway.useCases.apiKeys.authenticate(shop.apiKey, 'status')).to.deep.equal({
      outcome: 'authenticated',
      merchantId: shop.merchantId,
      keyId: shop.keyId,
    });
    expect(await gateway.useCases.apiKeys.authenticate(alteredKey(shop.apiKey), 'status')).to.deep.equal({ outcome: 'unauthorized' });
    expect(await gateway.useCases.apiKeys.authenticate(shop.apiKey.replace('sk_test_', 'sk_live_'), 'status')).to.deep.equal({
      outcome: 'unauthorized',
    });
  });

  it('when a message is sent, then the exact per-destination cost is charged and the status shows every recipient', async () => {
    const sent = await gateway.useCases.sendMessage({
      merchantId: shop.merchantId,
      keyId: shop.keyId,
      body: { to: ['+243 81 234 5678', '0991234567', '+33612345678', '+14155550100'], message: 'Hello' },
      idempotencyKey: null,
    });
    if (!sent.ok) throw sent.error;
    // 0.02 + 0.03 + 0.05 + 0.01 (no row: unit price)
    expect(sent.value.receipt).to.deep.include({
      total_recipients: 4,
      total_messages: 4,
      total_cost: 0.11,
      currency: 'USD',
      status: 'pending',
    });
    const status = await gateway.useCases.getStatus(shop.merchantId, sent.value.receipt.message_id);
    if (!status.found) throw new Error('not found');
    expect(status.view.total_recipients).to.equal(4);
    expect(status.view.recipients.map((r) => [r.recipient_index, r.phone, r.status, r.carrier])).to.deep.equal([
      [0, '+243812345678', 'pending', 'simulator'],
      [1, '+243991234567', 'pending', 'simulator'],
      [2, '+33612345678', 'pending', 'simulator'],
      [3, '+14155550100', 'pending', 'simulator'],
    ]);
    const balance = await gateway.useCases.wallets.getBalance(shop.merchantId);
    if (!balance.ok) throw balance.error;
    expect(balance.value).to.deep.include({ balance: 14.89, sms_wallet_balance: 9.89, postpaid_wallet_balance: 5 });
  });

  it('when another merchant asks for the status, then it is not found, exactly like an unknown id', async () => {
    const other = await seedMerchant(gateway, { name: 'Other', prepaid: '1' });
    const sent = await gateway.useCases.sendMessage({
      merchantId: shop.merchantId,
      keyId: shop.keyId,
      body: { to: ['0812345678'], message: 'x' },
      idempotencyKey: null,
    });
    if (!sent.ok) throw sent.error;
    expect(await gateway.useCases.getStatus(other.merchantId, sent.value.receipt.message_id)).to.deep.equal({ found: false });
    expect(await gateway.useCases.getStatus(other.merchantId, 'msg_does_not_exist')).to.deep.equal({ found: false });
    expect(await gateway.useCases.getStatus(other.merchantId, '../../etc/passwd')).to.deep.equal({ found: false });
  });

  it('when the same Idempotency-Key comes with the same body, then the first answer returns and nothing is charged again', async () => {
    const body = { to: ['0812345678'], message: 'once' };
    const first = await gateway.useCases.sendMessage({ merchantId: shop.merchantId, keyId: shop.keyId, body, idempotencyKey: 'order-42' });
    const before = await gateway.useCases.wallets.getBalance(shop.merchantId);
    const again = await gateway.useCases.sendMessage({
      merchantId: shop.merchantId,
      keyId: shop.keyId,
      body: { message: 'once', to: ['0812345678'] },
      idempotencyKey: 'order-42',
    });
    const after = await gateway.useCases.wallets.getBalance(shop.merchantId);
    if (!first.ok || !again.ok || !before.ok || !after.ok) throw new Error('unexpected failure');
    expect(again.value).to.deep.equal({ receipt: first.value.receipt, replayed: true });
    expect(after.value.balance).to.equal(before.value.balance);
    const other = await gateway.useCases.sendMessage({
      merchantId: shop.merchantId,
      keyId: shop.keyId,
      body: { to: ['0812345678'], message: 'twice' },
      idempotencyKey: 'order-42',
    });
    expect(other.ok).to.equal(false);
    if (!other.ok) expect(other.error.code).to.equal('1111');
  });

  it('when the cost exceeds the balance, then it is 1202 and nothing is charged', async () => {
    const poor = await seedMerchant(gateway, { name: 'Poor', prepaid: '0.01' });
    const sent = await gateway.useCases.sendMessage({
      merchantId: poor.merchantId,
      keyId: poor.keyId,
      body: { to: ['0812345678', '0812345679'], message: 'x' },
      idempotencyKey: null,
    });
    expect(sent.ok).to.equal(false);
    if (!sent.ok) expect([sent.error.code, sent.error.httpStatus]).to.deep.equal(['1202', 402]);
    const balance = await gateway.useCases.wallets.getBalance(poor.merchantId);
    if (balance.ok) expect(balance.value.balance).to.equal(0.01);
  });

  it('when 1 000 charges of 1 race against a balance of 500, then exactly 500 succeed and the ledger sums match', async () => {
    const created = await gateway.useCases.merchants.createMerchant({ name: 'Race' });
    if (!created.ok) throw new Error('merchant');
    const merchantId = created.value.id;
    await gateway.useCases.wallets.openWallet(merchantId, 'prepaid');
    await gateway.useCases.wallets.topUp(merchantId, 'prepaid', mustParseMoney('500'), 'race');
    const one = mustParseMoney('1');
    const wallet = gateway.router.wallet(merchantId);
    const replies = await Promise.all(
      Array.from({ length: 1000 }, (_, i) =>
        wallet.ask({ type: 'charge', chargeId: `race-${i}`, amount: one, refundable: false, idempotency: null, followUp: null }),
      ),
    );
    expect(replies.filter((r) => r.ok)).to.have.length(500);
    expect(toDecimalNumber((await wallet.ask({ type: 'balance' })).total)).to.equal(0);
    const records = await gateway.persistence.journal.read(`wallet:${merchantId}`, 0);
    const events = records.flatMap((r) => r.events as WalletEvent[]);
    const charged = events.filter((e) => e.type === 'charged');
    expect(charged).to.have.length(500);
    const toppedUp = events.filter((e) => e.type === 'topped_up').reduce((s, e) => s + e.amount, 0);
    expect(toppedUp - charged.reduce((s, e) => s + e.prepaid + e.postpaid, 0)).to.equal(0);
  });

  it('when two activations of one wallet write, then the stale one is fenced by the journal, stops, and its command is decided again on the truth', async () => {
    const created = await gateway.useCases.merchants.createMerchant({ name: 'Split brain' });
    if (!created.ok) throw new Error('merchant');
    const merchantId = created.value.id;
    await gateway.useCases.wallets.openWallet(merchantId, 'prepaid');
    await gateway.useCases.wallets.topUp(merchantId, 'prepaid', mustParseMoney('10'), 'fund');
    // a second node on the same database activates the same wallet and writes first
    const second = await gatewayOnPostgres(url);
    try {
      const charge = (id: string) => ({
        type: 'charge' as const,
        chargeId: id,
        amount: fromUnits(10_000),
        refundable: false,
        idempotency: null,
        followUp: null,
      });
      // the first node's wallet is active (it opened and funded it); the second writes behind its back
      expect((await second.router.wallet(merchantId).ask(charge('second-1'))).ok).to.equal(true);
      const retried = await gateway.router.wallet(merchantId).ask(charge('first-1'));
      // re-activated from the journal, the first node saw the second node's charge before deciding again
      expect(retried.ok && toDecimalNumber(retried.balance.total)).to.equal(8);
      const records = await gateway.persistence.journal.read(`wallet:${merchantId}`, 0);
      expect(records.map((r) => r.seq)).to.deep.equal([1, 2, 3, 4]);
      const charged = records
        .flatMap((r) => r.events as WalletEvent[])
        .filter((e): e is Extract<WalletEvent, { type: 'charged' }> => e.type === 'charged');
      expect(charged.map((e) => e.chargeId)).to.deep.equal(['second-1', 'first-1']);
    } finally {
      await second.stop();
    }
  });

  it('when an actor is passivated and the node restarts, then balances and messages come back from the journal', async () => {
    const sent = await gateway.useCases.sendMessage({
      merchantId: shop.merchantId,
      keyId: shop.keyId,
      body: { to: ['0812345678'], message: 'persist me' },
      idempotencyKey: null,
    });
    if (!sent.ok) throw sent.error;
    const before = await gateway.useCases.wallets.getBalance(shop.merchantId);
    const restarted = await gatewayOnPostgres(url);
    try {
      const status = await restarted.useCases.getStatus(shop.merchantId, sent.value.receipt.message_id);
      expect(status.found).to.equal(true);
      expect(await restarted.useCases.wallets.getBalance(shop.merchantId)).to.deep.equal(before);
    } finally {
      await restarted.stop();
    }
  });
});
