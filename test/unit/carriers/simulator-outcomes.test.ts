import { readFileSync } from 'node:fs';
import { expect } from 'chai';
import fc from 'fast-check';
import { CARRIER_STATUSES, type CarrierStatus } from '../../../src/carriers/carrier-outcomes.js';
import { outcomeFor, planFor, SIMULATOR_ENDINGS, type PlannedReceipt } from '../../../src/carriers/simulator/simulator-outcomes.js';

const DELAYS = { stepDelayMs: 10, slowDelayMs: 1_000 };
const S = DELAYS.stepDelayMs;

/** A valid E.164 number ending in the given digits. */
const numberEnding = (digits: string): string => `+2438123456${digits}`;

type Row = Pick<PlannedReceipt, 'status' | 'afterMs' | 'occurredAfterMs' | 'receiptNumber' | 'errorCode' | 'errorMessage'>;
const r = (status: CarrierStatus, afterMs: number, receiptNumber: number, extra: Partial<Row> = {}): Row => ({
  status,
  afterMs,
  occurredAfterMs: afterMs,
  receiptNumber,
  ...extra,
});

// The table of the brief and docs/carrier-protocol.md, with stepDelayMs = 10 and slowDelayMs = 1000.
const EXPECTED: Readonly<Record<string, readonly Row[]>> = {
  '90': [r('processing', 0, 0), r('accepted', S, 1), r('undelivered', 2 * S, 2)],
  '91': [r('processing', 0, 0), r('rejected', S, 1)],
  '92': [r('processing', 0, 0), r('accepted', S, 1), r('enroute', 2 * S, 2), r('expired', 3 * S, 3)],
  '93': [r('processing', 0, 0), r('accepted', S, 1), r('delivery_unknown', 2 * S, 2)],
  '94': [r('processing', 0, 0), r('accepted', S, 1), r('partially_delivered', 2 * S, 2)],
  '95': [r('processing', 0, 0), r('failed', S, 1, { errorCode: '1502', errorMessage: 'Subscriber unreachable' })],
  '96': [r('processing', 0, 0), r('failed', S, 1)],
  '97': [r('processing', 0, 0), r('accepted', S, 1)],
  '98': [r('processing', 0, 0), r('accepted', S, 1), r('enroute', 2 * S, 2), r('delivered', 3 * S + 1_000, 3)],
  '99': [
    r('delivered', 3 * S, 0, { occurredAfterMs: 3 * S }),
    r('enroute', 4 * S, 1, { occurredAfterMs: 2 * S }),
    r('accepted', 5 * S, 2, { occurredAfterMs: S }),
    r('processing', 6 * S, 3, { occurredAfterMs: 0 }),
  ],
  '89': [
    r('processing', 0, 0),
    r('processing', 0, 0),
    r('processing', 0, 2),
    r('accepted', S, 3),
    r('accepted', S, 3),
    r('accepted', S, 5),
    r('enroute', 2 * S, 6),
    r('enroute', 2 * S, 6),
    r('enroute', 2 * S, 8),
    r('delivered', 3 * S, 9),
    r('delivered', 3 * S, 9),
    r('delivered', 3 * S, 11),
  ],
};
const DELIVERED_NORMALLY: readonly Row[] = [r('processing', 0, 0), r('accepted', S, 1), r('enroute', 2 * S, 2), r('delivered', 3 * S, 3)];

const strip = (plan: readonly PlannedReceipt[]): Row[] => plan.map((p) => ({ ...p }));

