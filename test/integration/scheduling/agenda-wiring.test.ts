import { expect } from 'chai';
import type { Gateway } from '../../../src/gateway.js';
import type { CommandOutcome } from '../../../src/entry-points/cli/command.js';
import { listSchedules, showSchedule } from '../../../src/entry-points/cli/schedule-commands.js';
import { client, dataOf, NUMBERS, type SendData } from '../../helpers/api-helpers.js';
import { seedMerchant, testConfig } from '../../helpers/gateway-fixture.js';
import { startApi, type ApiFixture } from '../../helpers/http-fixture.js';
import { startTestNats, type TestNats } from '../../helpers/nats.js';
import { testPostgres } from '../../helpers/postgres.js';
import { connectNatsTransport } from '../../../src/libraries/transport/nats-transport.js';
import type { Transport } from '../../../src/libraries/transport/transport-port.js';
import { dispatchCounts, eventually, iso, jobOf, messageEvents, NO_RATE_LIMITS, statusOf } from './scheduling-fixture.js';
import { installWallClock, jumpBeforeNextMinute, uninstallWallClock } from '../../helpers/wall-clock.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
/**
 * How long to wait for a due job: its poll is 200 ms in tests, but a loaded machine may run it much later. Only
 * "not before its time" is asserted: how late it runs depends on the machine's speed.
 */
const PATIENCE_MS = 30_000;
/** How far ahead of the first date the clock jumps: room for the set-up on a loaded machine. */
const LEAD_MS = 10_000;

/** The date and time a Kinshasa merchant (UTC+1, no DST) writes for `instant`. */
function kinshasaLocal(instant: number): { date: string; time: string } {
  const local = new Date(instant + HOUR).toISOString();
  return { date: local.slice(0, 10), time: local.slice(11, 16) };
}

/** When the journal says occurrence `index` left (the actor's clock at dispatch), once it has. */
async function dispatchedAt(gateway: Gateway, messageId: string, index: number): Promise<number | undefined> {
  const event = (await messageEvents(gateway, messageId)).find((e) => e.type === 'occurrence_dispatched' && e.occurrence === index);
  return event?.at;
}

// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the shape it reads
function jsonOf<T>(outcome: CommandOutcome): T {
  if (!outcome.ok) throw new Error(`${outcome.message} ${outcome.details.join('; ')}`);
  return JSON.parse(JSON.stringify(outcome.json)) as T;
}

interface JobJson {
  readonly message_id: string;
  readonly merchant_id: string;
  readonly next_run_at: string | null;
  readonly last_run_at: string | null;
  readonly last_finished_at: string | null;
  readonly locked_at: string | null;
  readonly fail_reason: string | null;
}

