import type { DispatchJob } from '../carrier-protocol.js';

/**
 * The seam between the connector runtime (NATS side: dispatch jobs, the durable dispatch and correlation records,
 * receipts, presence) and one way of reaching a carrier (an SMPP account, a Kannel smsbox). A link knows the
 * carrier's protocol and nothing of NATS; the runtime knows NATS and nothing of SMPP or HTTP.
 */

/** What became of one submission attempt of one dispatch job (every part of its text). */
export type SubmitOutcome =
  /** The carrier took every part; `references` are its message ids, one per part in part order. */
  | { readonly kind: 'accepted'; readonly references: readonly string[] }
  /**
   * The carrier refused the message for good (e.g. an SMPP permanent error status). `carrierStatus` is the carrier's
   * own words for it (e.g. `smpp:0x0000000b ESME_RINVDSTADR`), kept as the recipient's `carrier_status`; parts
   * accepted before the refusal are in `acceptedReferences`.
   */
  | {
      readonly kind: 'rejected';
      readonly carrierStatus: string;
      readonly message: string;
      readonly acceptedReferences: readonly string[];
    }
  /**
   * Not handed over now (no live bind, throttled, queue full, no response in time): the job goes back to the stream
   * after `delayMs`, for this connector or another one. `uncertain`: the carrier may have taken (part of) it already
   * (a submission left unanswered, or earlier parts accepted), so sending it again can deliver it twice; the
   * runtime then follows its uncertain-submission setting (resend, or hold and wait for the carrier's report).
   */
  | { readonly kind: 'retry'; readonly delayMs: number; readonly reason: string; readonly uncertain?: boolean };

/** A carrier's state for one submitted part, read from its delivery report. */
export type PartState = 'accepted' | 'enroute' | 'delivered' | 'undelivered' | 'expired' | 'rejected' | 'deleted' | 'unknown';

export const FINAL_PART_STATES: ReadonlySet<PartState> = new Set(['delivered', 'undelivered', 'expired', 'rejected', 'deleted', 'unknown']);

/** One delivery report from the carrier, about one part it accepted earlier. */
export interface CarrierReport {
  /** The carrier's message id of the part (what `accepted.references` held). */
  readonly reference: string;
  readonly state: PartState;
  /** The carrier's own error code (SMPP `err:` / network_error_code), for the merchant's error message. */
  readonly carrierError: string | null;
  /** When it happened at the carrier (epoch ms); the connector's clock when the report does not say. */
  readonly occurredAt: number;
  /** The carrier's own words for it (`smpp:UNDELIV err:001`), kept as the recipient's `carrier_status`. */
  readonly carrierStatus?: string;
}

/** Live figures a link reports for presence (`carriers status`, metrics, routing). */
export interface LinkStats {
  /** Sessions (SMPP binds, HTTP connections to smsbox) able to submit now. */
  readonly bindsUp: number;
  readonly bindsTotal: number;
  /** Submissions sent and not yet answered, and how many may be at once. */
  readonly windowInUse: number;
  readonly windowSize: number;
  /** Submissions answered in the last second. */
  readonly submitsPerSecond: number;
}

export interface CarrierLink {
  /** Kind shown in presence and logs: `smpp`, `kannel`. */
  readonly kind: string;
  /** Opens the sessions; reports arriving from then on go to `onReport`. Resolves once it tried (a bind may be down). */
  start(onReport: ReportHandler): Promise<void>;
  /** Submits every part of the job's text, in the job's encoding. Never throws: failures are outcomes. */
  submit(job: DispatchJob): Promise<SubmitOutcome>;
  /** True while at least one session can submit. */
  isLive(): boolean;
  stats(): LinkStats;
  /** Stops submitting, waits (bounded) for responses outstanding, closes the sessions (SMPP: unbind). */
  stop(): Promise<void>;
}

/**
 * Called for every delivery report. The link acknowledges the report to the carrier (SMPP `deliver_sm_resp`,
 * HTTP 200 to Kannel) only after the returned promise resolves, i.e. after the receipt is durably published, so a
 * connector dying loses none; a rejection makes the link answer with a temporary error so the carrier sends again.
 */
export type ReportHandler = (report: CarrierReport) => Promise<void>;
