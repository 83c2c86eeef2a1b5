import { expect } from 'chai';
import {
  CARRIER_OUTCOMES,
  CARRIER_STATUSES,
  failureCode,
  failureMessage,
  isCarrierStatus,
  isRetryable,
  type CarrierStatus,
  type RecipientStatus,
} from '../../../src/carriers/carrier-outcomes.js';
import { ERROR_CATALOGUE } from '../../../src/libraries/errors/error-catalogue.js';
import { applySignal, INITIAL_RECIPIENT_STATE } from '../../../src/messaging/recipient-state.js';

interface OutcomeRow {
  readonly status: RecipientStatus;
  readonly errorCode: string | null;
  /** null where the report is not a failure. */
  readonly retryable: boolean | null;
  /** Events a single report of this kind emits for a recipient still `pending`. */
  readonly eventsFromPending: readonly string[];
}

// Carrier outcomes as README "Interpretations" (Status and events, Carriers) gives them
const OUTCOMES: Readonly<Record<CarrierStatus, OutcomeRow>> = {
  processing: { status: 'processing', errorCode: null, retryable: null, eventsFromPending: ['sms.processing'] },
  accepted: { status: 'sent', errorCode: null, retryable: null, eventsFromPending: ['sms.processing', 'sms.sent'] },
  enroute: { status: 'sent', errorCode: null, retryable: null, eventsFromPending: ['sms.processing', 'sms.sent'] },
  delivered: {
    status: 'delivered',
    errorCode: null,
    retryable: null,
    eventsFromPending: ['sms.processing', 'sms.sent', 'sms.delivered'],
  },
  undelivered: { status: 'failed', errorCode: '1502', retryable: true, eventsFromPending: ['sms.processing', 'sms.sent', 'sms.failed'] },
  rejected: { status: 'failed', errorCode: '1504', retryable: false, eventsFromPending: ['sms.processing', 'sms.failed'] },
  expired: { status: 'failed', errorCode: '1505', retryable: true, eventsFromPending: ['sms.processing', 'sms.sent', 'sms.failed'] },
  delivery_unknown: {
    status: 'failed',
    errorCode: '1506',
    retryable: true,
    eventsFromPending: ['sms.processing', 'sms.sent', 'sms.failed'],
  },
  partially_delivered: {
    status: 'failed',
    errorCode: '1507',
    retryable: false,
    eventsFromPending: ['sms.processing', 'sms.sent', 'sms.failed'],
  },
  failed: { status: 'failed', errorCode: '1501', retryable: false, eventsFromPending: ['sms.processing', 'sms.failed'] },
};

