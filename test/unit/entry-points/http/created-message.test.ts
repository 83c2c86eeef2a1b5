import { expect } from 'chai';
import { dataAnswer, detailAnswer } from '../../../../src/entry-points/http/envelopes.js';
import { createdMessageOf } from '../../../../src/entry-points/http/merchant-operations.js';

describe('the message a forwarded send created', () => {
  it('when the answer is a 201 carrying a message id, then that id', () => {
    expect(createdMessageOf(dataAnswer(201, { message_id: 'msg_1', total_cost: 1 }))).to.equal('msg_1');
    expect(createdMessageOf(dataAnswer(201, { message_id: 'msg_2' }, { 'Idempotent-Replayed': 'true' }))).to.equal('msg_2');
  });

  it('when the answer is anything else, then none', () => {
    expect(createdMessageOf(dataAnswer(200, { message_id: 'msg_1' })), 'not a creation').to.equal(null);
    expect(createdMessageOf(detailAnswer(404, 'Message not found.'))).to.equal(null);
    expect(createdMessageOf(dataAnswer(201, { message_id: 7 })), 'not a string').to.equal(null);
    expect(createdMessageOf(dataAnswer(201, null)), 'no data').to.equal(null);
    expect(createdMessageOf({ status: 201, body: 'created' }), 'not an envelope').to.equal(null);
  });
});
