import { expect } from 'chai';
import { hasIdempotencyKey, isCancelled, kindOf, nextMinute, recipientsOf, terminalTypeOf } from '../../../scripts/chaos/chaos-load.js';
import { parseFaultList, FAULT_NAMES } from '../../../scripts/chaos/chaos-profiles.js';

describe('chaos load', () => {
  it('mixes immediate, multi-recipient and scheduled sends, half the scheduled ones cancelled, half of each kind with a key', () => {
    const forty = Array.from({ length: 40 }, (_, i) => i);
    expect(forty.filter((i) => kindOf(i) === 'multi')).to.deep.equal([3, 7, 13, 17, 23, 27, 33, 37]);
    expect(forty.filter((i) => kindOf(i) === 'scheduled')).to.deep.equal([5, 15, 25, 35]);
    expect(forty.filter(isCancelled)).to.deep.equal([5, 15]);
    expect(forty.filter(hasIdempotencyKey)).to.have.length(20);
    for (const kind of ['immediate', 'multi', 'scheduled'] as const) {
      const ofKind = forty.filter((i) => kindOf(i) === kind);
      expect(ofKind.filter(hasIdempotencyKey), kind).to.have.length(ofKind.length / 2);
    }
    // cancelled ones too, and those kept
    expect(forty.filter((i) => isCancelled(i) && hasIdempotencyKey(i))).to.have.length(1);
    expect(forty.filter((i) => kindOf(i) === 'scheduled' && !isCancelled(i) && hasIdempotencyKey(i))).to.have.length(1);
  });

  it('gives each send distinct numbers, one per recipient, 2 or 3 for a multi-recipient send', () => {
    const all = Array.from({ length: 200 }, (_, i) => recipientsOf(i, kindOf(i)));
    expect(all.map((r) => r.length)).to.include.members([1, 2, 3]);
    const flat = all.flat();
    expect(new Set(flat).size).to.equal(flat.length);
    expect(flat.every((n) => /^\+24381\d{7}$/.test(n))).to.equal(true);
    expect(terminalTypeOf('+243810000000')).to.equal('sms.delivered');
    expect(terminalTypeOf('+243810000091')).to.equal('sms.failed');
  });

  it("schedules for the first whole minute at least the lead ahead, in the merchant's local time", () => {
    const now = Date.parse('2026-11-25T19:43:56.000Z');
    // Kinshasa is UTC+1
    expect(nextMinute(now, 5_000, 'Africa/Kinshasa')).to.deep.equal({
      instant: Date.parse('2026-11-25T19:45:00.000Z'),
      date: '2026-11-25',
      time: '20:45',
    });
    expect(nextMinute(now, 3_000, 'Africa/Kinshasa')).to.deep.equal({
      instant: Date.parse('2026-11-25T19:44:00.000Z'),
      date: '2026-11-25',
      time: '20:44',
    });
    expect(nextMinute(Date.parse('2026-11-25T22:59:30.000Z'), 60_000, 'Africa/Kinshasa')).to.deep.equal({
      instant: Date.parse('2026-11-25T23:01:00.000Z'),
      date: '2026-11-26',
      time: '00:01',
    });
  });

  it('reads a fault list, refusing names it does not know', () => {
    expect(parseFaultList('nats-kill, postgres-restart')).to.deep.equal(['nats-kill', 'postgres-restart']);
    expect(parseFaultList(FAULT_NAMES.join(','))).to.deep.equal([...FAULT_NAMES]);
    expect(() => parseFaultList('nats-kill,disk-full')).to.throw(/unknown fault disk-full/);
  });
});
