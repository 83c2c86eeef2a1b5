import type { DispatchJob } from '../../src/carriers/carrier-protocol.js';
import type { CarrierLink, CarrierReport, LinkStats, ReportHandler, SubmitOutcome } from '../../src/carriers/connector/carrier-link.js';

/**
 * A carrier link for connector runtime tests: it records every submission, answers with `decide` (by default the
 * carrier takes every part, references `<prefix>-<n>`), and sends the reports a test asks for.
 */
export class FakeCarrierLink implements CarrierLink {
  readonly kind = 'fake';
  readonly submissions: DispatchJob[] = [];
  live = true;
  started = false;
  stopped = false;
  windowSize: number;
  decide: (job: DispatchJob) => SubmitOutcome | Promise<SubmitOutcome>;
  private onReport: ReportHandler | null = null;
  private next = 0;

  constructor(
    private readonly prefix: string,
    options: { windowSize?: number; decide?: (job: DispatchJob) => SubmitOutcome | Promise<SubmitOutcome> } = {},
  ) {
    this.windowSize = options.windowSize ?? 4;
    this.decide = options.decide ?? ((job) => this.accept(job.segments));
  }

  /** An `accepted` outcome with a fresh reference per part. */
  accept(parts: number): SubmitOutcome {
    return { kind: 'accepted', references: Array.from({ length: parts }, () => `${this.prefix}-${++this.next}`) };
  }

  start(onReport: ReportHandler): Promise<void> {
    this.onReport = onReport;
    this.started = true;
    return Promise.resolve();
  }

  async submit(job: DispatchJob): Promise<SubmitOutcome> {
    if (!this.live || this.stopped) return { kind: 'retry', delayMs: 200, reason: 'no live bind' };
    this.submissions.push(job);
    return this.decide(job);
  }

  isLive(): boolean {
    return this.live && !this.stopped;
  }

  stats(): LinkStats {
    return { bindsUp: this.isLive() ? 1 : 0, bindsTotal: 1, windowInUse: 0, windowSize: this.windowSize, submitsPerSecond: 0 };
  }

  stop(): Promise<void> {
    this.stopped = true;
    return Promise.resolve();
  }

  /** What the carrier would send: resolves once the runtime published the receipt (the link would answer then). */
  report(
    reference: string,
    state: CarrierReport['state'],
    carrierError: string | null = null,
    occurredAt = Date.now(),
    carrierStatus?: string,
  ): Promise<void> {
    if (!this.onReport) throw new Error('link not started');
    return this.onReport({ reference, state, carrierError, occurredAt, ...(carrierStatus === undefined ? {} : { carrierStatus }) });
  }

  /** The submissions of one dispatch id. */
  submissionsOf(dispatchId: string): number {
    return this.submissions.filter((job) => job.dispatch_id === dispatchId).length;
  }
}
