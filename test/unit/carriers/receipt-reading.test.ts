import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import { checkReceipt, checkReceiptBatch, readReceipts, RECEIPT_BATCH_MAX, type Receipt } from '../../../src/carriers/carrier-protocol.js';

const receipt = (n: number, extra: Record<string, unknown> = {}): Receipt => ({
  version: 1,
  receipt_id: `msg_a:0:${n}:0`,
  dispatch_id: `msg_a:0:${n}`,
  status: 'delivered',
  occurred_at: '2025-03-01T10:00:00.000Z',
  ...extra,
});

describe('reading a message on sms.receipts.<carrier> (docs/carrier-protocol.md section 5)', () => {
  it('when it is one valid receipt, then that receipt and nothing refused', () => {
    expect(readReceipts(receipt(1))).to.deep.equal({ receipts: [receipt(1)], rejected: [] });
  });

  it('when it is one invalid receipt, then nothing and one refusal', () => {
    const read = readReceipts(receipt(1, { status: 'teleported' }));
    expect(read.receipts).to.deep.equal([]);
    expect(read.rejected).to.have.length(1);
    expect(read.rejected[0]).to.match(/^invalid receipt: /);
  });

  it('when it is a valid batch, then its receipts in order', () => {
    const batch = { version: 1, batch_id: 'b-1', receipts: [receipt(2), receipt(1), receipt(3)] };
    expect(checkReceiptBatch(batch).ok).to.equal(true);
    expect(readReceipts(batch)).to.deep.equal({ receipts: [receipt(2), receipt(1), receipt(3)], rejected: [] });
  });

  it('when a well-formed batch holds an invalid receipt, then the others count and only it is refused, by its position', () => {
    const batch = { version: 1, batch_id: 'b-2', receipts: [receipt(1), receipt(2, { error_code: '2000' }), receipt(3)] };
    expect(checkReceiptBatch(batch).ok).to.equal(false);
    const read = readReceipts(batch);
    expect(read.receipts).to.deep.equal([receipt(1), receipt(3)]);
    expect(read.rejected).to.have.length(1);
    expect(read.rejected[0]).to.match(/^invalid receipt 1 of batch b-2: /);
  });

  it('when the batch itself is malformed, then it is refused whole', () => {
    const malformed: unknown[] = [
      { version: 1, batch_id: 'b', receipts: [] },
      { version: 2, batch_id: 'b', receipts: [receipt(1)] },
      { version: 1, receipts: [receipt(1)] },
      { version: 1, batch_id: '', receipts: [receipt(1)] },
      { version: 1, batch_id: 'b', receipts: [receipt(1)], extra: true },
      { version: 1, batch_id: 'b', receipts: receipt(1) },
      { version: 1, batch_id: 'b', receipts: Array.from({ length: RECEIPT_BATCH_MAX + 1 }, (_, i) => receipt(i)) },
    ];
    for (const payload of malformed) {
      const read = readReceipts(payload);
      expect(read.receipts, JSON.stringify(payload).slice(0, 80)).to.deep.equal([]);
      expect(read.rejected).to.have.length(1);
      expect(read.rejected[0]).to.match(/^invalid receipt batch: /);
    }
  });

  it('when a batch holds the most receipts allowed, then all of them count', () => {
    const receipts = Array.from({ length: RECEIPT_BATCH_MAX }, (_, i) => receipt(i));
    expect(readReceipts({ version: 1, batch_id: 'full', receipts }).receipts).to.have.length(RECEIPT_BATCH_MAX);
  });

  it('when it is not an object at all, then it is refused as a receipt', () => {
    for (const payload of [null, 'text', 42, [receipt(1)]]) {
      const read = readReceipts(payload);
      expect(read.receipts).to.deep.equal([]);
      expect(read.rejected[0]).to.match(/^invalid receipt: /);
    }
  });

  it('when docs/carrier-protocol.md shows a receipt or a batch, then the example is valid as shown', () => {
    const doc = readFileSync(new URL('../../../docs/carrier-protocol.md', import.meta.url), 'utf8');
    const examples = [...doc.matchAll(/```json\n([\s\S]*?)```/g)].map((m) => JSON.parse(m[1] ?? '') as Record<string, unknown>);
    const batches = examples.filter((e) => 'batch_id' in e);
    const receipts = examples.filter((e) => 'receipt_id' in e);
    expect(batches).to.have.length.greaterThan(0);
    expect(receipts).to.have.length.greaterThan(0);
    for (const batch of batches) expect(checkReceiptBatch(batch).ok, JSON.stringify(batch)).to.equal(true);
    for (const receipt of receipts) expect(checkReceipt(receipt).ok, JSON.stringify(receipt)).to.equal(true);
  });
});
