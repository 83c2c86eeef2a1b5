import { Agenda, type AgendaBackend, type Job } from 'agenda';
import type { ActorRouter } from '../../cluster/actor-router.js';
import { systemClock } from '../../libraries/clock/clock.js';
import type { ScheduleRegistration } from '../../scheduling/schedule-registration.js';

/**
 * Scheduled and recurring occurrences, timed by Agenda on the journal's database. One Agenda job per message wakes
 * it at its next occurrence; the MessageActor dispatches what is due (recording each occurrence as dispatched in
 * its journal before the dispatch leaves, so a duplicate run, a retry or two nodes running Agenda never send one
 * twice) and answers when to come back.
 */
export const OCCURRENCE_JOB = 'message-occurrences';

interface OccurrenceJobData {
  readonly merchantId: string;
  readonly messageId: string;
}

export interface ScheduledJobView {
  readonly jobId: string;
  readonly merchantId: string;
  readonly messageId: string;
  readonly nextRunAt: string | null;
  readonly lastRunAt: string | null;
  readonly lastFinishedAt: string | null;
  readonly lockedAt: string | null;
  readonly failReason: string | null;
}

export interface OccurrenceSchedulerOptions {
  readonly backend: AgendaBackend;
  /**
   * More Agenda instances on their own connections that run the same jobs: Agenda locks due jobs one statement at
   * a time, so a burst of jobs due together is picked up faster by several lockers (their locks skip each other's).
   */
  readonly extraLockers?: readonly AgendaBackend[];
  readonly router: ActorRouter;
  /** This node's name, recorded on the jobs it runs. */
  readonly name: string;
  /** How often Agenda looks for due jobs (PGlite has no LISTEN/NOTIFY, so this is its latency there). */
  readonly processEveryMs: number;
  /** How long until a job whose actor could not answer is tried again. */
  readonly retryDelayMs?: number;
  readonly now?: () => number;
  readonly onError?: (error: unknown) => void;
  readonly onTick?: (sample: { messageId: string; dispatched: number; lagSeconds: number }) => void;
}

export interface OccurrenceScheduler {
  /** Idempotent: a message already registered keeps its job. */
  register(registration: ScheduleRegistration): Promise<void>;
  /** Occurrence jobs by next run, optionally of one message or one merchant. */
  jobs(options?: { readonly messageId?: string; readonly merchantId?: string; readonly limit?: number }): Promise<ScheduledJobView[]>;
  start(): Promise<void>;
  /** Stops running jobs; a scheduler never started (one that only registers or lists jobs) closes its backend. */
  stop(): Promise<void>;
}

const iso = (date: Date | null | undefined): string | null => (date ? date.toISOString() : null);

/** Jobs a node holds locked at once (running or about to run); refilled at every scan (`processEveryMs`). */
const LOCK_LIMIT = 500;

export function createOccurrenceScheduler(options: OccurrenceSchedulerOptions): OccurrenceScheduler {
  const now = options.now ?? ((): number => systemClock.now());
  let started = false;
  const createAgenda = (backend: AgendaBackend): Agenda => {
    const agenda = new Agenda({
      backend,
      name: options.name,
      processEvery: options.processEveryMs,
      maxConcurrency: 64,
      defaultConcurrency: 64,
      // Agenda locks due jobs one statement at a time and runs none before its filling stops: without a limit, 10,000
      // jobs due together would wait for all 10,000 locks. With it, jobs run while the next ones are locked.
      defaultLockLimit: LOCK_LIMIT,
      defaultLockLifetime: 60_000,
    });

    agenda.define<OccurrenceJobData>(
      OCCURRENCE_JOB,
      async (job: Job<OccurrenceJobData>) => {
        const { merchantId, messageId } = job.attrs.data;
        try {
          const reply = await options.router.message(merchantId, messageId).ask({ type: 'dispatch_due' });
          // Agenda saves nextRunAt after the handler: the job comes back at the next occurrence, or never
          job.attrs.nextRunAt = reply.ok && reply.next !== null ? new Date(reply.next) : null;
          // lag: from the earliest occurrence's instant to its dispatch (Agenda's own attributes no longer hold the instant)
          if (reply.ok && reply.dispatched.length > 0)
            options.onTick?.({ messageId, dispatched: reply.dispatched.length, lagSeconds: Math.max(0, (reply.lateMs ?? 0) / 1000) });
        } catch (error) {
          options.onError?.(error);
          job.attrs.nextRunAt = new Date(now() + (options.retryDelayMs ?? 5_000));
        }
      },
      { concurrency: 64, lockLimit: LOCK_LIMIT },
    );
    return agenda;
  };
  const agenda = createAgenda(options.backend);
  const lockers = (options.extraLockers ?? []).map(createAgenda);

  return {
    async register(registration) {
      await agenda
        .create<OccurrenceJobData>(OCCURRENCE_JOB, { merchantId: registration.merchantId, messageId: registration.messageId })
        .unique({ 'data.messageId': registration.messageId }, { insertOnly: true })
        .schedule(new Date(registration.at))
        .save();
    },
    async jobs({ messageId, merchantId, limit = 100 } = {}) {
      const data = { ...(messageId ? { messageId } : {}), ...(merchantId ? { merchantId } : {}) };
      const result = await agenda.queryJobs({
        name: OCCURRENCE_JOB,
        ...(messageId || merchantId ? { data } : {}),
        limit,
        sort: { nextRunAt: 'asc' },
      });
      return result.jobs.map((job) => {
        const data = job.data as OccurrenceJobData;
        return {
          jobId: String(job._id),
          merchantId: data.merchantId,
          messageId: data.messageId,
          nextRunAt: iso(job.nextRunAt),
          lastRunAt: iso(job.lastRunAt),
          lastFinishedAt: iso(job.lastFinishedAt),
          lockedAt: iso(job.lockedAt),
          failReason: job.failReason ?? null,
        };
      });
    },
    async start() {
      started = true;
      await Promise.all([agenda, ...lockers].map((instance) => instance.start()));
    },
    async stop() {
      if (!started) {
        // Agenda only disconnects a backend it started; this one connected when Agenda was created
        await Promise.all([agenda, ...lockers].map((instance) => instance.ready));
        await Promise.all([options.backend, ...(options.extraLockers ?? [])].map((backend) => backend.disconnect()));
        return;
      }
      await Promise.all(
        [agenda, ...lockers].map(async (instance) => {
          await instance.drain(10_000);
          await instance.stop(true);
        }),
      );
    },
  };
}
