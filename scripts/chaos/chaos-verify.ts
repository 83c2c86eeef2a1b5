/**
 * The verifications of a chaos run, as pure functions of what was recorded (every request and its answers) and what
 * was read afterwards (the journal, GET /balance, GET /status, the connector's delivery log, the webhooks received).
 * Each verification says whether it held and, when not, the evidence.
 */
import { terminalTypeOf, type Attempt, type SendRecord } from './chaos-load.js';

/** A message_created event of the journal. */
export interface JournalMessage {
  readonly messageId: string;
  readonly merchantId: string;
  readonly text: string;
  readonly totalCost: number;
  readonly recipients: number;
}

/** A wallet event of the journal that moves money (units). */
export interface JournalMoney {
  readonly merchantId: string;
  readonly type: 'topped_up' | 'charged' | 'refunded';
  readonly chargeId: string | null;
  readonly amount: number;
}

export interface JournalCancel {
  readonly messageId: string;
  readonly refund: number;
}

export interface ConnectorDelivery {
  readonly process: number;
  readonly dispatchId: string;
  readonly taken: boolean;
}

export interface ReceivedWebhook {
  readonly eventId: string;
  readonly type: string;
  readonly messageId: string;
  readonly recipientIndex: number | null;
  /** `data.error_code` of an sms.failed event. */
  readonly errorCode?: string | null;
}

export interface StatusView {
  readonly status: number;
  readonly messageId: string | null;
  readonly totalRecipients: number | null;
}

export interface NodeDeath {
  readonly node: string;
  readonly during: string;
  readonly exit: string;
  /** The lines of its log that say why (uncaught exceptions, fatal logs), shortened. */
  readonly evidence: string;
}

export interface FaultRecord {
  readonly name: string;
  readonly round: number;
  readonly target: string;
  readonly startedAt: number;
  readonly endedAt: number;
  /** Ms from the fault's end to: the first 201 of a send started after it; every merchant served; every node healthy. */
  readonly firstSendMs: number | null;
  readonly allMerchantsMs: number | null;
  readonly healthOkMs: number | null;
  /** simulator-kill: ms from the restart to the first job the new process took. */
  readonly firstDispatchMs: number | null;
}

export interface Evidence {
  readonly records: readonly SendRecord[];
  readonly funding: ReadonlyMap<string, number>;
  readonly journalMessages: readonly JournalMessage[];
  readonly journalMoney: readonly JournalMoney[];
  readonly journalCancels: readonly JournalCancel[];
  /** `<message>:<occurrence>` → occurrence_dispatched events. */
  readonly journalDispatches: ReadonlyMap<string, number>;
  /** merchant → GET /balance in units (null: no 200 answer). */
  readonly balances: ReadonlyMap<string, number | null>;
  readonly statuses: ReadonlyMap<string, StatusView>;
  readonly deliveries: readonly ConnectorDelivery[];
  /** Simulator processes that were SIGKILLed (their dispatch memory lost). */
  readonly killedSimulators: ReadonlySet<number>;
  readonly webhooks: readonly ReceivedWebhook[];
  readonly deaths: readonly NodeDeath[];
  readonly faults: readonly FaultRecord[];
  readonly staleWrites: number;
  readonly journalGaps: number;
  /** For accepted messages with no dispatch: what the database still holds for them (outbox, Agenda). */
  readonly undispatchedDetail?: ReadonlyMap<string, string>;
  /**
   * For recipients with no terminal webhook (`<message>:<recipient>`): what the journal, the outbox, the dead
   * letters and the receiver know of that message, read before the cluster stopped.
   */
  readonly missingWebhookDetail?: ReadonlyMap<string, string>;
}

export interface Verification {
  readonly name: string;
  readonly ok: boolean;
  /** One line of figures, printed whether it held or not. */
  readonly summary: string;
  /** What went wrong, one item each (at most a few printed). */
  readonly failures: readonly string[];
}

