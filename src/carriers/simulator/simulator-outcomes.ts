import type { CarrierStatus } from '../carrier-outcomes.js';
import type { DispatchJob } from '../carrier-protocol.js';

/**
 * The sandbox simulator's outcomes (every recipient outcome the gateway knows, slow, out-of-order and duplicate
 * receipts included; the table in docs/carrier-protocol.md): the last two digits of the recipient's number choose which receipts the simulated
 * carrier sends back and when. Pure: the connector turns a plan into timers and publishes.
 */

export interface SimulatorDelays {
  /** Delay between two consecutive receipts of one dispatch. */
  readonly stepDelayMs: number;
  /** Extra delay before the final receipt of the "slow" outcome. */
  readonly slowDelayMs: number;
}

export interface PlannedReceipt {
  readonly status: CarrierStatus;
  /** When to publish it: milliseconds after the connector took the job. Plans are in publish order. */
  readonly afterMs: number;
  /**
   * When the reported event happened at the simulated carrier (the receipt's `occurred_at`), milliseconds after
   * the job was taken. Equal to `afterMs` except in the out-of-order outcome, where events happen in order but
   * their receipts arrive reversed.
   */
  readonly occurredAfterMs: number;
  /**
   * `n` of the receipt id `<dispatch_id>:<n>`: the receipt's 0-based position in the plan, or, for an exact
   * duplicate, the position of the receipt it repeats.
   */
  readonly receiptNumber: number;
  readonly errorCode?: string;
  readonly errorMessage?: string;
}

export type SimulatorOutcome =
  | 'delivered'
  | 'undelivered'
  | 'rejected'
  | 'expired'
  | 'delivery_unknown'
  | 'partially_delivered'
  | 'failed_with_code'
  | 'failed_without_code'
  | 'no_final_receipt'
  | 'slow'
  | 'out_of_order'
  | 'duplicates';

/** Last two digits → outcome; every other ending is `delivered`. */
export const SIMULATOR_ENDINGS: Readonly<Record<string, SimulatorOutcome>> = Object.freeze({
  '89': 'duplicates',
  '90': 'undelivered',
  '91': 'rejected',
  '92': 'expired',
  '93': 'delivery_unknown',
  '94': 'partially_delivered',
  '95': 'failed_with_code',
  '96': 'failed_without_code',
  '97': 'no_final_receipt',
  '98': 'slow',
  '99': 'out_of_order',
});

/** What the failed-with-code outcome (ending 95) reports. */
export const SIMULATED_FAILURE = { errorCode: '1502', errorMessage: 'Subscriber unreachable' } as const;

interface Step {
  readonly status: CarrierStatus;
  readonly errorCode?: string;
  readonly errorMessage?: string;
}

const DELIVERED_STEPS: readonly Step[] = [{ status: 'processing' }, { status: 'accepted' }, { status: 'enroute' }, { status: 'delivered' }];

/** The statuses each outcome reports, in the order the events happen at the carrier. */
const STEPS: Readonly<Record<SimulatorOutcome, readonly Step[]>> = {
  delivered: DELIVERED_STEPS,
  undelivered: [{ status: 'processing' }, { status: 'accepted' }, { status: 'undelivered' }],
  rejected: [{ status: 'processing' }, { status: 'rejected' }],
  expired: [{ status: 'processing' }, { status: 'accepted' }, { status: 'enroute' }, { status: 'expired' }],
  delivery_unknown: [{ status: 'processing' }, { status: 'accepted' }, { status: 'delivery_unknown' }],
  partially_delivered: [{ status: 'processing' }, { status: 'accepted' }, { status: 'partially_delivered' }],
  failed_with_code: [{ status: 'processing' }, { status: 'failed', ...SIMULATED_FAILURE }],
  failed_without_code: [{ status: 'processing' }, { status: 'failed' }],
  no_final_receipt: [{ status: 'processing' }, { status: 'accepted' }],
  slow: DELIVERED_STEPS,
  out_of_order: DELIVERED_STEPS,
  duplicates: DELIVERED_STEPS,
};

/** The outcome the simulator gives a number (E.164): chosen by its last two digits. */
export function outcomeFor(to: string): SimulatorOutcome {
  return SIMULATOR_ENDINGS[to.slice(-2)] ?? 'delivered';
}

function withError(step: Step): Pick<PlannedReceipt, 'errorCode' | 'errorMessage'> {
  return {
    ...(step.errorCode === undefined ? {} : { errorCode: step.errorCode }),
    ...(step.errorMessage === undefined ? {} : { errorMessage: step.errorMessage }),
  };
}

export function planFor(job: Pick<DispatchJob, 'to'>, delays: SimulatorDelays): PlannedReceipt[] {
  const outcome = outcomeFor(job.to);
  const steps = STEPS[outcome];
  const step = delays.stepDelayMs;
  // event i happens at i × step
  const inOrder = steps.map((s, i) => ({ ...s, at: i * step }));

  switch (outcome) {
    case 'slow':
      return inOrder.map((s, i) => {
        const at = i === inOrder.length - 1 ? s.at + delays.slowDelayMs : s.at;
        return { status: s.status, afterMs: at, occurredAfterMs: at, receiptNumber: i, ...withError(s) };
      });
    case 'out_of_order': {
      // the events happen in order; their receipts are held back and arrive newest first, one step apart,
      // starting when the last event happened
      const last = inOrder[inOrder.length - 1]?.at ?? 0;
      return [...inOrder].reverse().map((s, i) => ({
        status: s.status,
        afterMs: last + i * step,
        occurredAfterMs: s.at,
        receiptNumber: i,
        ...withError(s),
      }));
    }
    case 'duplicates':
      // each receipt three times: twice with the same receipt id, once more with a receipt id of its own
      return inOrder.flatMap((s, i) => {
        const first = 3 * i;
        const copy = (receiptNumber: number): PlannedReceipt => ({
          status: s.status,
          afterMs: s.at,
          occurredAfterMs: s.at,
          receiptNumber,
          ...withError(s),
        });
        return [copy(first), copy(first), copy(first + 2)];
      });
    default:
      return inOrder.map((s, i) => ({ status: s.status, afterMs: s.at, occurredAfterMs: s.at, receiptNumber: i, ...withError(s) }));
  }
}
