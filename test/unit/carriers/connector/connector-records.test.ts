import { expect } from 'chai';
import {
  decodeKey,
  encodeKey,
  finalReceiptId,
  multiPartVerdict,
  partErrorMessage,
  reportReceiptId,
  singlePartVerdict,
  withPartReport,
  type PartRecord,
} from '../../../../src/carriers/connector/connector-records.js';
import type { PartState } from '../../../../src/carriers/connector/carrier-link.js';

const part = (
  state: PartState | null,
  carrierError: string | null = null,
  occurredAt: number | null = state === null ? null : 1,
): PartRecord => ({
  state,
  carrier_error: carrierError,
  occurred_at: occurredAt,
});

describe('connector records', () => {
  describe('key encoding', () => {
    const validKey = /^[-/=.\w]+$/;

    it('keeps letters, digits, _ and - and escapes everything else as =XX', () => {
      expect(encodeKey('msg_ab-C9:0:12')).to.equal('msg_ab-C9=3A0=3A12');
      expect(encodeKey('a.b*c>d e=f/g')).to.equal('a=2Eb=2Ac=3Ed=20e=3Df=2Fg');
      expect(encodeKey('é')).to.equal('=C3=A9');
      expect(encodeKey('')).to.equal('=');
    });

    it('gives valid key-value keys without token separators, and decodes back to the same string', () => {
      for (const value of ['msg_3f9c:0:2', '9f1c02aa', '..', 'a.b', '*', '>', 'x y', '日本', '=3A', '', 'a'.repeat(200), '0:1:2/3']) {
        const key = encodeKey(value);
        expect(key, value).to.match(validKey);
        expect(key, value).to.not.include('.');
        expect(decodeKey(key), value).to.equal(value);
      }
    });

    it('never gives two strings the same key', () => {
      const values = ['a:b', 'a=3Ab', 'a.b', 'a=2Eb', 'ab', 'a b', 'a_b', 'a-b'];
      expect(new Set(values.map(encodeKey)).size).to.equal(values.length);
    });

    it('refuses to decode what it did not encode', () => {
      expect(() => decodeKey('a=zz')).to.throw(/not an encoded key/);
    });
  });

  describe('single-part verdict', () => {
    const cases: [PartState, string, boolean][] = [
      ['accepted', 'accepted', false],
      ['enroute', 'enroute', false],
      ['delivered', 'delivered', true],
      ['undelivered', 'undelivered', true],
      ['expired', 'expired', true],
      ['rejected', 'rejected', true],
      ['deleted', 'failed', true],
      ['unknown', 'delivery_unknown', true],
    ];
    for (const [state, status, final] of cases) {
      it(`maps ${state} to ${status}`, () => {
        const verdict = singlePartVerdict(state, null);
        expect(verdict.status).to.equal(status);
        expect(verdict.final).to.equal(final);
      });
    }

    it('names the carrier error in the error message of a failure, and gives none otherwise', () => {
      expect(singlePartVerdict('undelivered', '001').errorMessage).to.equal('Undelivered (carrier error 001)');
      expect(singlePartVerdict('expired', null).errorMessage).to.equal('Expired');
      expect(singlePartVerdict('delivered', '000').errorMessage).to.equal(null);
      expect(singlePartVerdict('enroute', '000').errorMessage).to.equal(null);
      expect(partErrorMessage('deleted', '')).to.equal('Deleted by the carrier');
    });
  });

  describe('multi-part verdict', () => {
    it('is enroute while any part is not final', () => {
      expect(multiPartVerdict([part('delivered'), part(null), part('delivered')])).to.include({ status: 'enroute', final: false });
      expect(multiPartVerdict([part('delivered'), part('enroute')])).to.include({ status: 'enroute', final: false });
      expect(multiPartVerdict([])).to.include({ final: false });
    });

    it('is delivered when every part was', () => {
      expect(multiPartVerdict([part('delivered'), part('delivered'), part('delivered')])).to.deep.equal({
        status: 'delivered',
        errorMessage: null,
        final: true,
      });
    });

    it("is the first failed part's status when none was delivered", () => {
      expect(multiPartVerdict([part('expired'), part('undelivered', '005')])).to.deep.equal({
        status: 'expired',
        errorMessage: 'Expired',
        final: true,
      });
      expect(multiPartVerdict([part('deleted'), part('expired')])).to.include({ status: 'failed' });
      expect(multiPartVerdict([part('unknown'), part('unknown')])).to.include({ status: 'delivery_unknown' });
    });

    it('is partially_delivered when some parts were, naming the first failure', () => {
      expect(multiPartVerdict([part('delivered'), part('undelivered', '027'), part('expired')])).to.deep.equal({
        status: 'partially_delivered',
        errorMessage: '1 of 3 parts delivered; Undelivered (carrier error 027)',
        final: true,
      });
    });
  });

  describe('folding a part report', () => {
    it('fills a missing list with empty parts and sets the part reported', () => {
      expect(withPartReport(undefined, 3, 1, part('enroute'))).to.deep.equal([part(null), part('enroute'), part(null)]);
    });

    it("keeps a part's first final state: later reports cannot undo it", () => {
      const parts = withPartReport(undefined, 2, 0, part('delivered', null, 5));
      expect(withPartReport(parts, 2, 0, part('undelivered', '001', 9))[0]).to.deep.equal(part('delivered', null, 5));
      expect(withPartReport(parts, 2, 0, part('enroute', null, 9))[0]).to.deep.equal(part('delivered', null, 5));
    });

    it('lets a final state replace a non-final one', () => {
      const parts = withPartReport(undefined, 2, 1, part('enroute'));
      expect(withPartReport(parts, 2, 1, part('expired'))[1]?.state).to.equal('expired');
    });

    it('refuses a part outside the dispatch', () => {
      expect(() => withPartReport(undefined, 2, 2, part('delivered'))).to.throw(/out of range/);
    });
  });

  describe('receipt ids', () => {
    it('are stable per report and unique per reference and state', () => {
      expect(reportReceiptId('m:0:1', 'ref9', 'delivered')).to.equal('m:0:1:ref9:delivered');
      expect(reportReceiptId('m:0:1', 'ref9', 'delivered')).to.not.equal(reportReceiptId('m:0:1', 'ref9', 'enroute'));
      expect(finalReceiptId('m:0:1', 'partially_delivered')).to.equal('m:0:1:final:partially_delivered');
    });

    it('stay within 200 characters for long references, still distinct', () => {
      const dispatchId = `${'m'.repeat(64)}:999999:999999`;
      const a = reportReceiptId(dispatchId, 'r'.repeat(150), 'delivered');
      const b = reportReceiptId(dispatchId, `${'r'.repeat(149)}s`, 'delivered');
      expect(a.length).to.be.at.most(200);
      expect(a).to.not.equal(b);
    });
  });
});