describe('Agenda on PostgreSQL runs the occurrences (real time)', function () {
  this.timeout(180_000);
  let url: string;

  before(async () => {
    // the occurrences are minute boundaries: the process clock jumps to a few seconds before one (see test/helpers/wall-clock.ts)
    installWallClock();
    url = await (await testPostgres()).createDatabase('agenda_wiring');
  });
  after(() => {
    uninstallWallClock();
  });

  async function sendScheduled(fixture: ApiFixture, key: string, instants: readonly number[]): Promise<string> {
    const body = { to: [NUMBERS.vodacom], message: 'agenda', sending_type: 'scheduled', scheduled_dates: instants.map(kinshasaLocal) };
    return dataOf<SendData>(await client(() => fixture.api).send(key, body), 201).message_id;
  }

  describe('one node', () => {
    let fixture: ApiFixture;
    before(async () => {
      fixture = await startApi(url, { config: { rateLimits: NO_RATE_LIMITS } });
    });
    after(async () => {
      await fixture.stop();
    });

    it('when a scheduled send is due 3 s ahead, then Agenda dispatches it just after its instant (never before), comes back for the next date, and the CLI lists its job', async () => {
      const gateway = fixture.node.gateway;
      const http = client(() => fixture.api);
      const shop = await seedMerchant(gateway, { prepaid: '10' });
      const first = jumpBeforeNextMinute(LEAD_MS);
      const second = first + MINUTE;
      const id = await sendScheduled(fixture, shop.apiKey, [first, second]);

      expect(await jobOf(gateway, id)).to.deep.include({
        merchantId: shop.merchantId,
        messageId: id,
        nextRunAt: iso(first),
        lastRunAt: null,
        lockedAt: null,
        failReason: null,
      });
      expect(jsonOf<JobJson[]>(await listSchedules(gateway, { merchantId: shop.merchantId }))).to.deep.equal([
        {
          message_id: id,
          merchant_id: shop.merchantId,
          job_id: (await jobOf(gateway, id)).jobId,
          next_run_at: iso(first),
          last_run_at: null,
          last_finished_at: null,
          locked_at: null,
          fail_reason: null,
        },
      ]);
      expect(Date.now(), 'the first date is still ahead').to.be.below(first);

      const firstAt = await eventually('the first occurrence', PATIENCE_MS, () => dispatchedAt(gateway, id, 0));
      expect(firstAt).to.be.at.least(first);
      expect((await statusOf(http, shop.apiKey, id)).schedule).to.deep.include({
        state: 'active',
        occurrences_dispatched: 1,
        next_occurrence_at: iso(second),
      });
      // Agenda saves what the actor answered: the job comes back at the second date
      const job = await eventually('the job rescheduled', PATIENCE_MS, async () => {
        const current = await jobOf(gateway, id);
        return current.nextRunAt === iso(second) && current.lockedAt === null ? current : undefined;
      });
      expect(Date.parse(job.lastRunAt ?? '')).to.be.at.least(first);
      expect(job.lastFinishedAt).to.be.a('string');
      expect(job.failReason).to.equal(null);
      const shown = jsonOf<{ schedule: unknown; jobs: JobJson[] }>(await showSchedule(gateway, { messageId: id }));
      expect(shown.schedule).to.deep.equal({
        type: 'scheduled',
        state: 'active',
        next_occurrence_at: iso(second),
        occurrences_total: 2,
        occurrences_dispatched: 1,
        occurrences_remaining: 1,
      });
      expect(shown.jobs.map((j) => j.next_run_at)).to.deep.equal([iso(second)]);

      expect(jumpBeforeNextMinute(2_000), 'the next minute is the second date').to.equal(second);
      const secondAt = await eventually('the second occurrence', PATIENCE_MS, () => dispatchedAt(gateway, id, 1));
      expect(secondAt).to.be.at.least(second);
      const done = await eventually('the job finished', PATIENCE_MS, async () => {
        const current = await jobOf(gateway, id);
        return current.nextRunAt === null && current.lockedAt === null ? current : undefined;
      });
      expect(done.failReason).to.equal(null);
      expect(await dispatchCounts(gateway, id)).to.deep.equal({ 0: 1, 1: 1 });
      expect((await statusOf(http, shop.apiKey, id)).schedule).to.deep.include({ state: 'completed', occurrences_dispatched: 2 });
      expect(jsonOf<JobJson[]>(await listSchedules(gateway, { merchantId: shop.merchantId }))[0]).to.deep.include({
        message_id: id,
        next_run_at: null,
        locked_at: null,
      });
    });
  });

  describe('two nodes on one database (a cluster over NATS)', () => {
    let nats: TestNats;
    const nodes: { api: ApiFixture; transport: Transport }[] = [];
    before(async () => {
      nats = await startTestNats();
      // one after the other: each creates Agenda's table if missing
      for (const nodeId of ['node-a', 'node-b']) {
        const transport = await connectNatsTransport({ servers: nats.url, name: nodeId });
        nodes.push({ transport, api: await startApi(url, { transport, config: { rateLimits: NO_RATE_LIMITS, cluster: { nodeId } } }) });
      }
      // both take their fair share of the shards before the test starts
      await eventually('the shards shared out', 10_000, () => {
        const owned = nodes.map((node) => node.api.node.gateway.shardManager?.ownedShards().length ?? 0);
        return Promise.resolve(
          owned.every((n) => n > 0) && owned.reduce((a, b) => a + b, 0) === testConfig().cluster.shards ? true : undefined,
        );
      });
    });
    after(async () => {
      for (const node of nodes.splice(0)) {
        await node.api.stop();
        await node.transport.close();
      }
      await nats.stop();
    });

    it('when several messages of several merchants are due at the same instants, then both nodes run Agenda and every occurrence is dispatched exactly once', async () => {
      const [a, b] = nodes.map((node) => node.api) as [ApiFixture, ApiFixture];
      // three merchants on each node: merchant ids are random, so seed until each node owns three
      const onNodeA = (merchantId: string) => a.node.gateway.shardManager?.owns(a.node.gateway.router.shardOf(merchantId)) ?? false;
      const shops: Awaited<ReturnType<typeof seedMerchant>>[] = [];
      const onEach = (owned: boolean) => shops.filter((shop) => onNodeA(shop.merchantId) === owned).length;
      for (let i = 0; i < 60 && (onEach(true) < 3 || onEach(false) < 3); i++) {
        const shop = await seedMerchant(a.node.gateway, { name: `shop ${i}`, prepaid: '10' });
        if (onEach(onNodeA(shop.merchantId)) < 3) shops.push(shop);
      }
      expect([onEach(true), onEach(false)], 'three merchants on each node').to.deep.equal([3, 3]);

      const first = jumpBeforeNextMinute(LEAD_MS);
      const second = first + MINUTE;
      const ids: string[] = [];
      for (const shop of shops) {
        ids.push(await sendScheduled(a, shop.apiKey, [first, second]));
        ids.push(await sendScheduled(b, shop.apiKey, [first, second]));
      }
      const journal = a.node.gateway;
      const allDispatched = (index: number) => async () => {
        const counts = await Promise.all(ids.map((id) => dispatchCounts(journal, id)));
        return counts.every((c) => c[index] !== undefined) ? true : undefined;
      };

      await eventually('every first occurrence', PATIENCE_MS, allDispatched(0), 100);
      for (const id of ids) expect(await dispatchedAt(journal, id, 0), id).to.be.at.least(first);
      expect(jumpBeforeNextMinute(2_000)).to.equal(second);
      await eventually('every second occurrence', PATIENCE_MS, allDispatched(1), 100);
      for (const id of ids) expect(await dispatchedAt(journal, id, 1), id).to.be.at.least(second);
      // let both Agendas poll a few more times: nothing leaves twice
      await new Promise((resolve) => setTimeout(resolve, 1_000));
      for (const id of ids) expect(await dispatchCounts(journal, id), id).to.deep.equal({ 0: 1, 1: 1 });
      const jobs = await Promise.all(ids.map((id) => jobOf(journal, id)));
      expect(jobs.map((job) => [job.nextRunAt, job.lockedAt, job.failReason])).to.deep.equal(ids.map(() => [null, null, null]));
    });
  });
});