export interface WebhookFigures {
  readonly expected: number;
  readonly missing: number;
  readonly deliveries: number;
  readonly distinctEvents: number;
  /** Deliveries of an event id already received, over distinct event ids. */
  readonly duplicateRate: number;
}

const isFailure = (outcome: Attempt['outcome']): boolean => outcome === 503;
const unknownOutcome = (a: Attempt): boolean =>
  a.outcome === 'network' || a.outcome === 'timeout' || (typeof a.outcome === 'number' && a.outcome >= 500 && a.outcome !== 503);
const describeAttempts = (attempts: readonly Attempt[]): string =>
  attempts.map((a) => `${a.node}:${String(a.outcome)}${a.errorCode ? `/${a.errorCode}` : ''}${a.replayed ? '(replayed)' : ''}`).join(' ');

/** Where an instant falls: during a fault, after one (until the next starts), or before any. */
export function faultAt(faults: readonly FaultRecord[], at: number): string {
  const fault = faults.filter((f) => f.startedAt <= at).pop();
  if (!fault) return 'before any fault';
  return `${at <= fault.endedAt ? 'during' : 'after'} ${fault.name}#${fault.round}`;
}

/** What the journal refunded by cancelling each message. */
function cancelRefunds(evidence: Evidence): Map<string, number> {
  const refunds = new Map<string, number>();
  for (const cancel of evidence.journalCancels) refunds.set(cancel.messageId, (refunds.get(cancel.messageId) ?? 0) + cancel.refund);
  return refunds;
}

function byMarker(messages: readonly JournalMessage[]): Map<string, JournalMessage[]> {
  const map = new Map<string, JournalMessage[]>();
  for (const message of messages) map.set(message.text, [...(map.get(message.text) ?? []), message]);
  return map;
}

/** Every 201 is in the journal: the message created, and its charge in its merchant's wallet. */
export function verifyAcceptedInJournal(evidence: Evidence): Verification {
  const messages = new Map(evidence.journalMessages.map((m) => [m.messageId, m]));
  const charges = new Set(evidence.journalMoney.filter((m) => m.type === 'charged').map((m) => m.chargeId));
  const accepted = evidence.records.filter((r) => r.accepted);
  const failures: string[] = [];
  for (const record of accepted) {
    if (!record.accepted) continue;
    const { messageId, totalCost } = record.accepted;
    const message = messages.get(messageId);
    if (!message) failures.push(`${messageId} (${record.marker}) answered 201 but has no message_created in the journal`);
    else if (message.text !== record.marker || message.totalCost !== totalCost)
      failures.push(
        `${messageId}: the journal has "${message.text}" for ${message.totalCost}, the 201 said "${record.marker}" for ${totalCost}`,
      );
    if (!charges.has(messageId))
      failures.push(`${messageId} (${record.marker}) answered 201 but its charge is not in the wallet's journal`);
  }
  return { name: 'every 201 in the journal', ok: failures.length === 0, summary: `${accepted.length} accepted sends`, failures };
}

/** Every 201 answers GET /status with its recipients. */
export function verifyAcceptedInStatus(evidence: Evidence): Verification {
  const accepted = evidence.records.filter((r) => r.accepted);
  const failures: string[] = [];
  for (const record of accepted) {
    if (!record.accepted) continue;
    const { messageId, totalRecipients } = record.accepted;
    const view = evidence.statuses.get(messageId);
    if (!view) failures.push(`${messageId}: GET /status not asked`);
    else if (view.status !== 200 || view.messageId !== messageId || view.totalRecipients !== totalRecipients) {
      failures.push(
        `${messageId}: GET /status answered ${view.status} (message ${String(view.messageId)}, ${String(view.totalRecipients)} recipients; 201 said ${totalRecipients})`,
      );
    }
  }
  return { name: 'every 201 in GET /status', ok: failures.length === 0, summary: `${accepted.length} asked`, failures };
}

