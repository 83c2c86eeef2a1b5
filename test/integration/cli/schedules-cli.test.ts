import { PostgresBackend } from '@agendajs/postgres-backend';
import { expect } from 'chai';
import type { Gateway } from '../../../src/gateway.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import type { CommandOutcome } from '../../../src/entry-points/cli/command.js';
import { parseCommandLine } from '../../../src/entry-points/cli/command-line.js';
import { runCli } from '../../../src/composition/cli.js';
import { listSchedules, showSchedule } from '../../../src/entry-points/cli/schedule-commands.js';
import { NUMBERS } from '../../helpers/api-helpers.js';
import { gatewayOnPostgres, seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';

// 2031-03-10 08:00 UTC (09:00 in Kinshasa); the schedules below start in April 2031
const NOW = Date.UTC(2031, 2, 10, 8, 0, 0);

type Json = Record<string, unknown>;

function succeeded(outcome: CommandOutcome): Extract<CommandOutcome, { ok: true }> {
  if (!outcome.ok) throw new Error(`expected success, got: ${outcome.message} ${outcome.details.join('; ')}`);
  return outcome;
}

/** The JSON of a successful outcome, as a script reading `--json` sees it. */
// eslint-disable-next-line @typescript-eslint/no-unnecessary-type-parameters -- the caller names the shape it reads
function jsonOf<T = Json>(outcome: CommandOutcome): T {
  return JSON.parse(JSON.stringify(succeeded(outcome).json)) as T;
}

describe('operator CLI: schedules', function () {
  this.timeout(60_000);
  const clock = createManualClock(NOW);
  let url: string;
  /** A gateway as the CLI opens it: Agenda's backend on the database, never started (it only reads jobs). */
  let gateway: Gateway;
  let kin: SeededMerchant;
  let other: SeededMerchant;

  before(async () => {
    url = await (await testPostgres()).createDatabase('cli_schedules');
    gateway = await gatewayOnPostgres(url, {
      clock,
      agendaBackend: new PostgresBackend({ connectionString: url, disableNotifications: true }),
    });
    kin = await seedMerchant(gateway, { name: 'Kin', prepaid: '100' });
    other = await seedMerchant(gateway, { name: 'Other', prepaid: '100' });
  });
  after(async () => {
    await gateway.stop();
  });

  async function send(merchant: SeededMerchant, body: Json): Promise<string> {
    const result = await gateway.useCases.sendMessage({
      merchantId: merchant.merchantId,
      keyId: merchant.keyId,
      body: { to: [NUMBERS.vodacom], message: 'cli', ...body },
      idempotencyKey: null,
    });
    if (!result.ok) throw result.error;
    // the relay registers the Agenda job
    await gateway.relay.drain();
    return result.value.receipt.message_id;
  }

  const scheduled = (merchant: SeededMerchant, dates: readonly { date: string; time: string }[]) =>
    send(merchant, { sending_type: 'scheduled', scheduled_dates: dates });

  describe('schedules list', () => {
    it('when schedules exist, then every job is listed soonest first with its message, merchant, next run, last run, lock and failure', async () => {
      const later = await scheduled(kin, [{ date: '2031-04-02', time: '10:00' }]);
      const sooner = await scheduled(other, [{ date: '2031-04-01', time: '10:00' }]);
      await send(kin, {}); // immediate: no job

      const outcome = await listSchedules(gateway, {});
      const listed = jsonOf<Json[]>(outcome).filter((job) => [later, sooner].includes(job.message_id as string));

      expect(listed).to.deep.equal([
        {
          message_id: sooner,
          merchant_id: other.merchantId,
          job_id: listed[0]?.job_id,
          next_run_at: '2031-04-01T09:00:00.000Z',
          last_run_at: null,
          last_finished_at: null,
          locked_at: null,
          fail_reason: null,
        },
        {
          message_id: later,
          merchant_id: kin.merchantId,
          job_id: listed[1]?.job_id,
          next_run_at: '2031-04-02T09:00:00.000Z',
          last_run_at: null,
          last_finished_at: null,
          locked_at: null,
          fail_reason: null,
        },
      ]);
      expect(listed[0]?.job_id).to.be.a('string').and.not.equal(listed[1]?.job_id);
      const text = succeeded(outcome).text;
      expect(text.split('\n')[0]).to.match(/^MESSAGE\s+MERCHANT\s+NEXT RUN\s+LAST RUN\s+LAST FINISHED\s+LOCKED\s+FAIL REASON$/);
      expect(text).to.match(new RegExp(`^${sooner}\\s+${other.merchantId}\\s+2031-04-01T09:00:00Z\\s+-\\s+-\\s+-$`, 'm'));
      expect(text.indexOf(sooner)).to.be.below(text.indexOf(later));
    });

    it("when --merchant is given, then only that merchant's jobs are listed; --limit caps the list", async () => {
      const first = await scheduled(other, [{ date: '2031-03-20', time: '10:00' }]);
      await scheduled(other, [{ date: '2031-03-21', time: '10:00' }]);
      const own = jsonOf<Json[]>(await listSchedules(gateway, { merchantId: other.merchantId }));
      const all = jsonOf<Json[]>(await listSchedules(gateway, {}));

      expect(own.map((job) => job.merchant_id)).to.deep.equal(own.map(() => other.merchantId));
      expect(own.length).to.be.at.least(3);
      expect(all.length).to.be.above(own.length);
      expect(
        jsonOf<Json[]>(await listSchedules(gateway, { merchantId: other.merchantId, limit: 1 })).map((job) => job.message_id),
      ).to.deep.equal([first]);
    });

    it('when the merchant is unknown or there is nothing scheduled, then it says so', async () => {
      expect(await listSchedules(gateway, { merchantId: 'mer_nope' })).to.deep.equal({
        ok: false,
        message: 'unknown merchant mer_nope',
        details: [],
      });
      const idle = await seedMerchant(gateway, { name: 'Idle' });
      const outcome = succeeded(await listSchedules(gateway, { merchantId: idle.merchantId }));
      expect(outcome.json).to.deep.equal([]);
      expect(outcome.text).to.equal('No scheduled sends.');
    });
  });

  describe('schedules show', () => {
    it("when a schedule is shown, then its actor's schedule block, its occurrences and its Agenda job are printed", async () => {
      const id = await send(kin, {
        sending_type: 'recurring',
        recurring_schedule: { start_date: '2031-04-01', end_date: '2031-04-03', frequency: 'daily', interval: 1, times: ['10:00'] },
      });
      const paused = await gateway.useCases.manageSchedule(kin.merchantId, id, 'pause');
      expect(paused.found && paused.result.ok).to.equal(true);

      const outcome = await showSchedule(gateway, { messageId: id });
      const json = jsonOf<{ jobs: Json[] } & Json>(outcome);

      const instants = ['2031-04-01T09:00:00.000Z', '2031-04-02T09:00:00.000Z', '2031-04-03T09:00:00.000Z'];
      expect(json).to.deep.equal({
        message_id: id,
        merchant_id: kin.merchantId,
        sending_type: 'recurring',
        status: 'scheduled',
        schedule: {
          type: 'recurring',
          state: 'paused',
          next_occurrence_at: instants[0],
          occurrences_total: 3,
          occurrences_dispatched: 0,
          occurrences_remaining: 3,
        },
        occurrences: instants.map((at, index) => ({
          occurrence_index: index,
          status: 'scheduled',
          scheduled_at: at,
          delivered: 0,
          failed: 0,
          pending: 1,
          cancelled: 0,
          skipped: 0,
        })),
        jobs: [
          {
            message_id: id,
            merchant_id: kin.merchantId,
            job_id: json.jobs[0]?.job_id,
            next_run_at: instants[0],
            last_run_at: null,
            last_finished_at: null,
            locked_at: null,
            fail_reason: null,
          },
        ],
      });
      const text = succeeded(outcome).text;
      expect(text).to.match(/^Schedule:\s+paused$/m);
      expect(text).to.match(/^Next occurrence:\s+2031-04-01T09:00:00Z$/m);
      expect(text).to.match(/^Occurrences:\s+3 total, 0 dispatched, 3 remaining$/m);
      expect(text).to.match(/^2\s+2031-04-03T09:00:00Z\s+scheduled\s+0\s+0\s+1$/m);
      expect(text).to.match(new RegExp(`^${id}\\s+${kin.merchantId}\\s+2031-04-01T09:00:00Z`, 'm'));
    });

    it('when an occurrence left and the schedule was then cancelled, then show says cancelled with one occurrence dispatched', async () => {
      const id = await scheduled(kin, [
        { date: '2031-03-11', time: '10:00' },
        { date: '2031-03-12', time: '10:00' },
      ]);
      clock.set(Date.UTC(2031, 2, 11, 9));
      const reply = await gateway.router.message(kin.merchantId, id).ask({ type: 'dispatch_due' });
      expect(reply).to.deep.include({ ok: true, dispatched: [0] });
      const cancelled = await gateway.useCases.manageSchedule(kin.merchantId, id, 'cancel');
      expect(cancelled.found && cancelled.result.ok).to.equal(true);

      const json = jsonOf<{ schedule: Json; occurrences: Json[] }>(await showSchedule(gateway, { messageId: id }));
      expect(json.schedule).to.deep.equal({
        type: 'scheduled',
        state: 'cancelled',
        next_occurrence_at: null,
        occurrences_total: 2,
        occurrences_dispatched: 1,
        occurrences_remaining: 0,
      });
      expect(json.occurrences.map((o) => o.status)).to.deep.equal(['pending', 'cancelled']);
      clock.set(NOW);
    });

    it('when the send is immediate, then there is no schedule and no job', async () => {
      const id = await send(kin, {});
      const outcome = await showSchedule(gateway, { messageId: id });
      expect(jsonOf(outcome)).to.deep.include({ message_id: id, sending_type: 'immediate', schedule: null, occurrences: [], jobs: [] });
      expect(succeeded(outcome).text)
        .to.match(/^Schedule:\s+none \(immediate send\)$/m)
        .and.match(/^No Agenda job\.$/m);
    });

    it('when the message is unknown, then it is a validation error', async () => {
      expect(await showSchedule(gateway, { messageId: 'msg_nope' })).to.deep.equal({
        ok: false,
        message: 'unknown message msg_nope',
        details: [],
      });
    });

    it('when the gateway has no scheduler, then both commands say so', async () => {
      const bare = { ...gateway, scheduler: null };
      const expected = { ok: false, message: 'the scheduler (Agenda) is not available in this gateway', details: [] };
      expect(await listSchedules(bare, {})).to.deep.equal(expected);
      expect(await showSchedule(bare, { messageId: 'msg_x' })).to.deep.equal(expected);
    });
  });

  describe('command line', () => {
    it('when the schedules commands are parsed, then they ask for the scheduler and check --limit', () => {
      expect(parseCommandLine(['schedules', 'list', '--merchant', 'mer_1', '--limit', '5', '--json'])).to.deep.include({
        type: 'run',
        name: 'schedules list',
        json: true,
        needsScheduler: true,
      });
      expect(parseCommandLine(['schedules', 'show', 'msg_1'])).to.deep.include({
        type: 'run',
        name: 'schedules show',
        needsScheduler: true,
      });
      expect(parseCommandLine(['merchants', 'list'])).to.deep.include({ type: 'run', needsScheduler: false });
      for (const limit of ['0', '2.5', 'ten', '10001']) {
        expect(parseCommandLine(['schedules', 'list', '--limit', limit]), limit).to.deep.include({
          type: 'usage_error',
          message: `--limit must be a whole number from 1 to 10000, not "${limit}"`,
        });
      }
      expect(parseCommandLine(['schedules', 'list', '--limit', '10000'])).to.deep.include({ type: 'run' });
      expect(parseCommandLine(['schedules', 'show'])).to.deep.include({ type: 'usage_error', message: 'expected <messageId>, got none' });
      const help = parseCommandLine(['--help']);
      expect(help.type === 'help' && help.text)
        .to.match(/^ {2}schedules list \[--merchant <id>\] \[--limit <n>\]$/m)
        .and.match(/^ {2}schedules show <messageId>$/m);
    });

    it('when the real CLI runs `schedules list --json` and `schedules show`, then it opens Agenda on the database, answers, and closes every connection it opened', async () => {
      const id = await scheduled(other, [{ date: '2031-05-01', time: '10:00' }]);
      // the CLI's sessions carry their own application_name: the count ignores the gateway's pool (which may grow
      // meanwhile) and autovacuum workers (which pg_stat_activity lists under the database too)
      const applicationName = 'schedules-cli-under-test';
      const connections = async () => {
        const rows = await gateway.persistence.sql!.query<{ n: number }>(
          'SELECT count(*)::integer AS n FROM pg_stat_activity WHERE datname = current_database() AND application_name = $1',
          [applicationName],
        );
        return rows[0]?.n ?? 0;
      };
      const before = await connections();
      const env = {
        NODE_ENV: 'test',
        GATEWAY_MODE: 'server',
        DATABASE_URL: `${url}${url.includes('?') ? '&' : '?'}application_name=${applicationName}`,
      };
      const run = async (argv: string[]) => {
        const out: string[] = [];
        const err: string[] = [];
        const code = await runCli(argv, { env, out: (text) => out.push(text), err: (text) => err.push(text) });
        return { code, out: out.join(''), err: err.join('') };
      };

      // while the commands run, their sessions show under that name (so the final count of 0 means closed, not unnamed)
      let seen = 0;
      const done = new AbortController();
      const sampler = (async () => {
        while (!done.signal.aborted) {
          seen = Math.max(seen, await connections());
          await new Promise((resolve) => setTimeout(resolve, 5));
        }
      })();
      const listed = await run(['schedules', 'list', '--merchant', other.merchantId, '--json']);
      expect({ code: listed.code, err: listed.err }).to.deep.equal({ code: 0, err: '' });
      expect((JSON.parse(listed.out) as Json[]).find((job) => job.message_id === id)).to.deep.include({
        next_run_at: '2031-05-01T09:00:00.000Z',
        merchant_id: other.merchantId,
      });
      const shown = await run(['schedules', 'show', id]);
      expect({ code: shown.code, err: shown.err }).to.deep.equal({ code: 0, err: '' });
      expect(shown.out).to.match(/^Schedule:\s+active$/m);
      const unknown = await run(['schedules', 'show', 'msg_nope']);
      expect(unknown).to.deep.equal({ code: 1, out: '', err: 'error: unknown message msg_nope\n' });
      done.abort();
      await sampler;
      expect(seen, 'CLI sessions seen while it ran').to.be.greaterThan(0);

      // pg closes server sessions asynchronously: give them a moment
      let after = await connections();
      for (let i = 0; i < 50 && after > before; i++) {
        await new Promise((resolve) => setTimeout(resolve, 20));
        after = await connections();
      }
      expect({ before, after }).to.deep.equal({ before: 0, after: 0 });
    });
  });
});
