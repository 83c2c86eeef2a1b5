/**
 * What a chaos run does: how much load, which faults in which order, how long each lasts. Two profiles: `short`
 * (part of `npm test`, a few minutes on two cores) and `long` (the figures of docs/reliability.md).
 */

/** In the order a run makes them: the node killed last needs no restart before the verifications in the short profile. */
export const FAULT_NAMES = ['node-freeze', 'nats-kill', 'postgres-restart', 'postgres-outage', 'simulator-kill', 'node-kill'] as const;
export type FaultName = (typeof FAULT_NAMES)[number];

export const FAULT_DESCRIPTIONS: Readonly<Record<FaultName, string>> = {
  'node-kill': 'a node SIGKILLed, restarted once the survivors serve its shards',
  'node-freeze': 'a node SIGSTOPped past its lease TTL, then SIGCONTed',
  'nats-kill': 'nats-server SIGKILLed, started again on the same store after an outage',
  'postgres-restart': 'PostgreSQL fast restart (pg_ctl -m fast stop, then start)',
  'postgres-outage': 'PostgreSQL stopped (fast) for an outage, then started',
  'simulator-kill': 'the simulator connector SIGKILLed, started again after an outage',
};

export type ProfileName = 'short' | 'long';

export interface ChaosProfile {
  readonly name: ProfileName;
  readonly nodes: number;
  readonly merchants: number;
  /** Sends started per second (an open loop: a request hanging on a frozen node does not slow the others). */
  readonly ratePerSecond: number;
  /** Load before the first fault, and after each recovery before the next fault. */
  readonly steadyMs: number;
  /** The faults, in order; the whole list runs `rounds` times. */
  readonly faults: readonly FaultName[];
  readonly rounds: number;
  /** How long a node stays SIGSTOPped (past its lease TTL). */
  readonly freezeMs: number;
  readonly natsDownMs: number;
  readonly postgresOutageMs: number;
  readonly simulatorDownMs: number;
  /** Scheduled sends are for the first whole minute (the API's resolution) at least this far ahead. */
  readonly scheduleLeadMs: number;
  /** The client gives up on one request after this long (its outcome is then unknown). */
  readonly requestTimeoutMs: number;
  /** A fault not recovered from (health ok, every merchant served) within this long fails the run. */
  readonly recoveryWindowMs: number;
  /** After the load: how long to wait at most for every dispatch and webhook. */
  readonly settleMs: number;
  /**
   * The nodes' RECEIPT_TIMEOUT_MS (the 24-hour rule, docs/carrier-protocol.md §7), short enough to fall inside the
   * run: a simulator SIGKILLed while it held a dispatch's planned receipts never sends the final one, and the
   * gateway ends that recipient with sms.failed 1503 once this has passed. Long enough that no receipt merely slowed
   * by a fault comes after it.
   */
  readonly receiptTimeoutMs: number;
  readonly leaseTtlMs: number;
  readonly failoverDeadlineMs: number;
}

const LEASE_TTL_MS = 5_000;

export const PROFILES: Readonly<Record<ProfileName, ChaosProfile>> = {
  short: {
    name: 'short',
    nodes: 3,
    merchants: 4,
    ratePerSecond: 8,
    steadyMs: 1_000,
    faults: FAULT_NAMES,
    rounds: 1,
    freezeMs: LEASE_TTL_MS + 3_000,
    natsDownMs: 3_000,
    postgresOutageMs: 10_000,
    simulatorDownMs: 2_000,
    scheduleLeadMs: 5_000,
    requestTimeoutMs: 30_000,
    recoveryWindowMs: 60_000,
    settleMs: 90_000,
    receiptTimeoutMs: 45_000,
    leaseTtlMs: LEASE_TTL_MS,
    failoverDeadlineMs: 15_000,
  },
  long: {
    name: 'long',
    nodes: 3,
    merchants: 12,
    ratePerSecond: 25,
    steadyMs: 15_000,
    faults: FAULT_NAMES,
    rounds: 2,
    freezeMs: 20_000,
    natsDownMs: 30_000,
    postgresOutageMs: 30_000,
    simulatorDownMs: 10_000,
    scheduleLeadMs: 60_000,
    requestTimeoutMs: 45_000,
    recoveryWindowMs: 90_000,
    settleMs: 180_000,
    receiptTimeoutMs: 120_000,
    leaseTtlMs: LEASE_TTL_MS,
    failoverDeadlineMs: 15_000,
  },
};

/** `a,b,c` into fault names, or a clear error naming the known ones. */
export function parseFaultList(raw: string): FaultName[] {
  const names = raw
    .split(',')
    .map((name) => name.trim())
    .filter((name) => name !== '');
  const unknown = names.filter((name) => !(FAULT_NAMES as readonly string[]).includes(name));
  if (unknown.length > 0) throw new Error(`unknown fault ${unknown.join(', ')}; known: ${FAULT_NAMES.join(', ')}`);
  return names as FaultName[];
}

export function profileNamed(raw: string): ChaosProfile {
  if (raw !== 'short' && raw !== 'long') throw new Error(`unknown profile ${JSON.stringify(raw)}; known: short, long`);
  return PROFILES[raw];
}