/**
 * Every 503 applied nothing. A send answered 503 and never accepted has no message in the journal; a send with an
 * Idempotency-Key accepted after a 503 has exactly one, and its 201 is not a replay unless an earlier attempt's
 * outcome was unknown (a broken connection or a timeout may have been applied). A cancel answered 503 did not
 * refund: what the journal refunded equals what the 200 answers said.
 */
export function verifyFailuresUnapplied(evidence: Evidence): Verification {
  const journal = byMarker(evidence.journalMessages);
  const failures: string[] = [];
  let answered503 = 0;
  for (const record of evidence.records) {
    const failed = record.attempts.filter((a) => isFailure(a.outcome));
    answered503 += failed.length;
    const first = failed[0];
    if (!first) continue;
    const found = journal.get(record.marker) ?? [];
    const during = faultAt(evidence.faults, first.startedAt);
    if (!record.accepted) {
      if (found.length > 0)
        failures.push(
          `[${during}] ${record.marker} answered ${describeAttempts(record.attempts)}, yet the journal has ${found.map((m) => m.messageId).join(', ')}`,
        );
      continue;
    }
    const acceptedAt = record.attempts.findIndex((a) => a.outcome === 201);
    const accepting = record.attempts[acceptedAt];
    const before = record.attempts.slice(0, acceptedAt);
    const firstFailed = before.findIndex((a) => isFailure(a.outcome));
    // a replay after a 503 means an earlier attempt was applied; only an attempt of unknown outcome may have been
    const ambiguous = before.some(unknownOutcome);
    if (accepting?.replayed && firstFailed >= 0 && !ambiguous) {
      failures.push(
        `[${during}] ${record.marker}: ${describeAttempts(record.attempts)}: the 201 replays ${record.accepted.messageId}, created by an attempt answered 503`,
      );
    }
  }
  const refundedByMessage = cancelRefunds(evidence);
  for (const record of evidence.records) {
    const cancel = record.cancel;
    if (!cancel || !record.accepted) continue;
    const failed = cancel.attempts.filter((a) => isFailure(a.outcome));
    answered503 += failed.length;
    const journalRefund = refundedByMessage.get(record.accepted.messageId) ?? 0;
    const first = failed[0];
    if (first && journalRefund > (cancel.refunded ?? 0) && !cancel.attempts.some(unknownOutcome)) {
      failures.push(
        `[${faultAt(evidence.faults, first.startedAt)}] cancel of ${record.accepted.messageId}: ${describeAttempts(cancel.attempts)}: the journal refunded ${journalRefund}, the 200 said ${cancel.refunded}`,
      );
    }
  }
  return { name: 'every 503 unapplied', ok: failures.length === 0, summary: `${answered503} answers 503`, failures };
}

/** One request, one message: no marker has two messages in the journal (the Idempotency-Key held; nothing doubled). */
export function verifyNoDuplicateMessages(evidence: Evidence): Verification {
  const failures: string[] = [];
  for (const [marker, messages] of byMarker(evidence.journalMessages)) {
    if (messages.length > 1) failures.push(`${marker}: ${messages.length} messages (${messages.map((m) => m.messageId).join(', ')})`);
  }
  return {
    name: 'no send created twice',
    ok: failures.length === 0,
    summary: `${evidence.journalMessages.length} messages in the journal`,
    failures,
  };
}

/**
 * Each wallet equals funding − the cost of the accepted sends (and of the sends whose answer was lost, when the
 * journal shows them applied) + the refunds the cancels answered, exactly (1/10 000), by GET /balance and by the
 * journal's own sum.
 */
