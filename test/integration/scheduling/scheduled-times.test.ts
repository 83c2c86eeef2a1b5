import { expect } from 'chai';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { client, dataOf, expectFieldError, NUMBERS, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import type { ApiFixture } from '../../helpers/http-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';
import { dispatchCounts, iso, jobOf, playJob, startHeldApi, statusOf, units } from './scheduling-fixture.js';

// Monday 2026-01-05 09:00 UTC (10:00 in Kinshasa, 10:00 in Paris, 04:00 in New York): before both 2026 DST seasons.
const NOW = Date.UTC(2026, 0, 5, 9, 0, 0);
const DAY = 86_400_000;
const KINSHASA = 'Africa/Kinshasa';
const PARIS = 'Europe/Paris';
const NEW_YORK = 'America/New_York';
type Zone = typeof KINSHASA | typeof PARIS | typeof NEW_YORK;

/** 161 GSM characters: 2 segments. */
const TWO_SEGMENTS = 'x'.repeat(161);
const ms = (text: string): number => Date.parse(text);

describe('scheduled and recurring sends: occurrence instants in the merchant time zone', function () {
  this.timeout(60_000);
  const clock = createManualClock(NOW);
  let fixture: ApiFixture;
  const merchants = {} as Record<Zone, SeededMerchant>;
  const http = client(() => fixture.api);
  const gateway = () => fixture.node.gateway;

  before(async () => {
    const url = await (await testPostgres()).createDatabase('scheduled_times');
    fixture = await startHeldApi(url, clock);
    for (const zone of [KINSHASA, PARIS, NEW_YORK] as const) {
      merchants[zone] = await seedMerchant(gateway(), { name: zone, timezone: zone, prepaid: '100000' });
    }
  });
  beforeEach(() => {
    // every test submits at NOW; the occurrence instants are later in 2026 (or beyond)
    clock.set(NOW);
  });
  after(async () => {
    await fixture.stop();
  });

  async function send(zone: Zone, body: Record<string, unknown>): Promise<SendData> {
    return dataOf<SendData>(await http.send(merchants[zone].apiKey, { to: [NUMBERS.vodacom], message: 'on time', ...body }), 201);
  }

  const scheduled = (zone: Zone, dates: readonly { date: string; time: string }[], extra: Record<string, unknown> = {}) =>
    send(zone, { sending_type: 'scheduled', scheduled_dates: dates, ...extra });

  /**
   * The job's behaviour around one occurrence: at 1 ms before its instant nothing leaves; at the instant exactly that
   * occurrence leaves and the job is told when to come back.
   */
  async function expectDueExactlyAt(zone: Zone, messageId: string, index: number, instant: string, next: string | null): Promise<void> {
    const { merchantId } = merchants[zone];
    clock.set(ms(instant) - 1);
    expect(await playJob(gateway(), merchantId, messageId), `1 ms before occurrence ${index}`).to.deep.equal({
      dispatched: [],
      next: instant,
    });
    expect((await dispatchCounts(gateway(), messageId))[index], `occurrence ${index} before its instant`).to.equal(undefined);
    clock.set(ms(instant));
    expect(await playJob(gateway(), merchantId, messageId), `at occurrence ${index}`).to.deep.equal({ dispatched: [index], next });
    expect((await dispatchCounts(gateway(), messageId))[index], `occurrence ${index} at its instant`).to.equal(1);
  }

  describe('scheduled_dates', () => {
    const CASES: { zone: Zone; date: string; time: string; utc: string; why: string }[] = [
      {
        zone: KINSHASA,
        date: '2026-03-29',
        time: '02:30',
        utc: '2026-03-29T01:30:00.000Z',
        why: 'Kinshasa keeps UTC+1 on the night Paris springs forward',
      },
      {
        zone: KINSHASA,
        date: '2026-10-25',
        time: '02:30',
        utc: '2026-10-25T01:30:00.000Z',
        why: 'Kinshasa keeps UTC+1 on the night Paris falls back',
      },
      {
        zone: PARIS,
        date: '2026-03-29',
        time: '01:59',
        utc: '2026-03-29T00:59:00.000Z',
        why: 'the last winter minute (CET, UTC+1) before the gap',
      },
      {
        zone: PARIS,
        date: '2026-03-29',
        time: '03:00',
        utc: '2026-03-29T01:00:00.000Z',
        why: 'the first summer minute (CEST, UTC+2) after the gap',
      },
      {
        zone: PARIS,
        date: '2026-10-25',
        time: '02:30',
        utc: '2026-10-25T00:30:00.000Z',
        why: 'the fall-back hour happens twice: the first (CEST) is taken',
      },
      {
        zone: PARIS,
        date: '2026-10-25',
        time: '03:00',
        utc: '2026-10-25T02:00:00.000Z',
        why: 'back on CET (UTC+1) after the fall-back hour',
      },
      {
        zone: NEW_YORK,
        date: '2026-03-08',
        time: '01:59',
        utc: '2026-03-08T06:59:00.000Z',
        why: 'the last EST (UTC−5) minute before the gap',
      },
      {
        zone: NEW_YORK,
        date: '2026-03-08',
        time: '03:00',
        utc: '2026-03-08T07:00:00.000Z',
        why: 'the first EDT (UTC−4) minute after the gap',
      },
      {
        zone: NEW_YORK,
        date: '2026-11-01',
        time: '01:30',
        utc: '2026-11-01T05:30:00.000Z',
        why: 'the fall-back hour happens twice: the first (EDT) is taken',
      },
      {
        zone: NEW_YORK,
        date: '2026-11-01',
        time: '02:00',
        utc: '2026-11-01T07:00:00.000Z',
        why: 'back on EST (UTC−5) after the fall-back hour',
      },
    ];
    for (const { zone, date, time, utc, why } of CASES) {
      it(`when ${date} ${time} is scheduled in ${zone}, then the Agenda job runs at ${utc} and the occurrence leaves exactly then (${why})`, async () => {
        const sent = await scheduled(zone, [{ date, time }]);
        const id = sent.message_id;

        expect(sent).to.deep.equal({
          message_id: id,
          total_recipients: 1,
          total_messages: 1,
          total_cost: 0.02,
          currency: 'USD',
          status: 'pending',
        });
        expect((await jobOf(gateway(), id)).nextRunAt).to.equal(utc);
        const before = await statusOf(http, merchants[zone].apiKey, id);
        expect(before.occurrences.map((o) => o.scheduled_at)).to.deep.equal([utc]);
        expect(before.schedule).to.deep.include({ state: 'active', next_occurrence_at: utc, occurrences_total: 1 });
        await expectDueExactlyAt(zone, id, 0, utc, null);
        expect((await statusOf(http, merchants[zone].apiKey, id)).schedule).to.deep.include({
          state: 'completed',
          occurrences_dispatched: 1,
          next_occurrence_at: null,
        });
      });
    }

    const GAPS: { zone: Zone; date: string; time: string }[] = [
      { zone: PARIS, date: '2026-03-29', time: '02:00' },
      { zone: PARIS, date: '2026-03-29', time: '02:30' },
      { zone: PARIS, date: '2026-03-29', time: '02:59' },
      { zone: NEW_YORK, date: '2026-03-08', time: '02:00' },
      { zone: NEW_YORK, date: '2026-03-08', time: '02:59' },
    ];
    for (const { zone, date, time } of GAPS) {
      it(`when ${date} ${time} (inside the spring-forward gap of ${zone}) is scheduled, then POST /send is 400/1110 naming its time and nothing is charged`, async () => {
        const { apiKey } = merchants[zone];
        const before = await http.balanceOf(apiKey);
        const result = await http.send(apiKey, {
          to: [NUMBERS.vodacom],
          message: 'gap',
          sending_type: 'scheduled',
          scheduled_dates: [
            { date: '2026-03-01', time: '12:00' },
            { date, time },
          ],
        });
        const details = expectFieldError(result, 'scheduled_dates[1].time');
        expect(details.map((d) => d.field)).to.deep.equal(['scheduled_dates[1].time']);
        expect(await http.balanceOf(apiKey)).to.deep.equal(before);
      });
    }

    it('when the same time exists in Kinshasa, then the Paris gap does not concern it', async () => {
      const sent = await scheduled(KINSHASA, [{ date: '2026-03-29', time: '02:00' }]);
      expect((await jobOf(gateway(), sent.message_id)).nextRunAt).to.equal('2026-03-29T01:00:00.000Z');
    });

    it('when a scheduled send has several dates across both Paris DST changes, then 201 says pending, GET /status says scheduled until the first dispatch, then shows the latest occurrence', async () => {
      const { apiKey, merchantId } = merchants[PARIS];
      // given out of order: occurrence_index follows time
      const sent = await scheduled(
        PARIS,
        [
          { date: '2026-10-25', time: '02:30' },
          { date: '2026-03-28', time: '12:00' },
          { date: '2026-03-29', time: '12:00' },
        ],
        { to: [NUMBERS.vodacom, NUMBERS.airtel] },
      );
      const id = sent.message_id;
      const instants = ['2026-03-28T11:00:00.000Z', '2026-03-29T10:00:00.000Z', '2026-10-25T00:30:00.000Z'];
      expect(sent).to.deep.equal({
        message_id: id,
        total_recipients: 2,
        total_messages: 6,
        total_cost: 0.15,
        currency: 'USD',
        status: 'pending',
      });
      expect((await jobOf(gateway(), id)).nextRunAt).to.equal(instants[0]);

      const waiting = await statusOf(http, apiKey, id);
      expect(waiting).to.deep.include({
        status: 'scheduled',
        total_recipients: 2,
        delivered: 0,
        failed: 0,
        pending: 2,
        sending_type: 'scheduled',
      });
      expect(waiting.schedule).to.deep.equal({
        type: 'scheduled',
        state: 'active',
        next_occurrence_at: instants[0],
        occurrences_total: 3,
        occurrences_dispatched: 0,
        occurrences_remaining: 3,
      });
      expect(waiting.occurrences).to.deep.equal(
        instants.map((at, index) => ({
          occurrence_index: index,
          scheduled_at: at,
          status: 'scheduled',
          delivered: 0,
          failed: 0,
          pending: 2,
          cancelled: 0,
          skipped: 0,
        })),
      );
      expect(waiting.recipients.map((r) => [r.status, r.carrier_status, r.sent_at])).to.deep.equal([
        ['pending', null, null],
        ['pending', null, null],
      ]);

      clock.set(ms(instants[0]!) - 1);
      await playJob(gateway(), merchantId, id);
      expect((await statusOf(http, apiKey, id)).status, 'still waiting 1 ms before').to.equal('scheduled');

      await expectDueExactlyAt(PARIS, id, 0, instants[0]!, instants[1]!);
      const first = await statusOf(http, apiKey, id);
      expect(first).to.deep.include({ status: 'pending', delivered: 0, failed: 0, pending: 2 });
      expect(first.schedule).to.deep.include({
        state: 'active',
        next_occurrence_at: instants[1],
        occurrences_dispatched: 1,
        occurrences_remaining: 2,
      });

      // the carrier answers occurrence 0: one delivered, one undelivered
      const message = gateway().router.message(merchantId, id);
      const at = clock.now() + 5_000;
      await message.ask({ type: 'apply_receipt', receipt: { occurrence: 0, recipient: 0, status: 'delivered', at } });
      await message.ask({ type: 'apply_receipt', receipt: { occurrence: 0, recipient: 1, status: 'undelivered', at } });
      const answered = await statusOf(http, apiKey, id);
      expect(answered).to.deep.include({ status: 'delivered', delivered: 1, failed: 1, pending: 0 });
      expect(answered.recipients.map((r) => [r.status, r.error_code])).to.deep.equal([
        ['delivered', null],
        ['failed', '1502'],
      ]);

      // the next occurrence is the latest one now: recipients and aggregate are its own
      await expectDueExactlyAt(PARIS, id, 1, instants[1]!, instants[2]!);
      const second = await statusOf(http, apiKey, id);
      expect(second).to.deep.include({ status: 'pending', delivered: 0, failed: 0, pending: 2 });
      expect(second.recipients.map((r) => [r.status, r.error_code])).to.deep.equal([
        ['pending', null],
        ['pending', null],
      ]);
      expect(second.occurrences.map((o) => [o.status, o.delivered, o.failed, o.pending])).to.deep.equal([
        ['delivered', 1, 1, 0],
        ['pending', 0, 0, 2],
        ['scheduled', 0, 0, 2],
      ]);

      // the ambiguous 02:30 of 25 October is its first occurrence (00:30Z), not the second (01:30Z)
      await expectDueExactlyAt(PARIS, id, 2, instants[2]!, null);
      const done = await statusOf(http, apiKey, id);
      expect(done.schedule).to.deep.equal({
        type: 'scheduled',
        state: 'completed',
        next_occurrence_at: null,
        occurrences_total: 3,
        occurrences_dispatched: 3,
        occurrences_remaining: 0,
      });
      expect(await dispatchCounts(gateway(), id)).to.deep.equal({ 0: 1, 1: 1, 2: 1 });
    });
  });

  describe('recurring_schedule', () => {
    interface RecurringCase {
      readonly label: string;
      readonly zone: Zone;
      readonly rule: Record<string, unknown>;
      readonly to?: readonly string[];
      readonly message?: string;
      /** Every occurrence instant, when short enough to list. */
      readonly instants?: readonly string[];
      readonly count: number;
      /** Spot checks: occurrence index → instant. */
      readonly spots?: Readonly<Record<number, string>>;
      /** Cost of one occurrence (all recipients and segments). */
      readonly perOccurrence: number;
    }

    const at = (days: readonly string[], times: readonly string[]) => days.flatMap((day) => times.map((time) => `${day}T${time}:00.000Z`));

    const CASES: RecurringCase[] = [
      {
        label: 'daily every 2 days at two times (given out of order) in Paris, across the spring-forward',
        zone: PARIS,
        rule: { start_date: '2026-03-27', end_date: '2026-04-02', frequency: 'daily', interval: 2, times: ['20:30', '08:00'] },
        to: [NUMBERS.vodacom, NUMBERS.airtel],
        message: TWO_SEGMENTS,
        instants: [...at(['2026-03-27'], ['07:00', '19:30']), ...at(['2026-03-29', '2026-03-31', '2026-04-02'], ['06:00', '18:30'])],
        count: 8,
        perOccurrence: 0.1,
      },
      {
        label: 'daily at 02:30 in Paris: the day of the gap moves forward by the gap (03:30 CEST)',
        zone: PARIS,
        rule: { start_date: '2026-03-28', end_date: '2026-03-30', frequency: 'daily', interval: 1, times: ['02:30'] },
        instants: ['2026-03-28T01:30:00.000Z', '2026-03-29T01:30:00.000Z', '2026-03-30T00:30:00.000Z'],
        count: 3,
        perOccurrence: 0.02,
      },
      {
        label: 'daily at 02:30 and 03:30 in Paris on the day of the gap: the shifted 02:30 is 03:30, counted once',
        zone: PARIS,
        rule: { start_date: '2026-03-29', end_date: '2026-03-29', frequency: 'daily', interval: 1, times: ['02:30', '03:30'] },
        instants: ['2026-03-29T01:30:00.000Z'],
        count: 1,
        perOccurrence: 0.02,
      },
      {
        label: 'weekly every 3 weeks in New York, across the spring-forward (end_date inclusive)',
        zone: NEW_YORK,
        rule: { start_date: '2026-02-15', end_date: '2026-05-31', frequency: 'weekly', interval: 3, times: ['09:15'] },
        instants: ['2026-02-15T14:15:00.000Z', ...at(['2026-03-08', '2026-03-29', '2026-04-19', '2026-05-10', '2026-05-31'], ['13:15'])],
        count: 6,
        perOccurrence: 0.02,
      },
      {
        label: 'weekly every 2 weeks at 01:30 in New York: the fall-back day takes the first 01:30 (EDT)',
        zone: NEW_YORK,
        rule: { start_date: '2026-10-18', end_date: '2026-11-15', frequency: 'weekly', interval: 2, times: ['01:30'] },
        instants: ['2026-10-18T05:30:00.000Z', '2026-11-01T05:30:00.000Z', '2026-11-15T06:30:00.000Z'],
        count: 3,
        perOccurrence: 0.02,
      },
      {
        label: 'monthly on the 31st at two times in Kinshasa: months without a 31st are skipped',
        zone: KINSHASA,
        rule: { start_date: '2026-01-31', end_date: '2026-12-31', frequency: 'monthly', interval: 1, times: ['10:00', '18:00'] },
        to: [NUMBERS.vodacom, NUMBERS.orangeFr],
        instants: at(
          ['2026-01-31', '2026-03-31', '2026-05-31', '2026-07-31', '2026-08-31', '2026-10-31', '2026-12-31'],
          ['09:00', '17:00'],
        ),
        count: 14,
        perOccurrence: 0.07,
      },
      {
        label: 'monthly every 2 months on the 31st in Kinshasa: skipped months still count towards the interval',
        zone: KINSHASA,
        rule: { start_date: '2026-01-31', end_date: '2027-01-31', frequency: 'monthly', interval: 2, times: ['07:45'] },
        instants: at(['2026-01-31', '2026-03-31', '2026-05-31', '2026-07-31', '2027-01-31'], ['06:45']),
        count: 5,
        perOccurrence: 0.02,
      },
      {
        label: 'yearly every 2 years on 29 February in Paris from a past start: only leap years, only future ones',
        zone: PARIS,
        rule: { start_date: '2024-02-29', end_date: '2036-12-31', frequency: 'yearly', interval: 2, times: ['07:00', '19:00'] },
        message: TWO_SEGMENTS,
        instants: at(['2028-02-29', '2032-02-29', '2036-02-29'], ['06:00', '18:00']),
        count: 6,
        perOccurrence: 0.04,
      },
      {
        label: 'open-ended daily at 10:00 in Kinshasa from a past start: now is excluded, the 365-day horizon included',
        zone: KINSHASA,
        rule: { start_date: '2026-01-01', end_date: null, frequency: 'daily', interval: 1, times: ['10:00'] },
        count: 365,
        spots: { 0: '2026-01-06T09:00:00.000Z', 1: '2026-01-07T09:00:00.000Z', 364: iso(NOW + 365 * DAY) },
        perOccurrence: 0.02,
      },
      {
        label: 'open-ended weekly every 2 weeks at two times in New York, across both DST changes',
        zone: NEW_YORK,
        rule: { start_date: '2026-01-05', end_date: null, frequency: 'weekly', interval: 2, times: ['08:00', '17:30'] },
        to: [NUMBERS.vodacom, NUMBERS.unpriced],
        count: 54,
        spots: {
          0: '2026-01-05T13:00:00.000Z',
          1: '2026-01-05T22:30:00.000Z',
          8: '2026-03-02T13:00:00.000Z',
          10: '2026-03-16T12:00:00.000Z',
          11: '2026-03-16T21:30:00.000Z',
          42: '2026-10-26T12:00:00.000Z',
          44: '2026-11-09T13:00:00.000Z',
          53: '2027-01-04T22:30:00.000Z',
        },
        perOccurrence: 0.03,
      },
    ];

    for (const c of CASES) {
      it(`when ${c.label}, then occurrences_total is total_messages / (recipients × segments) and the instants are exact`, async () => {
        const to = c.to ?? [NUMBERS.vodacom];
        const segments = c.message === TWO_SEGMENTS ? 2 : 1;
        const sent = await send(c.zone, { to, message: c.message ?? 'recurring', sending_type: 'recurring', recurring_schedule: c.rule });
        const id = sent.message_id;
        const status = await statusOf(http, merchants[c.zone].apiKey, id);
        const scheduledAt = status.occurrences.map((o) => o.scheduled_at);

        expect(sent.total_messages % (to.length * segments)).to.equal(0);
        expect(status.schedule?.occurrences_total).to.equal(sent.total_messages / (to.length * segments));
        expect(status.schedule?.occurrences_total).to.equal(c.count);
        expect(units(sent.total_cost)).to.equal(units(c.perOccurrence) * c.count);
        expect(status.occurrences.map((o) => o.occurrence_index)).to.deep.equal(Array.from({ length: c.count }, (_, i) => i));
        expect([...scheduledAt].sort(), 'in increasing order').to.deep.equal(scheduledAt);
        if (c.instants) expect(scheduledAt).to.deep.equal(c.instants);
        for (const [index, instant] of Object.entries(c.spots ?? {}))
          expect(scheduledAt[Number(index)], `occurrence ${index}`).to.equal(instant);
        expect(status).to.deep.include({ status: 'scheduled', sending_type: 'recurring' });
        expect((await jobOf(gateway(), id)).nextRunAt).to.equal(scheduledAt[0]);
        await expectDueExactlyAt(c.zone, id, 0, scheduledAt[0]!, scheduledAt[1] ?? null);
      });
    }

    it('when an open-ended daily schedule goes on in Kinshasa, then consecutive occurrences are exactly one day apart', async () => {
      const sent = await send(KINSHASA, {
        sending_type: 'recurring',
        recurring_schedule: { start_date: '2026-01-05', end_date: null, frequency: 'daily', interval: 1, times: ['23:59'] },
      });
      const instants = (await statusOf(http, merchants[KINSHASA].apiKey, sent.message_id)).occurrences.map((o) => ms(o.scheduled_at));
      expect(instants).to.have.length(365);
      expect(iso(instants[0]!)).to.equal('2026-01-05T22:59:00.000Z');
      expect(instants.slice(1).every((instant, i) => instant - instants[i]! === DAY)).to.equal(true);
    });

    it('when every occurrence of a Paris schedule is played in turn, then each leaves exactly at its instant and never twice', async () => {
      const rule = { start_date: '2026-03-27', end_date: '2026-04-02', frequency: 'daily', interval: 2, times: ['20:30', '08:00'] };
      const sent = await send(PARIS, { sending_type: 'recurring', recurring_schedule: rule });
      const id = sent.message_id;
      const instants = (await statusOf(http, merchants[PARIS].apiKey, id)).occurrences.map((o) => o.scheduled_at);
      expect(instants).to.have.length(8);
      for (const [index, instant] of instants.entries()) await expectDueExactlyAt(PARIS, id, index, instant, instants[index + 1] ?? null);
      // the job comes back once more after the end (a late duplicate run): nothing leaves again
      clock.set(ms(instants[7]!) + DAY);
      expect(await playJob(gateway(), merchants[PARIS].merchantId, id)).to.deep.equal({ dispatched: [], next: null });
      expect(await dispatchCounts(gateway(), id)).to.deep.equal(Object.fromEntries(instants.map((_, i) => [i, 1])));
      expect((await statusOf(http, merchants[PARIS].apiKey, id)).schedule).to.deep.include({
        state: 'completed',
        occurrences_dispatched: 8,
      });
    });

    it('when the job runs late (the node was down over two occurrences), then both late occurrences leave at once, once', async () => {
      const rule = { start_date: '2026-02-01', end_date: '2026-02-04', frequency: 'daily', interval: 1, times: ['09:00'] };
      const sent = await send(KINSHASA, { sending_type: 'recurring', recurring_schedule: rule });
      const id = sent.message_id;
      clock.set(Date.UTC(2026, 1, 2, 8, 0, 1));
      expect(await playJob(gateway(), merchants[KINSHASA].merchantId, id)).to.deep.equal({
        dispatched: [0, 1],
        next: '2026-02-03T08:00:00.000Z',
      });
      expect(await playJob(gateway(), merchants[KINSHASA].merchantId, id)).to.deep.equal({
        dispatched: [],
        next: '2026-02-03T08:00:00.000Z',
      });
      expect(await dispatchCounts(gateway(), id)).to.deep.equal({ 0: 1, 1: 1 });
    });

    it('when recipients × segments × occurrences is exactly 5000, then it is accepted; one occurrence more is 400/1110 naming recurring_schedule', async () => {
      const to = Array.from({ length: 100 }, (_, i) => `+24381${String(i).padStart(7, '0')}`);
      const rule = (end: string) => ({ start_date: '2026-02-01', end_date: end, frequency: 'daily', interval: 1, times: ['09:00'] });
      const { apiKey } = merchants[KINSHASA];
      // 1 February + 49 days = 22 March (50 occurrences); 23 March is the 51st
      const accepted = dataOf<SendData>(
        await http.send(apiKey, { to, message: 'cap', sending_type: 'recurring', recurring_schedule: rule('2026-03-22') }),
        201,
      );
      expect(accepted).to.include({ total_recipients: 100, total_messages: 5000, total_cost: 100 });
      expectFieldError(
        await http.send(apiKey, { to, message: 'cap', sending_type: 'recurring', recurring_schedule: rule('2026-03-23') }),
        'recurring_schedule',
      );
      // open-ended: 14 recipients × 365 days = 5110
      const open = { start_date: '2026-01-01', end_date: null, frequency: 'daily', interval: 1, times: ['09:00'] };
      expectFieldError(
        await http.send(apiKey, { to: to.slice(0, 14), message: 'cap', sending_type: 'recurring', recurring_schedule: open }),
        'recurring_schedule',
      );
      expect(
        dataOf<SendData>(
          await http.send(apiKey, { to: to.slice(0, 13), message: 'cap', sending_type: 'recurring', recurring_schedule: open }),
          201,
        ).total_messages,
      ).to.equal(13 * 365);
    });
  });
});
