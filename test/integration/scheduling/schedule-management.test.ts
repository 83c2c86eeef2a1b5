import { expect } from 'chai';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { client, dataOf, expectDetail, expectEnvelope, NUMBERS, type ApiClient, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import type { ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';
import { dispatchCounts, playJob, startHeldApi, statusOf, units, type ScheduleData, type StatusData } from './scheduling-fixture.js';

// Monday 2026-01-05 09:00 UTC; the schedules below run in February 2026, at 09:00 Kinshasa time (08:00 UTC)
const NOW = Date.UTC(2026, 0, 5, 9, 0, 0);
/** 08:00 UTC on 2026-02-<day>: the occurrence of that day. */
const feb = (day: number, hour = 8) => Date.UTC(2026, 1, day, hour, 0, 0);
const febIso = (day: number) => new Date(feb(day)).toISOString();

/** Four recipients priced 0.02 + 0.03 + 0.05 + 0.01, two segments: 0.22 per occurrence. */
const TO = [NUMBERS.vodacom, NUMBERS.airtel, NUMBERS.orangeFr, NUMBERS.unpriced];
const MESSAGE = 'y'.repeat(200);
const PER_OCCURRENCE = 0.22;

interface ActionData {
  readonly message_id: string;
  readonly schedule: ScheduleData;
  readonly refunded_amount?: number;
}

/**
 * Where a merchant's money is, read only from the API: funding = balance + reserved + spent, where reserved is the
 * cost of the occurrences still `scheduled` in active or paused schedules and spent the cost of dispatched
 * occurrences (and immediate sends). Skipped and cancelled occurrences were refunded: they are back in the balance.
 */
class MoneyBook {
  private readonly sends: { id: string; totalCost: number }[] = [];

  constructor(
    private readonly http: ApiClient,
    readonly merchant: SeededMerchant,
    private readonly funding: number,
  ) {}

  track(sent: SendData): SendData {
    this.sends.push({ id: sent.message_id, totalCost: units(sent.total_cost) });
    return sent;
  }

  async check(step: string): Promise<{ balance: number; reserved: number; spent: number }> {
    let reserved = 0;
    let spent = 0;
    for (const { id, totalCost } of this.sends) {
      const status = await statusOf(this.http, this.merchant.apiKey, id);
      if (status.schedule === null) {
        spent += totalCost;
        continue;
      }
      const total = status.schedule.occurrences_total;
      expect(totalCost % total, `${step}: ${id} costs a whole number of units per occurrence`).to.equal(0);
      const per = totalCost / total;
      const open = status.schedule.state === 'active' || status.schedule.state === 'paused';
      for (const occurrence of status.occurrences) {
        if (occurrence.status === 'scheduled') {
          expect(open, `${step}: a ${status.schedule.state} schedule has no occurrence left to go`).to.equal(true);
          reserved += per;
        } else if (occurrence.status !== 'skipped' && occurrence.status !== 'cancelled') {
          spent += per;
        }
      }
    }
    const balance = units((await this.http.balanceOf(this.merchant.apiKey)).balance);
    expect(balance + reserved + spent, `${step}: balance ${balance} + reserved ${reserved} + spent ${spent}`).to.equal(units(this.funding));
    return { balance, reserved, spent };
  }
}

describe('cancel, pause and resume of scheduled and recurring sends (exact money)', function () {
  this.timeout(60_000);
  const clock = createManualClock(NOW);
  let fixture: ApiFixture;
  const http = client(() => fixture.api);
  const gateway = () => fixture.node.gateway;

  before(async () => {
    const url = await (await testPostgres()).createDatabase('schedule_management');
    fixture = await startHeldApi(url, clock);
  });
  beforeEach(() => {
    clock.set(NOW);
  });
  after(async () => {
    await fixture.stop();
  });

  /** A merchant of its own, funded with `prepaid` (and `postpaid` when given). */
  async function book(prepaid = '10', postpaid: string | null = '5'): Promise<MoneyBook> {
    const merchant = await seedMerchant(gateway(), { prepaid, ...(postpaid === null ? {} : { postpaid }) });
    return new MoneyBook(http, merchant, Number(prepaid) + Number(postpaid ?? 0));
  }

  /** Daily at 09:00 Kinshasa (08:00 UTC) from 1 February, `days` occurrences. */
  async function recurring(money: MoneyBook, days: number): Promise<string> {
    const rule = {
      start_date: '2026-02-01',
      end_date: `2026-02-${String(days).padStart(2, '0')}`,
      frequency: 'daily',
      interval: 1,
      times: ['09:00'],
    };
    const sent = dataOf<SendData>(
      await http.send(money.merchant.apiKey, { to: TO, message: MESSAGE, sending_type: 'recurring', recurring_schedule: rule }),
      201,
    );
    expect(sent).to.include({ total_messages: 8 * days, total_cost: Number((PER_OCCURRENCE * days).toFixed(2)) });
    return money.track(sent).message_id;
  }

  const play = (money: MoneyBook, id: string) => playJob(gateway(), money.merchant.merchantId, id);

  function schedule(state: ScheduleData['state'], dispatched: number, remaining: number, next: string | null, total: number): ScheduleData {
    return {
      type: 'recurring',
      state,
      next_occurrence_at: next,
      occurrences_total: total,
      occurrences_dispatched: dispatched,
      occurrences_remaining: remaining,
    };
  }

  /**
   * `scheduled`, `skipped`, `cancelled`, or `dispatched` for one that left (whatever its recipients became since:
   * with the clock days ahead, the 24-hour receipt timeout may already have failed them).
   */
  async function occurrenceStatuses(money: MoneyBook, id: string): Promise<string[]> {
    const kept = ['scheduled', 'skipped', 'cancelled'];
    return (await statusOf(http, money.merchant.apiKey, id)).occurrences.map((o) => (kept.includes(o.status) ? o.status : 'dispatched'));
  }

  /** Lets the outbox relay carry what the actors left for later (refunds decided by the occurrence job). */
  async function relayOutbox(): Promise<void> {
    clock.advance(60_000);
    await gateway().relay.drain();
  }

  describe('cancel', () => {
    it('when a recurring send is cancelled after its first occurrence, then the remaining ones are refunded at once and never leave; again refunds 0', async () => {
      const money = await book();
      const id = await recurring(money, 4);
      expect(await money.check('submitted')).to.deep.equal({ balance: units(15 - 0.88), reserved: units(0.88), spent: 0 });

      clock.set(feb(1));
      expect(await play(money, id)).to.deep.equal({ dispatched: [0], next: febIso(2) });
      expect(await money.check('first occurrence')).to.deep.equal({ balance: units(15 - 0.88), reserved: units(0.66), spent: units(0.22) });

      clock.set(feb(1, 12));
      const cancelled = await http.cancel(money.merchant.apiKey, id);
      expect(cancelled.body).to.deep.equal({
        status_code: 200,
        data: { message_id: id, schedule: schedule('cancelled', 1, 0, null, 4), refunded_amount: 0.66 },
      });
      expect(await money.check('cancelled')).to.deep.equal({ balance: units(15 - 0.22), reserved: 0, spent: units(0.22) });

      expect(dataOf<ActionData>(await http.cancel(money.merchant.apiKey, id))).to.deep.equal({
        message_id: id,
        schedule: schedule('cancelled', 1, 0, null, 4),
        refunded_amount: 0,
      });
      expectEnvelope(await http.pause(money.merchant.apiKey, id), 409, '1120');
      expectEnvelope(await http.resume(money.merchant.apiKey, id), 409, '1120');

      // the job still comes at the next occurrence: nothing leaves and it is not rescheduled
      clock.set(feb(2));
      expect(await play(money, id)).to.deep.equal({ dispatched: [], next: null });
      await relayOutbox();
      expect(await dispatchCounts(gateway(), id)).to.deep.equal({ 0: 1 });
      expect(await occurrenceStatuses(money, id)).to.deep.equal(['dispatched', 'cancelled', 'cancelled', 'cancelled']);
      expect((await money.check('after the job')).balance).to.equal(units(15 - 0.22));
    });

    it('when a paused schedule is cancelled, then every occurrence not dispatched is refunded, including one whose time passed while paused', async () => {
      const money = await book();
      const id = await recurring(money, 3);
      expect(dataOf<ActionData>(await http.pause(money.merchant.apiKey, id)).schedule).to.deep.equal(
        schedule('paused', 0, 3, febIso(1), 3),
      );
      clock.set(feb(1));
      expect(await play(money, id)).to.deep.equal({ dispatched: [], next: febIso(2) });
      await money.check('paused over the first occurrence');

      clock.set(feb(1, 10));
      expect(dataOf<ActionData>(await http.cancel(money.merchant.apiKey, id))).to.deep.equal({
        message_id: id,
        schedule: schedule('cancelled', 0, 0, null, 3),
        refunded_amount: 0.66,
      });
      expect(await money.check('cancelled')).to.deep.equal({ balance: units(15), reserved: 0, spent: 0 });
      expect(await dispatchCounts(gateway(), id)).to.deep.equal({});
    });

    it('when a dispatch_due and a cancel race at an occurrence, then either it left and is not refunded or it was cancelled and refunded, and the money adds up', async () => {
      const money = await book('100', null);
      const ids: string[] = [];
      for (let i = 0; i < 16; i++) ids.push(await recurring(money, 3));
      await money.check('submitted');

      clock.set(feb(1));
      const outcomes = await Promise.all(
        ids.map(async (id, i) => {
          // a DELETE /cancel needs tens of milliseconds to reach the actor (authentication, rate limit, ownership
          // lookup), the job's ask none: the job starts 0 to 225 ms after the cancel, so that each side wins sometimes
          const [job, cancel] = await Promise.all([
            new Promise((resolve) => setTimeout(resolve, 15 * i)).then(() => play(money, id)),
            http.cancel(money.merchant.apiKey, id).then((result) => dataOf<ActionData>(result)),
          ]);
          const counts = await dispatchCounts(gateway(), id);
          const left = counts[0] === 1;
          expect(counts, id).to.deep.equal(left ? { 0: 1 } : {});
          expect(job, id).to.deep.equal(left ? { dispatched: [0], next: febIso(2) } : { dispatched: [], next: null });
          expect(cancel.refunded_amount, id).to.equal(left ? 0.44 : 0.66);
          expect(cancel.schedule, id).to.deep.equal(schedule('cancelled', left ? 1 : 0, 0, null, 3));
          expect(await occurrenceStatuses(money, id), id).to.deep.equal([left ? 'dispatched' : 'cancelled', 'cancelled', 'cancelled']);
          return left;
        }),
      );
      const dispatched = outcomes.filter(Boolean).length;
      const { balance, spent } = await money.check('after the races');
      expect(spent).to.equal(units(PER_OCCURRENCE) * dispatched);
      expect(balance).to.equal(units(100) - units(PER_OCCURRENCE) * dispatched);
    });
  });

  describe('pause and resume', () => {
    it('when a schedule is paused twice, its occurrences pass, and it is resumed twice, then the passed ones are skipped and refunded (postpaid first) and the later ones go', async () => {
      // 1.10 is charged 0.50 from prepaid and 0.60 from postpaid
      const money = await book('0.5', '5');
      const id = await recurring(money, 5);
      clock.set(feb(1));
      expect(await play(money, id)).to.deep.equal({ dispatched: [0], next: febIso(2) });

      clock.set(feb(1, 10));
      const paused = { status_code: 200, data: { message_id: id, schedule: schedule('paused', 1, 4, febIso(2), 5) } };
      expect((await http.pause(money.merchant.apiKey, id)).body).to.deep.equal(paused);
      expect((await http.pause(money.merchant.apiKey, id)).body, 'pausing a paused schedule').to.deep.equal(paused);
      expect(await money.check('paused')).to.deep.equal({ balance: units(5.5 - 1.1), reserved: units(0.88), spent: units(0.22) });

      // the job keeps coming while paused: nothing leaves, the cost stays reserved
      clock.set(feb(2));
      expect(await play(money, id)).to.deep.equal({ dispatched: [], next: febIso(3) });
      clock.set(feb(3));
      expect(await play(money, id)).to.deep.equal({ dispatched: [], next: febIso(4) });
      expect(await money.check('paused over two occurrences')).to.deep.equal({
        balance: units(5.5 - 1.1),
        reserved: units(0.88),
        spent: units(0.22),
      });

      clock.set(feb(3, 12));
      expect(dataOf<ActionData>(await http.resume(money.merchant.apiKey, id))).to.deep.equal({
        message_id: id,
        schedule: schedule('active', 1, 2, febIso(4), 5),
        refunded_amount: 0.44,
      });
      expect(await occurrenceStatuses(money, id)).to.deep.equal(['dispatched', 'skipped', 'skipped', 'scheduled', 'scheduled']);
      expect(await money.check('resumed')).to.deep.equal({ balance: units(5.5 - 0.66), reserved: units(0.44), spent: units(0.22) });
      expect(await http.balanceOf(money.merchant.apiKey)).to.deep.include({ sms_wallet_balance: 0, postpaid_wallet_balance: 4.84 });
      expect(dataOf<ActionData>(await http.resume(money.merchant.apiKey, id)), 'resuming an active schedule').to.deep.equal({
        message_id: id,
        schedule: schedule('active', 1, 2, febIso(4), 5),
        refunded_amount: 0,
      });

      clock.set(feb(4));
      expect(await play(money, id)).to.deep.equal({ dispatched: [3], next: febIso(5) });
      clock.set(feb(5));
      expect(await play(money, id)).to.deep.equal({ dispatched: [4], next: null });
      await relayOutbox();
      expect(await dispatchCounts(gateway(), id)).to.deep.equal({ 0: 1, 3: 1, 4: 1 });
      expect((await statusOf(http, money.merchant.apiKey, id)).schedule).to.deep.equal(schedule('completed', 3, 0, null, 5));
      expect(await money.check('completed')).to.deep.equal({ balance: units(5.5 - 0.66), reserved: 0, spent: units(0.66) });
    });

    it('when a schedule is still paused as its last occurrence passes, then the next run of the job completes it and refunds every skipped occurrence', async () => {
      const money = await book();
      const id = await recurring(money, 3);
      clock.set(feb(1));
      await play(money, id);
      clock.set(feb(1, 9));
      await http.pause(money.merchant.apiKey, id);

      clock.set(feb(2, 9));
      expect(await play(money, id), 'one occurrence is still to come').to.deep.equal({ dispatched: [], next: febIso(3) });
      expect((await statusOf(http, money.merchant.apiKey, id)).schedule).to.deep.equal(schedule('paused', 1, 2, febIso(2), 3));

      clock.set(feb(3));
      expect(await play(money, id), 'none is left to come').to.deep.equal({ dispatched: [], next: null });
      expect((await statusOf(http, money.merchant.apiKey, id)).schedule).to.deep.equal(schedule('completed', 1, 0, null, 3));
      expect(await occurrenceStatuses(money, id)).to.deep.equal(['dispatched', 'skipped', 'skipped']);
      // the refund decided by the job reaches the wallet through the outbox
      await relayOutbox();
      expect(await money.check('completed while paused')).to.deep.equal({ balance: units(15 - 0.22), reserved: 0, spent: units(0.22) });

      expectEnvelope(await http.resume(money.merchant.apiKey, id), 409, '1120');
      expectEnvelope(await http.pause(money.merchant.apiKey, id), 409, '1120');
      expect(dataOf<ActionData>(await http.cancel(money.merchant.apiKey, id))).to.deep.equal({
        message_id: id,
        schedule: schedule('completed', 1, 0, null, 3),
        refunded_amount: 0,
      });
      // a repeated run of the job, and of the relay, refunds nothing twice
      expect(await play(money, id)).to.deep.equal({ dispatched: [], next: null });
      await relayOutbox();
      expect((await money.check('after repeats')).balance).to.equal(units(15 - 0.22));
    });

    it('when a schedule is resumed after all its remaining occurrences passed, then the resume refunds them all and completes it; the job then changes nothing', async () => {
      const money = await book();
      const id = await recurring(money, 3);
      await http.pause(money.merchant.apiKey, id);

      clock.set(feb(3, 9));
      expect(dataOf<ActionData>(await http.resume(money.merchant.apiKey, id))).to.deep.equal({
        message_id: id,
        schedule: schedule('completed', 0, 0, null, 3),
        refunded_amount: 0.66,
      });
      expect(await money.check('resumed too late')).to.deep.equal({ balance: units(15), reserved: 0, spent: 0 });
      // the same refund also sits in the outbox (crash safety): carrying it out again refunds nothing more
      expect(await play(money, id)).to.deep.equal({ dispatched: [], next: null });
      await relayOutbox();
      expect(await money.check('after the relay')).to.deep.equal({ balance: units(15), reserved: 0, spent: 0 });
      expect(await dispatchCounts(gateway(), id)).to.deep.equal({});
    });

    it('when a dispatch_due and a pause race at an occurrence, then a resume later refunds it exactly when it did not leave', async () => {
      const money = await book('100', null);
      const ids: string[] = [];
      for (let i = 0; i < 8; i++) ids.push(await recurring(money, 3));
      clock.set(feb(1));
      const left = await Promise.all(
        ids.map(async (id, i) => {
          // as for cancel: the job starts 0 to 210 ms after the POST /pause
          const [job] = await Promise.all([
            new Promise((resolve) => setTimeout(resolve, 30 * i)).then(() => play(money, id)),
            http.pause(money.merchant.apiKey, id).then((result) => dataOf<ActionData>(result)),
          ]);
          return job.dispatched.length === 1;
        }),
      );
      await money.check('paused at the instant');
      clock.set(feb(1, 10));
      for (const [i, id] of ids.entries()) {
        const resumed = dataOf<ActionData>(await http.resume(money.merchant.apiKey, id));
        expect(resumed.refunded_amount, id).to.equal(left[i] ? 0 : 0.22);
        expect(await dispatchCounts(gateway(), id), id).to.deep.equal(left[i] ? { 0: 1 } : {});
      }
      const dispatched = left.filter(Boolean).length;
      expect(await money.check('resumed')).to.deep.equal({
        balance: units(100) - units(0.66) * ids.length + units(PER_OCCURRENCE) * (ids.length - dispatched),
        reserved: units(0.44) * ids.length,
        spent: units(PER_OCCURRENCE) * dispatched,
      });
    });
  });

  describe('what cannot be managed', () => {
    it('when the send is immediate, then cancel, pause and resume are 409/1120 and the money does not move', async () => {
      const money = await book();
      const sent = money.track(dataOf<SendData>(await http.send(money.merchant.apiKey, { to: TO, message: MESSAGE }), 201));
      for (const result of [
        await http.cancel(money.merchant.apiKey, sent.message_id),
        await http.pause(money.merchant.apiKey, sent.message_id),
        await http.resume(money.merchant.apiKey, sent.message_id),
      ]) {
        expectEnvelope(result, 409, '1120');
      }
      expect(await money.check('immediate')).to.deep.equal({ balance: units(15 - 0.22), reserved: 0, spent: units(0.22) });
    });

    it('when a schedule completed by dispatching everything, then cancel is 200 refunding 0 and pause/resume are 409/1120', async () => {
      const money = await book();
      const id = await recurring(money, 2);
      clock.set(feb(2));
      expect(await play(money, id)).to.deep.equal({ dispatched: [0, 1], next: null });
      expectEnvelope(await http.pause(money.merchant.apiKey, id), 409, '1120');
      expectEnvelope(await http.resume(money.merchant.apiKey, id), 409, '1120');
      expect(dataOf<ActionData>(await http.cancel(money.merchant.apiKey, id))).to.deep.equal({
        message_id: id,
        schedule: schedule('completed', 2, 0, null, 2),
        refunded_amount: 0,
      });
      await relayOutbox();
      expect(await money.check('completed')).to.deep.equal({ balance: units(15 - 0.44), reserved: 0, spent: units(0.44) });
    });

    it("when the id is unknown or another merchant's, then cancel, pause and resume are 404 {detail} exactly as GET /status, and nothing changes", async () => {
      const money = await book();
      const other = await book();
      const id = await recurring(money, 2);
      for (const [key, target] of [
        [other.merchant.apiKey, id],
        [money.merchant.apiKey, 'msg_00000000000000000000000000000000'],
        [money.merchant.apiKey, 'not a valid id'],
      ] as const) {
        const status = await http.status(key, target);
        const detail = expectDetail(status, 404);
        for (const result of [await http.cancel(key, target), await http.pause(key, target), await http.resume(key, target)]) {
          expect(expectDetail(result, 404)).to.equal(detail);
          expect(result.body).to.deep.equal(status.body);
        }
      }
      expect((await statusOf(http, money.merchant.apiKey, id)).schedule).to.deep.equal(schedule('active', 0, 2, febIso(1), 2));
      await money.check('untouched');
      await other.check('untouched');
    });
  });
  describe('what GET /status counts once occurrences will never go', () => {
    type Counted = Pick<StatusData, 'delivered' | 'failed' | 'pending' | 'cancelled' | 'skipped'>;
    const split = (c: Counted) => [c.delivered, c.failed, c.pending, c.cancelled, c.skipped];
    const occurrencesOf = (status: StatusData) => status.occurrences.map((o) => [o.status, ...split(o)]);

    it('when a schedule is cancelled before its first occurrence, then no recipient and no occurrence stays pending, even after their times', async () => {
      const money = await book();
      const id = await recurring(money, 2);
      expect(split(await statusOf(http, money.merchant.apiKey, id))).to.deep.equal([0, 0, 4, 0, 0]);

      clock.set(NOW + 60_000);
      await http.cancel(money.merchant.apiKey, id);
      clock.set(feb(3));
      expect(await play(money, id)).to.deep.equal({ dispatched: [], next: null });

      const status = await statusOf(http, money.merchant.apiKey, id);
      expect(split(status)).to.deep.equal([0, 0, 0, 4, 0]);
      expect(status.recipients.map((r) => r.status)).to.deep.equal(['cancelled', 'cancelled', 'cancelled', 'cancelled']);
      expect(occurrencesOf(status)).to.deep.equal([
        ['cancelled', 0, 0, 0, 4, 0],
        ['cancelled', 0, 0, 0, 4, 0],
      ]);
    });

    it('when a schedule is cancelled after its first occurrence, then the cancelled ones count as cancelled, not pending', async () => {
      const money = await book();
      const id = await recurring(money, 3);
      clock.set(feb(1));
      await play(money, id);
      clock.set(feb(1, 12));

      await http.cancel(money.merchant.apiKey, id);

      const status = await statusOf(http, money.merchant.apiKey, id);
      expect(status.recipients).to.have.length(4);
      expect(occurrencesOf(status).slice(1)).to.deep.equal([
        ['cancelled', 0, 0, 0, 4, 0],
        ['cancelled', 0, 0, 0, 4, 0],
      ]);
      expect(status.cancelled + status.skipped, 'the shown recipients are those of the occurrence that went').to.equal(0);
    });

    it('when an occurrence passes while paused and the schedule resumes, then it counts as skipped; when all passed, every recipient is skipped', async () => {
      const money = await book();
      const id = await recurring(money, 3);
      await http.pause(money.merchant.apiKey, id);
      clock.set(feb(1, 9));
      await http.resume(money.merchant.apiKey, id);

      const resumed = await statusOf(http, money.merchant.apiKey, id);
      expect(occurrencesOf(resumed)).to.deep.equal([
        ['skipped', 0, 0, 0, 0, 4],
        ['scheduled', 0, 0, 4, 0, 0],
        ['scheduled', 0, 0, 4, 0, 0],
      ]);
      expect(split(resumed), 'two occurrences may still go').to.deep.equal([0, 0, 4, 0, 0]);

      await http.pause(money.merchant.apiKey, id);
      clock.set(feb(3, 9));
      await http.resume(money.merchant.apiKey, id);

      const completed = await statusOf(http, money.merchant.apiKey, id);
      expect(completed.schedule?.state).to.equal('completed');
      expect(split(completed)).to.deep.equal([0, 0, 0, 0, 4]);
      expect(completed.recipients.map((r) => r.status)).to.deep.equal(['skipped', 'skipped', 'skipped', 'skipped']);
      expect(occurrencesOf(completed)).to.deep.equal([
        ['skipped', 0, 0, 0, 0, 4],
        ['skipped', 0, 0, 0, 0, 4],
        ['skipped', 0, 0, 0, 0, 4],
      ]);
    });
  });
});