export function verifyWallets(evidence: Evidence): Verification {
  const journal = byMarker(evidence.journalMessages);
  const refunds = cancelRefunds(evidence);
  const failures: string[] = [];
  const merchants = [...evidence.funding.keys()];
  for (const merchantId of merchants) {
    const mine = evidence.records.filter((r) => r.merchant.merchantId === merchantId);
    let expected = evidence.funding.get(merchantId) ?? 0;
    const counted = new Set<string>();
    for (const record of mine) {
      if (record.accepted) {
        expected -= record.accepted.totalCost;
        counted.add(record.accepted.messageId);
        const cancel = record.cancel;
        // a cancel with no 200 may still have been applied when some attempt's outcome is unknown
        if (cancel)
          expected += cancel.refunded ?? (cancel.attempts.some(unknownOutcome) ? (refunds.get(record.accepted.messageId) ?? 0) : 0);
        continue;
      }
      // no 201: it may still have been applied when some attempt's outcome is unknown (not when all were 503s)
      if (!record.attempts.some(unknownOutcome)) continue;
      for (const message of journal.get(record.marker) ?? []) {
        expected -= message.totalCost;
        counted.add(message.messageId);
      }
    }
    const money = evidence.journalMoney.filter((m) => m.merchantId === merchantId);
    const folded = money.reduce((sum, m) => sum + (m.type === 'charged' ? -m.amount : m.amount), 0);
    const balance = evidence.balances.get(merchantId) ?? null;
    if (balance !== expected || folded !== expected) {
      const unexplained = money
        .filter((m) => m.type === 'charged' && m.chargeId !== null && !counted.has(m.chargeId))
        .map((m) => {
          const message = evidence.journalMessages.find((j) => j.messageId === m.chargeId);
          const record = message ? mine.find((r) => r.marker === message.text) : undefined;
          return `${String(m.chargeId)} ${m.amount} (${record ? describeAttempts(record.attempts) : 'no request of this run'})`;
        });
      failures.push(
        `${merchantId}: expected ${expected}, GET /balance ${String(balance)}, journal ${folded}` +
          (unexplained.length > 0 ? `; charges no answer accounts for: ${unexplained.slice(0, 5).join(', ')}` : ''),
      );
    }
  }
  return {
    name: 'wallets exact (funding − accepted + refunds)',
    ok: failures.length === 0,
    summary: `${merchants.length} wallets`,
    failures,
  };
}

/**
 * Every occurrence dispatched at most once (journal: one occurrence_dispatched per message and occurrence; connector:
 * each dispatch id sent to the carrier once, except a job redelivered to a new simulator process after the one that
 * took it was SIGKILLed, as the simulator's memory is not durable), and every due occurrence dispatched.
 */
export function verifyDispatchedOnce(evidence: Evidence): { verification: Verification; redeliveredAfterConnectorCrash: number } {
  const failures: string[] = [];
  for (const [occurrence, count] of evidence.journalDispatches) {
    if (count > 1) failures.push(`${occurrence}: dispatched ${count} times in the journal`);
  }
  const takes = new Map<string, number[]>();
  for (const d of evidence.deliveries) if (d.taken) takes.set(d.dispatchId, [...(takes.get(d.dispatchId) ?? []), d.process]);
  let afterCrash = 0;
  for (const [dispatchId, processes] of takes) {
    if (processes.length < 2) continue;
    const excused = processes.slice(0, -1).every((p, i) => evidence.killedSimulators.has(p) && (processes[i + 1] ?? 0) > p);
    if (excused) afterCrash += processes.length - 1;
    else failures.push(`${dispatchId}: sent to the carrier ${processes.length} times (simulator processes ${processes.join(', ')})`);
  }
  const ofRun = new Set(evidence.journalMessages.map((m) => m.messageId));
  const refunds = cancelRefunds(evidence);
  let expected = 0;
  for (const record of evidence.records) {
    const accepted = record.accepted;
    if (!accepted) continue;
    const id = accepted.messageId;
    // cancelled in time: by the answer, or by the journal when the answer was lost
    const cancelled = (record.cancel?.refunded ?? 0) > 0 || (refunds.get(id) ?? 0) > 0;
    const dispatched = evidence.journalDispatches.get(`${id}:0`) ?? 0;
    if (cancelled) {
      if (dispatched > 0) failures.push(`${id}: cancelled with a refund, yet dispatched`);
      continue;
    }
    expected++;
    if (dispatched === 0) {
      const at = record.scheduledFor ?? record.attempts.find((a) => a.outcome === 201)?.endedAt ?? 0;
      failures.push(
        `[${faultAt(evidence.faults, at)}] ${id} (${record.kind}${record.scheduledFor ? ` for ${new Date(record.scheduledFor).toISOString()}` : ''}; ${describeAttempts(record.attempts)}) accepted but never dispatched${evidence.undispatchedDetail?.has(id) ? `; ${evidence.undispatchedDetail.get(id) ?? ''}` : ''}`,
      );
    }
    for (let r = 0; r < accepted.totalRecipients; r++) {
      if (dispatched > 0 && !takes.has(`${id}:0:${r}`))
        failures.push(`${id}:0:${r} dispatched in the journal, never reached the connector`);
    }
  }
  for (const dispatchId of takes.keys()) {
    const messageId = dispatchId.split(':')[0] ?? '';
    if (!ofRun.has(messageId)) failures.push(`${dispatchId} reached the connector but is no message of the journal`);
  }
  return {
    verification: {
      name: 'every occurrence dispatched at most once (and every due one dispatched)',
      ok: failures.length === 0,
      summary: `${expected} occurrences due, ${takes.size} dispatch ids taken by the connector, ${afterCrash} taken again by a restarted simulator after its predecessor was SIGKILLed`,
      failures,
    },
    redeliveredAfterConnectorCrash: afterCrash,
  };
}

