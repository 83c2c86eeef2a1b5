import { expect } from 'chai';
import sinon from 'sinon';
import type { Logger } from '../../../../src/libraries/logger/logger.js';
import { logSmppLinkEvent } from '../../../../src/carriers/smpp/smpp-events.js';
import type { SmppLinkEvent } from '../../../../src/carriers/smpp/smpp-link.js';

describe('SMPP link events as logs', () => {
  it('logs every event kind, warnings for what an operator must see', () => {
    const logger = { info: sinon.spy(), warn: sinon.spy() };
    const events: SmppLinkEvent[] = [
      { type: 'bind-up', bind: 0, session: 'transceiver' },
      { type: 'bind-down', bind: 0, session: 'transceiver', reason: 'reset' },
      { type: 'bind-failed', bind: 1, session: 'receiver', reason: 'bind refused: ESME_RBINDFAIL', attempt: 2 },
      { type: 'enquire-link-timeout', bind: 0, session: 'transmitter' },
      { type: 'resubmit', dispatchId: 'm:0:0', part: 0, reason: 'no submit_sm_resp in time' },
      { type: 'throttled', dispatchId: 'm:0:0', part: 1, status: 'ESME_RTHROTTLED' },
      { type: 'mobile-originated', from: '243', to: '12345', text: 'STOP' },
      { type: 'unreadable-receipt', reason: 'no id' },
      { type: 'report-failed', reference: 'X', reason: 'down' },
    ];
    for (const event of events) logSmppLinkEvent(logger as unknown as Logger, event);
    expect(logger.info.callCount + logger.warn.callCount).to.equal(events.length);
    expect(logger.warn.callCount).to.equal(6);
    expect(logger.warn.calledWithMatch({ reason: 'bind refused: ESME_RBINDFAIL' })).to.be.true;
  });
});
