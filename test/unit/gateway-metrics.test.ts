import { expect } from 'chai';
import { meteredJournal } from '../../src/gateway-metrics.js';
import type { Journal } from '../../src/libraries/persistence/journal-port.js';
import { createMetrics, type Metrics } from '../../src/libraries/observability/metrics.js';
import type { MessageEvent } from '../../src/messaging/message-behaviour.js';
import { mustParseMoney, ZERO, type Money } from '../../src/pricing/money.js';
import type { WalletEvent } from '../../src/wallets/wallet-behaviour.js';
import { M, parseExposition, sampleOf, valueOf } from '../helpers/prometheus-text.js';
import { createMemoryJournal } from '../helpers/memory-journal.js';

const T0 = Date.UTC(2026, 2, 2, 9, 0, 0);
const CURRENCIES: Readonly<Record<string, string>> = { 'merchant-usd': 'USD', 'merchant-cdf': 'CDF' };

describe('metrics counted from journal appends (gateway-metrics)', () => {
  let metrics: Metrics;
  let journal: Journal;
  const failures: unknown[] = [];
  const seqs = new Map<string, number>();

  beforeEach(() => {
    metrics = createMetrics({ defaultMetrics: false });
    failures.length = 0;
    seqs.clear();
    journal = meteredJournal(
      createMemoryJournal(),
      metrics,
      (merchantId) => Promise.resolve(CURRENCIES[merchantId] ?? 'unknown'),
      (error) => failures.push(error),
    );
  });

  async function append(key: string, events: readonly (WalletEvent | MessageEvent)[]): Promise<void> {
    const seq = (seqs.get(key) ?? 0) + 1;
    seqs.set(key, seq);
    await journal.append({ key, seq, events, outbox: [], at: T0 });
  }

  const charged = (prepaid: Money, postpaid: Money = ZERO): WalletEvent => ({
    type: 'charged',
    chargeId: `charge-${String(prepaid)}-${String(postpaid)}`,
    prepaid,
    postpaid,
    refundable: true,
    idempotency: null,
    at: T0,
  });
  const refunded = (prepaid: Money, postpaid: Money = ZERO): WalletEvent => ({
    type: 'refunded',
    chargeId: 'charge',
    refundId: 'refund',
    prepaid,
    postpaid,
    at: T0,
  });

  /** The exposition as Prometheus reads it, once the currency look-ups (promises) have answered. */
  async function scrape() {
    await new Promise((resolve) => setImmediate(resolve));
    return parseExposition((await metrics.scrape()).body);
  }

  it('when many charges of 0.0235 and other amounts with 4 decimals are journaled, then the amount counters hold their exact sum in 1/10 000', async () => {
    // 1 000 × 0.0235 and 1 000 × 0.1: summed as decimals in floating point, these drift (23.4999999999996…, 99.999999999998…)
    for (let i = 0; i < 1_000; i++) await append('wallet:merchant-usd', [charged(mustParseMoney('0.0235'))]);
    for (let i = 0; i < 1_000; i++) await append('wallet:merchant-usd', [charged(mustParseMoney('0.07'), mustParseMoney('0.03'))]);
    // a batch of several movements in one record, in another currency
    await append('wallet:merchant-cdf', [
      charged(mustParseMoney('1234.5678')),
      charged(ZERO, mustParseMoney('0.0001')),
      refunded(mustParseMoney('0.3333')),
    ]);
    for (let i = 0; i < 3; i++) await append('wallet:merchant-usd', [refunded(mustParseMoney('0.0235'))]);

    const exposition = await scrape();

    expect(failures).to.deep.equal([]);
    const usd = sampleOf(exposition, M('charged_amount_ten_thousandths_total'), { currency: 'USD' });
    // 1 000 × 235 + 1 000 × (700 + 300)
    expect(usd?.raw).to.equal('1235000');
    expect(sampleOf(exposition, M('charged_amount_ten_thousandths_total'), { currency: 'CDF' })?.raw).to.equal('12345679');
    expect(sampleOf(exposition, M('refunded_amount_ten_thousandths_total'), { currency: 'USD' })?.raw).to.equal('705');
    expect(sampleOf(exposition, M('refunded_amount_ten_thousandths_total'), { currency: 'CDF' })?.raw).to.equal('3333');
    expect(valueOf(exposition, M('charges_total'), { currency: 'USD' })).to.equal(2_000);
    expect(valueOf(exposition, M('charges_total'), { currency: 'CDF' })).to.equal(2);
    expect(valueOf(exposition, M('refunds_total'), { currency: 'USD' })).to.equal(3);
    expect(exposition.types.get(M('charged_amount_ten_thousandths_total'))).to.equal('counter');
    expect(exposition.types.get(M('refunded_amount_ten_thousandths_total'))).to.equal('counter');
    expect(
      exposition.samples.some((s) => s.name === M('charged_amount') || s.name === M('refunded_amount')),
      'the float counters are gone',
    ).to.equal(false);
  });

  it('when an amount is not a whole number of 1/10 000, then the counter refuses it instead of drifting', () => {
    expect(() => {
      metrics.charged('USD', 0.0235);
    }).to.throw(RangeError);
    expect(() => {
      metrics.refunded('USD', -1);
    }).to.throw(RangeError);
    expect(() => {
      metrics.charged('USD', 2 ** 53);
    }).to.throw(RangeError);
  });

  it('when the receipt timeout fails recipients, then each journaled timeout signal counts once; carrier failures do not', async () => {
    await append('message:m-1', [
      { type: 'recipient_signal', occurrence: 0, recipient: 0, signal: { type: 'receipt_timeout', at: T0 }, at: T0 },
      { type: 'recipient_signal', occurrence: 0, recipient: 1, signal: { type: 'receipt_timeout', at: T0 }, at: T0 },
      { type: 'recipient_signal', occurrence: 0, recipient: 2, signal: { type: 'carrier_report', status: 'undelivered', at: T0 }, at: T0 },
      {
        type: 'recipient_signal',
        occurrence: 0,
        recipient: 3,
        signal: { type: 'gateway_failure', errorCode: '1505', errorMessage: 'no route', at: T0 },
        at: T0,
      },
    ]);
    await append('message:m-2', [
      { type: 'recipient_signal', occurrence: 1, recipient: 0, signal: { type: 'receipt_timeout', at: T0 }, at: T0 },
    ]);

    const exposition = await scrape();

    expect(valueOf(exposition, M('receipt_timeouts_total'))).to.equal(3);
    expect(exposition.types.get(M('receipt_timeouts_total'))).to.equal('counter');
  });

  it('when an append fails, then nothing of it is counted', async () => {
    const failing: Journal = { ...createMemoryJournal(), append: () => Promise.reject(new Error('database away')) };
    const metered = meteredJournal(
      failing,
      metrics,
      () => Promise.resolve('USD'),
      (error) => failures.push(error),
    );

    const error = await metered
      .append({ key: 'wallet:merchant-usd', seq: 1, events: [charged(mustParseMoney('1'))], outbox: [], at: T0 })
      .catch((e: unknown) => e);

    expect(error).to.be.instanceOf(Error);
    const exposition = await scrape();
    expect(valueOf(exposition, M('charges_total'), { currency: 'USD' })).to.equal(undefined);
    expect(valueOf(exposition, M('charged_amount_ten_thousandths_total'), { currency: 'USD' })).to.equal(undefined);
  });
});