const TERMINAL = new Set(['sms.delivered', 'sms.failed']);

/** The error code of the gateway's own failure of a recipient with no final receipt (docs/carrier-protocol.md §7). */
const RECEIPT_TIMEOUT_CODE = '1503';

/**
 * `<message>:<recipient>` → the terminal event type expected for every recipient of every dispatched message: the
 * number's outcome, or, for a recipient whose dispatch was last taken by a simulator process that was SIGKILLed
 * (its planned receipts died with it), either that or the receipt timeout's sms.failed 1503.
 */
function expectedTerminalEvents(
  evidence: Pick<Evidence, 'records' | 'journalDispatches' | 'deliveries' | 'killedSimulators'>,
): Map<string, { type: string; orphaned: boolean }> {
  const lastTaker = new Map<string, number>();
  for (const delivery of evidence.deliveries)
    if (delivery.taken) lastTaker.set(delivery.dispatchId, Math.max(lastTaker.get(delivery.dispatchId) ?? 0, delivery.process));
  const expected = new Map<string, { type: string; orphaned: boolean }>();
  for (const record of evidence.records) {
    const id = record.accepted?.messageId;
    if (!id || (evidence.journalDispatches.get(`${id}:0`) ?? 0) === 0) continue;
    record.recipients.forEach((phone, r) => {
      const taker = lastTaker.get(`${id}:0:${r}`);
      expected.set(`${id}:${r}`, { type: terminalTypeOf(phone), orphaned: taker !== undefined && evidence.killedSimulators.has(taker) });
    });
  }
  return expected;
}

/** The recipients (`<message>:<recipient>`) no terminal webhook reached so far. */
export function missingTerminalEvents(
  evidence: Pick<Evidence, 'records' | 'journalDispatches' | 'webhooks' | 'deliveries' | 'killedSimulators'>,
): { messageId: string; recipient: number; type: string }[] {
  const received = new Set(evidence.webhooks.filter((w) => TERMINAL.has(w.type)).map((w) => `${w.messageId}:${String(w.recipientIndex)}`));
  return [...expectedTerminalEvents(evidence)].flatMap(([key, { type }]) => {
    if (received.has(key)) return [];
    const at = key.lastIndexOf(':');
    return [{ messageId: key.slice(0, at), recipient: Number(key.slice(at + 1)), type }];
  });
}