describe('simulator outcomes', () => {
  for (const [ending, expected] of Object.entries(EXPECTED)) {
    it(`when a number ends in ${ending}, then the simulator plans ${expected.map((row) => row.status).join(', ')}`, () => {
      expect(strip(planFor({ to: numberEnding(ending) }, DELAYS))).to.deep.equal(expected);
    });
  }

  // the limits of the special range: 88 and 00 are ordinary, 89 and 99 are not
  for (const ending of ['00', '01', '09', '10', '19', '42', '80', '88']) {
    it(`when a number ends in ${ending}, then it is delivered normally, one step apart`, () => {
      expect(strip(planFor({ to: numberEnding(ending) }, DELAYS))).to.deep.equal(DELIVERED_NORMALLY);
    });
  }

  it('when digits before the last two look special, then only the last two count (…909 is ordinary, …990 is not)', () => {
    expect(outcomeFor('+243812345909')).to.equal('delivered');
    expect(outcomeFor('+243812349900')).to.equal('delivered');
    expect(outcomeFor('+243812345990')).to.equal('undelivered');
    expect(outcomeFor('+243812340099')).to.equal('out_of_order');
  });

  it('when the table is read, then special endings are exactly 89 to 99', () => {
    expect(Object.keys(SIMULATOR_ENDINGS).sort()).to.deep.equal(['89', '90', '91', '92', '93', '94', '95', '96', '97', '98', '99']);
  });

  it('when every ending is planned, then every carrier status is reported by some outcome', () => {
    const reported = new Set<CarrierStatus>();
    for (let n = 0; n < 100; n++) {
      for (const p of planFor({ to: numberEnding(String(n).padStart(2, '0')) }, DELAYS)) reported.add(p.status);
    }
    expect([...reported].sort()).to.deep.equal([...CARRIER_STATUSES].sort());
  });

  it('when the delays are 0, then every receipt is due at once and the order is unchanged', () => {
    const plan = planFor({ to: numberEnding('99') }, { stepDelayMs: 0, slowDelayMs: 0 });
    expect(plan.map((p) => [p.status, p.afterMs])).to.deep.equal([
      ['delivered', 0],
      ['enroute', 0],
      ['accepted', 0],
      ['processing', 0],
    ]);
  });

  it('for any number and delays, then receipts are due in plan order, never before their event, and ids only repeat back to back', () => {
    fc.assert(
      fc.property(
        fc.stringMatching(/^\+[1-9][0-9]{6,16}$/),
        fc.integer({ min: 0, max: 10_000 }),
        fc.integer({ min: 0, max: 100_000 }),
        (to, stepDelayMs, slowDelayMs) => {
          const plan = planFor({ to }, { stepDelayMs, slowDelayMs });
          expect(plan.length).to.be.greaterThan(0);
          plan.forEach((p, i) => {
            expect(p.afterMs).to.be.at.least(p.occurredAfterMs);
            if (i > 0) expect(p.afterMs).to.be.at.least(plan[i - 1]!.afterMs);
            // an id is either new (its own position) or repeats the previous receipt's
            expect(p.receiptNumber === i || p.receiptNumber === plan[i - 1]?.receiptNumber).to.equal(true);
            expect(p.errorCode === undefined || p.status === 'failed').to.equal(true);
          });
        },
      ),
    );
  });

  describe('docs/carrier-protocol.md', () => {
    const DOC = readFileSync(new URL('../../../docs/carrier-protocol.md', import.meta.url), 'utf8');
    const rowOf = (label: string): string | undefined => DOC.split('\n').find((line) => line.startsWith(`| ${label} |`));
    /** The statuses in the order they arrive, exact repeats collapsed. */
    const arrivalOrder = (to: string): string =>
      planFor({ to }, DELAYS)
        .map((p) => p.status)
        .filter((status, i, all) => status !== all[i - 1])
        .join(' → ');

    for (const ending of Object.keys(SIMULATOR_ENDINGS)) {
      it(`documents ending ${ending} with the receipts the simulator sends`, () => {
        const row = rowOf(ending);
        expect(row, `row for ${ending}`).to.be.a('string');
        expect(row).to.contain(arrivalOrder(numberEnding(ending)));
      });
    }

    it('documents every other ending as delivered normally', () => {
      expect(rowOf('any other')).to.contain(arrivalOrder(numberEnding('42')));
    });
  });
});