describe('carrier outcomes', () => {
  it('when the table is read, then it covers every carrier status exactly once', () => {
    expect(Object.keys(OUTCOMES).sort()).to.deep.equal([...CARRIER_STATUSES].sort());
    expect(Object.keys(CARRIER_OUTCOMES).sort()).to.deep.equal([...CARRIER_STATUSES].sort());
  });

  for (const carrierStatus of CARRIER_STATUSES) {
    const row = OUTCOMES[carrierStatus];

    describe(`carrier status "${carrierStatus}"`, () => {
      it(`when mapped, then the recipient status is ${row.status} and the error code is ${String(row.errorCode)}`, () => {
        expect(CARRIER_OUTCOMES[carrierStatus].status).to.equal(row.status);
        expect(CARRIER_OUTCOMES[carrierStatus].errorCode).to.equal(row.errorCode);
        expect(failureCode(carrierStatus, null)).to.equal(row.errorCode);
      });

      it(`when its error code is judged, then retryable is ${String(row.retryable)}`, () => {
        const code = failureCode(carrierStatus, undefined);
        expect(code === null ? null : isRetryable(code)).to.equal(row.retryable);
      });

      it(`when reported for a pending recipient, then the events are ${row.eventsFromPending.join(', ')}`, () => {
        const at = Date.UTC(2025, 0, 2, 3, 4, 5);

        const result = applySignal(INITIAL_RECIPIENT_STATE, { type: 'carrier_report', status: carrierStatus, at });

        expect(result.events).to.deep.equal(row.eventsFromPending);
        expect(result.changed).to.equal(true);
        expect(result.state.status).to.equal(row.status);
        expect(result.state.carrierStatus).to.equal(carrierStatus);
        expect(result.state.errorCode).to.equal(row.errorCode);
        expect(result.state.updatedAt).to.equal(at);
      });
    });
  }

  describe('retryable codes', () => {
    const table: readonly (readonly [string, boolean])[] = [
      ['1501', false],
      ['1502', true],
      ['1503', true],
      ['1504', false],
      ['1505', true],
      ['1506', true],
      ['1507', false],
      ['1508', false],
      ['1599', false],
      ['1401', false],
      ['', false],
    ];
    for (const [code, retryable] of table) {
      it(`when the error code is "${code}", then retryable is ${retryable}`, () => {
        expect(isRetryable(code)).to.equal(retryable);
      });
    }
  });

  describe('failure code of a "failed" report', () => {
    const table: readonly (readonly [string | null | undefined, string])[] = [
      [undefined, '1501'],
      [null, '1501'],
      ['', '1501'],
      ['1501', '1501'],
      ['1502', '1502'],
      ['1520', '1520'],
      ['1599', '1599'],
      ['1500', '1501'],
      ['1600', '1501'],
      ['1401', '1501'],
      ['15x2', '1501'],
      ['15020', '1501'],
    ];
    for (const [reported, expected] of table) {
      it(`when the connector reports ${JSON.stringify(reported)}, then the code is ${expected}`, () => {
        expect(failureCode('failed', reported)).to.equal(expected);
      });
    }

    it('when another failure status reports its own code, then the fixed code of the status wins', () => {
      expect(failureCode('undelivered', '1520')).to.equal('1502');
      expect(failureCode('rejected', '1520')).to.equal('1504');
      expect(failureCode('expired', '1520')).to.equal('1505');
      expect(failureCode('delivery_unknown', '1520')).to.equal('1506');
      expect(failureCode('partially_delivered', '1520')).to.equal('1507');
    });

    it('when a non-failure status reports a code, then there is no failure code', () => {
      expect(failureCode('processing', '1502')).to.equal(null);
      expect(failureCode('accepted', '1502')).to.equal(null);
      expect(failureCode('enroute', '1502')).to.equal(null);
      expect(failureCode('delivered', '1502')).to.equal(null);
    });
  });

  describe('failure message', () => {
    it('when the carrier gives a message, then it is kept', () => {
      expect(failureMessage('1502', 'Handset switched off')).to.equal('Handset switched off');
    });

    it('when the carrier gives none or only blanks, then the catalogue message of the code is used', () => {
      expect(failureMessage('1502')).to.equal(ERROR_CATALOGUE.UNDELIVERED.message);
      expect(failureMessage('1503', null)).to.equal(ERROR_CATALOGUE.SMS_TIMEOUT.message);
      expect(failureMessage('1504', '   ')).to.equal(ERROR_CATALOGUE.REJECTED.message);
    });

    it('when the code is not in the catalogue, then a generic carrier message is used', () => {
      expect(failureMessage('1588')).to.equal('The carrier reported a failure.');
    });
  });

  describe('isCarrierStatus', () => {
    for (const status of CARRIER_STATUSES) {
      it(`when given "${status}", then it is a carrier status`, () => {
        expect(isCarrierStatus(status)).to.equal(true);
      });
    }
    for (const value of ['unknown', 'none', 'pending', 'sent', 'scheduled', 'DELIVERED', '', null, undefined, 4]) {
      it(`when given ${value === undefined ? 'undefined' : JSON.stringify(value)}, then it is not a carrier status`, () => {
        expect(isCarrierStatus(value)).to.equal(false);
      });
    }
  });
});