/** Every recipient of every dispatched occurrence got one terminal webhook of the expected type; duplicates counted. */
export function verifyWebhooks(evidence: Evidence): { verification: Verification; figures: WebhookFigures } {
  const failures: string[] = [];
  const expected = expectedTerminalEvents(evidence);
  const seen = new Set<string>();
  const terminalIds = new Map<string, Set<string>>();
  const terminalTypes = new Map<string, string>();
  const timedOut = new Set<string>();
  for (const webhook of evidence.webhooks) {
    seen.add(webhook.eventId);
    if (!TERMINAL.has(webhook.type)) continue;
    const key = `${webhook.messageId}:${String(webhook.recipientIndex)}`;
    terminalIds.set(key, (terminalIds.get(key) ?? new Set()).add(webhook.eventId));
    terminalTypes.set(key, webhook.type);
    if (webhook.type === 'sms.failed' && webhook.errorCode === RECEIPT_TIMEOUT_CODE) timedOut.add(key);
  }
  let missing = 0;
  let endedByTimeout = 0;
  for (const [key, { type, orphaned }] of expected) {
    const ids = terminalIds.get(key);
    // a final receipt lost with its killed connector: the 24-hour rule (shortened for the run) ends the recipient;
    // a recipient ended by it whose connector was not killed lost a receipt on the way
    if (ids?.size === 1 && timedOut.has(key)) {
      if (orphaned) endedByTimeout++;
      else
        failures.push(
          `${key}: sms.failed ${RECEIPT_TIMEOUT_CODE} (no final receipt in time), expected ${type}; the connector that took it was not killed`,
        );
      continue;
    }
    if (!ids) {
      missing++;
      const detail = evidence.missingWebhookDetail?.get(key);
      failures.push(`${key}: no terminal webhook (expected ${type})${detail ? `\n${detail}` : ''}`);
    } else if (ids.size > 1) failures.push(`${key}: ${ids.size} distinct terminal events (${[...ids].join(', ')})`);
    else if (terminalTypes.get(key) !== type) failures.push(`${key}: ${String(terminalTypes.get(key))}, expected ${type}`);
  }
  const deliveries = evidence.webhooks.length;
  const figures: WebhookFigures = {
    expected: expected.size,
    missing,
    deliveries,
    distinctEvents: seen.size,
    duplicateRate: seen.size === 0 ? 0 : (deliveries - seen.size) / seen.size,
  };
  return {
    verification: {
      name: 'webhooks: none missing, one terminal event per recipient',
      ok: failures.length === 0,
      summary:
        `${expected.size} terminal events expected, ${missing} missing; ${deliveries} deliveries of ${seen.size} events, duplicate rate ${(figures.duplicateRate * 100).toFixed(2)} %; ` +
        `${endedByTimeout} ended by the receipt timeout (their final receipt died with a SIGKILLed simulator)`,
      failures,
    },
    figures,
  };
}

/**
 * A node that died or froze holding a command leaves its outcome unknown: other nodes answer 500/1401, or the key
 * check's 500 `{detail}` (docs/cluster.md). So does the broker killed while a node's request to another node was on
 * its way: the owner may have taken it before the broker died, and only its answer was lost (a request made once
 * the node has seen the broker go is refused unsent, 503). Only then is a 500 an answer of the fault: one the
 * attempt started in, or one that began while it was under way (a request sent just before a node froze waits on
 * it, and is answered during the freeze).
 */
function unknownOutcomeOfFault(attempt: Attempt, faults: readonly FaultRecord[]): boolean {
  const inDoubt = (label: string): boolean => / (node-kill|node-freeze|nats-kill)#/.test(` ${label}`);
  if (!inDoubt(faultAt(faults, attempt.startedAt)) && !inDoubt(faultAt(faults, attempt.endedAt))) return false;
  return attempt.outcome === 500 && (attempt.errorCode === '1401' || (attempt.detail ?? '').includes('Could not verify the API key'));
}

/**
 * A dependency's fault is a 503 (1402) for what needs it, never another 5xx (beside a node's death or freeze, or the
 * broker's death under a request between nodes: 500, outcome unknown).
 */
