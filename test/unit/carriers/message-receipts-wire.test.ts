import { expect } from 'chai';
import { messageReceiptsOf } from '../../../src/carriers/message-receipts.js';

/** A message's receipts as a batch item between nodes: checked field by field before they reach an actor. */
describe('message receipts off the wire', () => {
  const receipt = {
    occurrence: 0,
    recipient: 2,
    status: 'delivered',
    at: 1_780_000_000_000,
    errorCode: null,
    errorMessage: null,
    carrierStatus: 'smpp:DELIVRD',
  };

  it('when the item is well formed, then it is read as it was sent', () => {
    const item = JSON.parse(
      JSON.stringify({
        messageId: 'msg_1',
        receipts: [receipt, { occurrence: 1, recipient: 0, status: 'failed', at: 1, errorCode: '1504' }],
      }),
    ) as unknown;
    expect(messageReceiptsOf(item)).to.deep.equal({
      messageId: 'msg_1',
      receipts: [receipt, { occurrence: 1, recipient: 0, status: 'failed', at: 1, errorCode: '1504' }],
    });
  });

  it('when a field is missing or of the wrong kind, then the item is refused', () => {
    const cases: unknown[] = [
      null,
      { receipts: [receipt] },
      { messageId: 'msg_1' },
      { messageId: 'msg_1', receipts: [{ ...receipt, status: 'arrived' }] },
      { messageId: 'msg_1', receipts: [{ ...receipt, recipient: '2' }] },
      { messageId: 'msg_1', receipts: [{ ...receipt, at: null }] },
      { messageId: 'msg_1', receipts: [{ ...receipt, errorCode: 5 }] },
      { messageId: 'msg_1', receipts: [{ ...receipt, carrierStatus: null }] },
      { messageId: 'msg_1', receipts: ['delivered'] },
    ];
    for (const item of cases) expect(messageReceiptsOf(item), JSON.stringify(item)).to.equal(null);
  });
});
