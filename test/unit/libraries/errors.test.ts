import { expect } from 'chai';
import { AppError, failure, isAppError, success, type FieldIssue } from '../../../src/libraries/errors/app-error.js';
import {
  CARRIER_CODE_RANGE,
  entryByCode,
  ERROR_CATALOGUE,
  isCarrierErrorCode,
  type CarrierErrorName,
  type ErrorName,
  type ServiceErrorName,
} from '../../../src/libraries/errors/error-catalogue.js';

/** The service codes with their HTTP status, as the README's error catalogue and docs/api-guide.md give them. */
const SERVICE: [ServiceErrorName, string, number][] = [
  ['INVALID_FIELD_FORMAT', '1110', 400],
  ['IDEMPOTENCY_KEY_REUSED', '1111', 409],
  ['INVALID_STATE', '1120', 409],
  ['INSUFFICIENT_BALANCE', '1202', 402],
  ['NO_WALLET', '1210', 400],
  ['NO_PRICING', '1211', 400],
  ['RATE_LIMIT_EXCEEDED', '1301', 429],
  ['SUSPICIOUS_ACTIVITY', '1302', 403],
  ['INTERNAL_ERROR', '1401', 500],
  ['SERVICE_UNAVAILABLE', '1402', 503],
  ['ROUTE_NOT_FOUND', '1404', 404],
  ['METHOD_NOT_ALLOWED', '1405', 405],
];

/** Carrier-level codes: carried by `sms.failed` events and GET /status, never as an HTTP response. */
const EVENT_ONLY: [CarrierErrorName, string, null][] = [
  ['CARRIER_FAILURE', '1501', null],
  ['UNDELIVERED', '1502', null],
  ['SMS_TIMEOUT', '1503', null],
  ['REJECTED', '1504', null],
  ['EXPIRED', '1505', null],
  ['DELIVERY_UNKNOWN', '1506', null],
  ['PARTIALLY_DELIVERED', '1507', null],
];

const EXPECTED: [ErrorName, string, number | null][] = [...SERVICE, ...EVENT_ONLY];

describe('error catalogue', () => {
  for (const [name, code, httpStatus] of EXPECTED) {
    it(`${name} is code ${code} with ${httpStatus === null ? 'no HTTP status (event only)' : `HTTP ${httpStatus}`}`, () => {
      const entry = ERROR_CATALOGUE[name];
      expect(entry.code).to.equal(code);
      expect(entry.httpStatus).to.equal(httpStatus);
      expect(entry.envelope).to.equal(httpStatus === null ? 'event' : 'service');
      expect(entry.message).to.be.a('string').and.not.equal('');
    });
  }

  it('holds exactly the documented codes, no more', () => {
    expect(Object.keys(ERROR_CATALOGUE).sort()).to.deep.equal(EXPECTED.map(([name]) => name).sort());
  });

  it('every code is a distinct string of four digits', () => {
    const codes = Object.values(ERROR_CATALOGUE).map((e) => e.code);
    for (const code of codes)
      expect(code)
        .to.be.a('string')
        .and.match(/^\d{4}$/);
    expect(new Set(codes).size).to.equal(codes.length);
  });

  describe('entryByCode', () => {
    it('when the code is known, then its entry and name are returned', () => {
      expect(entryByCode('1202')).to.deep.equal({ ...ERROR_CATALOGUE.INSUFFICIENT_BALANCE, name: 'INSUFFICIENT_BALANCE' });
      expect(entryByCode('1503')?.name).to.equal('SMS_TIMEOUT');
    });

    it('when the code is unknown or not in the string form, then there is no entry', () => {
      expect(entryByCode('9999')).to.equal(undefined);
      expect(entryByCode('1110 ')).to.equal(undefined);
      expect(entryByCode('')).to.equal(undefined);
    });
  });

  describe('isCarrierErrorCode', () => {
    it('the carrier range is 1501–1599', () => {
      expect(CARRIER_CODE_RANGE).to.deep.equal({ min: 1501, max: 1599 });
    });

    const cases: [string, boolean][] = [
      ['1500', false],
      ['1501', true],
      ['1507', true],
      ['1550', true],
      ['1599', true],
      ['1600', false],
      ['1110', false],
      ['15011', false],
      ['150', false],
      ['15a1', false],
      ['', false],
      // the number is right but the text is not exactly four digits: an error_code must be sent as written
      [' 1501', false],
      ['1501 ', false],
      ['01501', false],
      ['+1501', false],
      ['1501.0', false],
      ['1.501e3', false],
      ['0x5DD', false],
    ];
    for (const [code, expected] of cases) {
      it(`when the code is ${JSON.stringify(code)}, then it is ${expected ? '' : 'not '}a carrier code`, () => {
        expect(isCarrierErrorCode(code)).to.equal(expected);
      });
    }
  });
});