export function verifyNoOther5xx(evidence: Evidence): Verification {
  // grouped by fault and answer: the same answer repeats by the hundred
  const groups = new Map<string, number>();
  let count = 0;
  let unknown = 0;
  for (const record of evidence.records) {
    for (const attempt of [...record.attempts, ...(record.cancel?.attempts ?? [])]) {
      if (typeof attempt.outcome !== 'number' || attempt.outcome < 500 || attempt.outcome === 503) continue;
      if (unknownOutcomeOfFault(attempt, evidence.faults)) {
        unknown++;
        continue;
      }
      count++;
      const group = `[${faultAt(evidence.faults, attempt.startedAt)}] ${attempt.outcome} ${(attempt.detail ?? '').replace(/"request_id":"[^"]*"/, '"request_id":…')}`;
      groups.set(group, (groups.get(group) ?? 0) + 1);
    }
  }
  const failures = [...groups].map(([group, n]) => `${n} × ${group}`);
  return {
    name: 'no 5xx but 503 (but 500, outcome unknown, beside a node killed or frozen or the broker killed)',
    ok: count === 0,
    summary: `${count} answers 5xx other than 503; ${unknown} answers 500 of unknown outcome beside a node killed or frozen or the broker killed`,
    failures,
  };
}

/** No node exited that the run did not kill. */
export function verifyNodesSurvived(evidence: Evidence): Verification {
  return {
    name: 'nodes survive the faults they were not the target of',
    ok: evidence.deaths.length === 0,
    summary: `${evidence.deaths.length} unexpected exits`,
    failures: evidence.deaths.map((d) => `${d.node} exited (${d.exit}) during ${d.during}: ${d.evidence}`),
  };
}

/** Every fault was recovered from within the window: every node healthy and every merchant served again. */
export function verifyRecovered(evidence: Evidence): Verification {
  const failures = evidence.faults
    .filter((f) => f.allMerchantsMs === null || f.healthOkMs === null)
    .map(
      (f) =>
        `${f.name} (round ${f.round}, ${f.target}): ${f.healthOkMs === null ? 'health never ok' : ''}${f.healthOkMs === null && f.allMerchantsMs === null ? ', ' : ''}${f.allMerchantsMs === null ? 'some merchant never served again' : ''}`,
    );
  return { name: 'every fault recovered from', ok: failures.length === 0, summary: `${evidence.faults.length} faults`, failures };
}

/** No journal record written without the current lease of its shard; every key's sequence 1..n. */
export function verifyFencing(evidence: Evidence): Verification {
  const failures: string[] = [];
  if (evidence.staleWrites > 0)
    failures.push(`${evidence.staleWrites} journal records written by a node without the shard's current lease`);
  if (evidence.journalGaps > 0) failures.push(`${evidence.journalGaps} journal keys whose sequence numbers have gaps`);
  return {
    name: 'fencing: no stale-owner write, no gap',
    ok: failures.length === 0,
    summary: `${evidence.staleWrites} stale writes, ${evidence.journalGaps} gaps`,
    failures,
  };
}

export interface VerificationResult {
  readonly verifications: readonly Verification[];
  readonly webhooks: WebhookFigures;
  readonly redeliveredAfterConnectorCrash: number;
}

export function verifyAll(evidence: Evidence): VerificationResult {
  const dispatch = verifyDispatchedOnce(evidence);
  const webhooks = verifyWebhooks(evidence);
  return {
    verifications: [
      verifyAcceptedInJournal(evidence),
      verifyAcceptedInStatus(evidence),
      verifyFailuresUnapplied(evidence),
      verifyNoDuplicateMessages(evidence),
      verifyNoOther5xx(evidence),
      verifyWallets(evidence),
      dispatch.verification,
      webhooks.verification,
      verifyNodesSurvived(evidence),
      verifyRecovered(evidence),
      verifyFencing(evidence),
    ],
    webhooks: webhooks.figures,
    redeliveredAfterConnectorCrash: dispatch.redeliveredAfterConnectorCrash,
  };
}
