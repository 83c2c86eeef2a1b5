import { messageStatusView } from '../../messaging/message-view.js';
import type { ScheduledJobView } from '../jobs/occurrence-scheduler.js';
import { done, limitOption, rejected, type CliGateway, type CommandOutcome, type CommandSpec } from './command.js';
import { fields, humanTime, table } from './format.js';

/**
 * Scheduled and recurring sends as Agenda holds them: one job per message, waking it at its next occurrence. The
 * CLI opens Agenda on the server's database without running it: it only reads the jobs.
 */

export const DEFAULT_SCHEDULE_LIMIT = 100;
const MAX_SCHEDULE_LIMIT = 10_000;

const NO_SCHEDULER = 'the scheduler (Agenda) is not available in this gateway';

function jobJson(job: ScheduledJobView) {
  return {
    message_id: job.messageId,
    merchant_id: job.merchantId,
    job_id: job.jobId,
    next_run_at: job.nextRunAt,
    last_run_at: job.lastRunAt,
    last_finished_at: job.lastFinishedAt,
    locked_at: job.lockedAt,
    fail_reason: job.failReason,
  };
}

const time = (isoText: string | null): string => (isoText === null ? '-' : humanTime(Date.parse(isoText)));

function jobsTable(jobs: readonly ScheduledJobView[], empty: string): string {
  return table(
    ['MESSAGE', 'MERCHANT', 'NEXT RUN', 'LAST RUN', 'LAST FINISHED', 'LOCKED', 'FAIL REASON'],
    jobs.map((job) => [
      job.messageId,
      job.merchantId,
      time(job.nextRunAt),
      time(job.lastRunAt),
      time(job.lastFinishedAt),
      time(job.lockedAt),
      job.failReason ?? '',
    ]),
    empty,
  );
}

export interface ListSchedulesOptions {
  readonly merchantId?: string | undefined;
  readonly limit?: number | undefined;
}

/** The occurrence jobs, soonest first, of every merchant or one. */
export async function listSchedules(gateway: CliGateway, options: ListSchedulesOptions = {}): Promise<CommandOutcome> {
  if (!gateway.scheduler) return rejected(NO_SCHEDULER);
  if (options.merchantId !== undefined && !(await gateway.persistence.directory.merchant(options.merchantId))) {
    return rejected(`unknown merchant ${options.merchantId}`);
  }
  const jobs = await gateway.scheduler.jobs({
    ...(options.merchantId !== undefined ? { merchantId: options.merchantId } : {}),
    limit: options.limit ?? DEFAULT_SCHEDULE_LIMIT,
  });
  return done(jobsTable(jobs, 'No scheduled sends.'), jobs.map(jobJson));
}

/** One message's schedule as its MessageActor knows it, its occurrences, and its Agenda job. */
export async function showSchedule(gateway: CliGateway, options: { readonly messageId: string }): Promise<CommandOutcome> {
  if (!gateway.scheduler) return rejected(NO_SCHEDULER);
  const unknown = rejected(`unknown message ${options.messageId}`);
  const merchantId = await gateway.persistence.directory.messageOwner(options.messageId);
  if (merchantId === null) return unknown;
  const reply = await gateway.router.message(merchantId, options.messageId).ask({ type: 'status', merchantId });
  if (!reply.ok) return unknown;
  const view = messageStatusView(reply.state);
  const jobs = await gateway.scheduler.jobs({ messageId: options.messageId });
  const schedule = view.schedule;
  const summary = fields([
    ['Message', view.message_id],
    ['Merchant', merchantId],
    ['Sending type', view.sending_type],
    ['Status', view.status],
    ...(schedule
      ? ([
          ['Schedule', schedule.state],
          ['Next occurrence', time(schedule.next_occurrence_at)],
          [
            'Occurrences',
            `${schedule.occurrences_total} total, ${schedule.occurrences_dispatched} dispatched, ${schedule.occurrences_remaining} remaining`,
          ],
        ] as const)
      : ([['Schedule', 'none (immediate send)']] as const)),
  ]);
  const text = [
    summary,
    ...(schedule
      ? [
          '',
          table(
            ['OCCURRENCE', 'SCHEDULED AT', 'STATUS', 'DELIVERED', 'FAILED', 'PENDING'],
            view.occurrences.map((o) => [
              String(o.occurrence_index),
              time(o.scheduled_at),
              o.status,
              String(o.delivered),
              String(o.failed),
              String(o.pending),
            ]),
          ),
        ]
      : []),
    '',
    jobsTable(jobs, 'No Agenda job.'),
  ].join('\n');
  const json = {
    message_id: view.message_id,
    merchant_id: merchantId,
    sending_type: view.sending_type,
    status: view.status,
    schedule,
    occurrences: view.occurrences,
    jobs: jobs.map(jobJson),
  };
  return done(text, json);
}

export const SCHEDULE_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['schedules', 'list'],
    args: [],
    usage: `[--merchant <id>] [--limit <n>]`,
    summary: `Agenda jobs of scheduled and recurring sends, soonest first: next run, last run, lock, failure (at most ${DEFAULT_SCHEDULE_LIMIT} unless --limit)`,
    options: { merchant: { type: 'string' }, limit: { type: 'string' } },
    needsScheduler: true,
    prepare(args) {
      const limit = limitOption(args.option('limit'), MAX_SCHEDULE_LIMIT);
      if (typeof limit === 'object') return limit;
      const merchantId = args.option('merchant');
      return (gateway) => listSchedules(gateway, { merchantId, limit });
    },
  },
  {
    words: ['schedules', 'show'],
    args: ['messageId'],
    summary: "a message's schedule and occurrences as its actor knows them, and its Agenda job",
    needsScheduler: true,
    prepare: (args) => (gateway) => showSchedule(gateway, { messageId: args.arg('messageId') }),
  },
];