describe('AppError', () => {
  it('when built from a name, then it carries the catalogue code, status and message', () => {
    const error = new AppError('INSUFFICIENT_BALANCE');
    expect(error).to.be.instanceOf(Error);
    expect(error.name).to.equal('AppError');
    expect(error.errorName).to.equal('INSUFFICIENT_BALANCE');
    expect(error.code).to.equal('1202');
    expect(error.httpStatus).to.equal(402);
    expect(error.message).to.equal(ERROR_CATALOGUE.INSUFFICIENT_BALANCE.message);
    expect(error.details).to.equal(undefined);
    expect(error.retryAfterSeconds).to.equal(undefined);
  });

  for (const [name, code, httpStatus] of SERVICE) {
    it(`when built as ${name}, then it answers ${httpStatus} with code ${code}`, () => {
      const error = new AppError(name);
      expect([error.code, error.httpStatus]).to.deep.equal([code, httpStatus]);
    });
  }

  it('when options are given, then message, retry delay and cause are kept', () => {
    const cause = new Error('bucket empty');
    const error = new AppError('RATE_LIMIT_EXCEEDED', { message: 'slow down', retryAfterSeconds: 12, cause });
    expect(error.message).to.equal('slow down');
    expect(error.retryAfterSeconds).to.equal(12);
    expect(error.cause).to.equal(cause);
    expect(error.code).to.equal('1301');
    expect(error.httpStatus).to.equal(429);
  });

  it('when invalid() is given details, then it is 1110 / 400 with those details', () => {
    const details: FieldIssue[] = [{ field: 'scheduled_dates[2].time', message: 'does not exist', type: 'time.nonexistent' }];
    const error = AppError.invalid(details);
    expect(error.errorName).to.equal('INVALID_FIELD_FORMAT');
    expect(error.code).to.equal('1110');
    expect(error.httpStatus).to.equal(400);
    expect(error.details).to.deep.equal(details);
  });

  for (const status of [413, 415]) {
    it(`when a ${status} body problem is reported, then it stays 1110 with the overridden status ${status}`, () => {
      const details: FieldIssue[] = [{ field: 'body', message: 'too large', type: 'body.invalid' }];
      const error = AppError.invalid(details, { httpStatus: status });
      expect(error.code).to.equal('1110');
      expect(error.httpStatus).to.equal(status);
      expect(error.details).to.deep.equal(details);
    });
  }

  it('isAppError tells an AppError from other values', () => {
    expect(isAppError(new AppError('INTERNAL_ERROR'))).to.equal(true);
    expect(isAppError(new Error('x'))).to.equal(false);
    expect(isAppError({ code: '1110', httpStatus: 400 })).to.equal(false);
    expect(isAppError(null)).to.equal(false);
  });
});

describe("Result (a use case's answer)", () => {
  it('when success wraps a value, then it is ok with that value', () => {
    expect(success({ message_id: 'm-1' })).to.deep.equal({ ok: true, value: { message_id: 'm-1' } });
  });

  it('when failure wraps an AppError, then it is not ok and carries that very error', () => {
    const error = new AppError('INSUFFICIENT_BALANCE');
    const result = failure(error);
    expect(result).to.deep.equal({ ok: false, error });
    expect(result.ok ? null : result.error).to.equal(error);
  });
});
