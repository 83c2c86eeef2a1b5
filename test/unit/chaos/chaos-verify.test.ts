import { expect } from 'chai';
import type { Attempt, SendRecord } from '../../../scripts/chaos/chaos-load.js';
import {
  faultAt,
  verifyAcceptedInJournal,
  verifyAcceptedInStatus,
  verifyDispatchedOnce,
  verifyFailuresUnapplied,
  verifyNoDuplicateMessages,
  verifyNoOther5xx,
  verifyNodesSurvived,
  verifyRecovered,
  verifyWallets,
  verifyAll,
  verifyWebhooks,
  type Evidence,
  type FaultRecord,
  type JournalMessage,
} from '../../../scripts/chaos/chaos-verify.js';

/**
 * The chaos suite's verifications judge recorded requests against what the journal, the API, the connector and the
 * webhook receiver show. Each is given a consistent run (it holds) and the one fault it exists to catch (it fails).
 */

const MERCHANT = { merchantId: 'mer_a', apiKey: 'sk_test_a', timezone: 'Africa/Kinshasa' };
const FUNDING = 10_000_000;

const at = (outcome: Attempt['outcome'], extra: Partial<Attempt> = {}): Attempt => ({
  node: 'node-1',
  startedAt: 1_000,
  endedAt: 1_010,
  outcome,
  ...extra,
});

function send(
  index: number,
  attempts: Attempt[],
  options: { messageId?: string; cost?: number; recipients?: string[]; key?: boolean; kind?: SendRecord['kind'] } = {},
): SendRecord {
  const recipients = options.recipients ?? ['+2438100000000'];
  const accepted = attempts.some((a) => a.outcome === 201);
  return {
    index,
    marker: `chaos run #${index}`,
    kind: options.kind ?? 'immediate',
    merchant: MERCHANT,
    idempotencyKey: options.key ? `chaos-run-${index}` : null,
    body: {},
    recipients,
    scheduledFor: null,
    attempts,
    accepted: accepted
      ? { messageId: options.messageId ?? `msg_${index}`, totalCost: options.cost ?? 200, totalRecipients: recipients.length }
      : null,
    cancel: null,
  };
}

const created = (index: number, messageId = `msg_${index}`, cost = 200): JournalMessage => ({
  messageId,
  merchantId: MERCHANT.merchantId,
  text: `chaos run #${index}`,
  totalCost: cost,
  recipients: 1,
});

/** A run where send 0 was accepted and everything downstream happened exactly once. */
function consistent(overrides: Partial<Evidence> = {}): Evidence {
  const records = [send(0, [at(201)])];
  return {
    records,
    funding: new Map([[MERCHANT.merchantId, FUNDING]]),
    journalMessages: [created(0)],
    journalMoney: [
      { merchantId: MERCHANT.merchantId, type: 'topped_up', chargeId: null, amount: FUNDING },
      { merchantId: MERCHANT.merchantId, type: 'charged', chargeId: 'msg_0', amount: 200 },
    ],
    journalCancels: [],
    journalDispatches: new Map([['msg_0:0', 1]]),
    balances: new Map([[MERCHANT.merchantId, FUNDING - 200]]),
    statuses: new Map([['msg_0', { status: 200, messageId: 'msg_0', totalRecipients: 1 }]]),
    deliveries: [{ process: 1, dispatchId: 'msg_0:0:0', taken: true }],
    killedSimulators: new Set(),
    webhooks: [
      { eventId: 'e1', type: 'sms.sent', messageId: 'msg_0', recipientIndex: 0 },
      { eventId: 'e2', type: 'sms.delivered', messageId: 'msg_0', recipientIndex: 0 },
    ],
    deaths: [],
    faults: [],
    staleWrites: 0,
    journalGaps: 0,
    ...overrides,
  };
}

describe('chaos verifications', () => {
  it('when a run is consistent, then every verification holds', () => {
    const result = verifyAll(consistent());
    expect(result.verifications).to.have.length(11);
    for (const verification of result.verifications) {
      expect(verification.failures, verification.name).to.deep.equal([]);
      expect(verification.ok, verification.name).to.equal(true);
    }
  });

  it('when a 201 has no message in the journal, then "every 201 in the journal" fails', () => {
    const result = verifyAcceptedInJournal(consistent({ journalMessages: [] }));
    expect(result.ok).to.equal(false);
    expect(result.failures[0]).to.contain('msg_0');
  });

  it('when GET /status does not find a 201, then "every 201 in GET /status" fails', () => {
    const result = verifyAcceptedInStatus(
      consistent({ statuses: new Map([['msg_0', { status: 404, messageId: null, totalRecipients: null }]]) }),
    );
    expect(result.ok).to.equal(false);
  });

  it('when a send answered 503 without a key has a message in the journal, then "every 503 unapplied" fails', () => {
    const records = [send(0, [at(201)]), send(1, [at(503, { errorCode: '1402' })])];
    const result = verifyFailuresUnapplied(consistent({ records, journalMessages: [created(0), created(1, 'msg_x')] }));
    expect(result.ok).to.equal(false);
    expect(result.failures[0]).to.contain('chaos run #1').and.contain('msg_x');
  });

  it('when a keyed send answered 503 then 201 by replay, then the 503 had been applied: the verification fails', () => {
    const records = [send(0, [at(503), at(201, { replayed: true })], { key: true })];
    expect(verifyFailuresUnapplied(consistent({ records })).ok).to.equal(false);
  });

  it('when the attempt before the replay broke its connection, then the replay may be its doing: the 503 is not blamed', () => {
    const records = [send(0, [at('network'), at(503), at(201, { replayed: true })], { key: true })];
    expect(verifyFailuresUnapplied(consistent({ records })).ok).to.equal(true);
  });

  it('when a keyed send answered 503 then 201 as a new message, then nothing was applied twice: it holds', () => {
    const records = [send(0, [at(503), at(201)], { key: true })];
    expect(verifyFailuresUnapplied(consistent({ records })).ok).to.equal(true);
  });

  it('when a cancel answered 503 had refunded (the retry refunds 0), then the verification fails', () => {
    const record = send(0, [at(201)], { kind: 'scheduled' });
    record.cancel = { attempts: [at(503), at(200)], refunded: 0 };
    const result = verifyFailuresUnapplied(consistent({ records: [record], journalCancels: [{ messageId: 'msg_0', refund: 200 }] }));
    expect(result.ok).to.equal(false);
  });

  it('when a cancel got only 503s yet the journal cancelled, then the 503 was applied: both the 503 and the wallet checks fail', () => {
    const record = send(0, [at(201)], { kind: 'scheduled' });
    record.cancel = { attempts: [at(503), at(503)], refunded: null };
    const evidence = consistent({
      records: [record],
      journalCancels: [{ messageId: 'msg_0', refund: 200 }],
      journalMoney: [...consistent().journalMoney, { merchantId: MERCHANT.merchantId, type: 'refunded', chargeId: 'msg_0', amount: 200 }],
      balances: new Map([[MERCHANT.merchantId, FUNDING]]),
      journalDispatches: new Map(),
      deliveries: [],
    });
    expect(verifyFailuresUnapplied(evidence).ok).to.equal(false);
    expect(verifyWallets(evidence).ok).to.equal(false);
    // cancelled by the journal's account: no dispatch is owed
    expect(verifyDispatchedOnce(evidence).verification.ok).to.equal(true);
  });

  it("when a cancel's connection broke and the journal cancelled, then its refund is expected", () => {
    const record = send(0, [at(201)], { kind: 'scheduled' });
    record.cancel = { attempts: [at('network'), at(500)], refunded: null };
    const evidence = consistent({
      records: [record],
      journalCancels: [{ messageId: 'msg_0', refund: 200 }],
      journalMoney: [...consistent().journalMoney, { merchantId: MERCHANT.merchantId, type: 'refunded', chargeId: 'msg_0', amount: 200 }],
      balances: new Map([[MERCHANT.merchantId, FUNDING]]),
    });
    expect(verifyFailuresUnapplied(evidence).ok).to.equal(true);
    expect(verifyWallets(evidence).ok).to.equal(true);
  });

  it('when one marker has two messages, then "no send created twice" fails', () => {
    expect(verifyNoDuplicateMessages(consistent({ journalMessages: [created(0), created(0, 'msg_dup')] })).ok).to.equal(false);
  });

  it('when an answer is a 5xx other than 503, then "no 5xx but 503" fails, grouped by answer', () => {
    const records = [send(0, [at(500, { detail: 'boom' }), at(500, { detail: 'boom' }), at(201)], { key: true })];
    const result = verifyNoOther5xx(consistent({ records }));
    expect(result.ok).to.equal(false);
    expect(result.failures).to.deep.equal(['2 × [before any fault] 500 boom']);
  });

  it("when a 500 of unknown outcome follows a node killed or frozen or the broker killed, then it is that fault's answer; during a database outage it fails", () => {
    const fault = (name: string): FaultRecord => ({
      name,
      round: 1,
      target: '',
      startedAt: 500,
      endedAt: 900,
      firstSendMs: 1,
      allMerchantsMs: 1,
      healthOkMs: 1,
      firstDispatchMs: null,
    });
    const records = [
      send(0, [at(500, { errorCode: '1401' }), at(500, { detail: '{"detail":"Could not verify the API key; retry."}' }), at(201)], {
        key: true,
      }),
    ];
    expect(verifyNoOther5xx(consistent({ records, faults: [fault('node-kill')] })).ok).to.equal(true);
    expect(verifyNoOther5xx(consistent({ records, faults: [fault('node-freeze')] })).ok).to.equal(true);
    expect(verifyNoOther5xx(consistent({ records, faults: [fault('postgres-outage')] })).ok).to.equal(false);
    expect(verifyNoOther5xx(consistent({ records, faults: [fault('nats-kill')] })).ok).to.equal(true);
    expect(verifyNoOther5xx(consistent({ records, faults: [fault('simulator-kill')] })).ok).to.equal(false);
  });

  it('when the broker is killed, then only the answers of unknown outcome (500/1401) are its answer; another 500 fails', () => {
    const natsKill: FaultRecord = {
      name: 'nats-kill',
      round: 1,
      target: '',
      startedAt: 900,
      endedAt: 2_000,
      firstSendMs: 1,
      allMerchantsMs: 1,
      healthOkMs: 1,
      firstDispatchMs: null,
    };
    const records = [send(0, [at(500, { detail: 'boom' }), at(201)], { key: true })];
    const result = verifyNoOther5xx(consistent({ records, faults: [natsKill] }));
    expect(result.ok).to.equal(false);
    expect(result.failures).to.deep.equal(['1 × [during nats-kill#1] 500 boom']);
  });

  it("when a request sent just before a node froze is answered 500 of unknown outcome during the freeze, then it is that fault's answer", () => {
    const fault = (name: string): FaultRecord => ({
      name,
      round: 1,
      target: '',
      startedAt: 1_005,
      endedAt: 2_000,
      firstSendMs: 1,
      allMerchantsMs: 1,
      healthOkMs: 1,
      firstDispatchMs: null,
    });
    // started at 1 000 (before the fault), answered at 1 010 (during it)
    const records = [send(0, [at(500, { errorCode: '1401' }), at(201)], { key: true })];
    expect(verifyNoOther5xx(consistent({ records, faults: [fault('node-freeze')] })).ok).to.equal(true);
    expect(verifyNoOther5xx(consistent({ records, faults: [fault('postgres-outage')] })).ok).to.equal(false);
  });

  it('when the balance misses a charge the answers do not account for, then "wallets exact" fails and names it', () => {
    const records = [send(0, [at(201)]), send(1, [at(503)])];
    const evidence = consistent({
      records,
      journalMessages: [created(0), created(1, 'msg_1')],
      journalMoney: [...consistent().journalMoney, { merchantId: MERCHANT.merchantId, type: 'charged', chargeId: 'msg_1', amount: 200 }],
      balances: new Map([[MERCHANT.merchantId, FUNDING - 400]]),
    });
    const result = verifyWallets(evidence);
    expect(result.ok).to.equal(false);
    expect(result.failures[0]).to.contain('expected 9999800').and.contain('msg_1 200');
  });

  it('when a send whose connection broke was applied, then its charge is expected: the wallet holds', () => {
    const records = [send(0, [at(201)]), send(1, [at('network')])];
    const evidence = consistent({
      records,
      journalMessages: [created(0), created(1, 'msg_1')],
      journalMoney: [...consistent().journalMoney, { merchantId: MERCHANT.merchantId, type: 'charged', chargeId: 'msg_1', amount: 200 }],
      balances: new Map([[MERCHANT.merchantId, FUNDING - 400]]),
    });
    expect(verifyWallets(evidence).ok).to.equal(true);
  });

  it('when a cancel refunded, then the wallet expects the refund', () => {
    const record = send(0, [at(201)], { kind: 'scheduled' });
    record.cancel = { attempts: [at(200)], refunded: 200 };
    const evidence = consistent({
      records: [record],
      journalMoney: [...consistent().journalMoney, { merchantId: MERCHANT.merchantId, type: 'refunded', chargeId: 'msg_0', amount: 200 }],
      balances: new Map([[MERCHANT.merchantId, FUNDING]]),
      journalDispatches: new Map(),
      deliveries: [],
    });
    expect(verifyWallets(evidence).ok).to.equal(true);
    expect(verifyDispatchedOnce(evidence).verification.ok).to.equal(true);
  });

  it('when the journal dispatched an occurrence twice, then "dispatched at most once" fails', () => {
    expect(verifyDispatchedOnce(consistent({ journalDispatches: new Map([['msg_0:0', 2]]) })).verification.ok).to.equal(false);
  });

  it('when the connector took a dispatch id twice in one process, then it fails', () => {
    const deliveries = [
      { process: 1, dispatchId: 'msg_0:0:0', taken: true },
      { process: 1, dispatchId: 'msg_0:0:0', taken: true },
    ];
    expect(verifyDispatchedOnce(consistent({ deliveries })).verification.ok).to.equal(false);
  });

  it('when a restarted simulator took again a job of the process that was SIGKILLed, then it is counted apart and holds', () => {
    const deliveries = [
      { process: 1, dispatchId: 'msg_0:0:0', taken: true },
      { process: 2, dispatchId: 'msg_0:0:0', taken: true },
    ];
    const result = verifyDispatchedOnce(consistent({ deliveries, killedSimulators: new Set([1]) }));
    expect(result.verification.ok).to.equal(true);
    expect(result.redeliveredAfterConnectorCrash).to.equal(1);
    expect(verifyDispatchedOnce(consistent({ deliveries })).verification.ok).to.equal(false);
  });

  it('when an accepted send was never dispatched, then it fails (lost)', () => {
    expect(verifyDispatchedOnce(consistent({ journalDispatches: new Map(), deliveries: [] })).verification.ok).to.equal(false);
  });

  it('when a terminal webhook is missing, then the webhook verification fails and counts it', () => {
    const result = verifyWebhooks(consistent({ webhooks: [{ eventId: 'e1', type: 'sms.sent', messageId: 'msg_0', recipientIndex: 0 }] }));
    expect(result.verification.ok).to.equal(false);
    expect(result.figures.missing).to.equal(1);
  });

  it("when a recipient's final receipt died with a SIGKILLed simulator, then the receipt timeout's sms.failed 1503 ends it; from a simulator not killed, it fails", () => {
    const webhooks = [
      { eventId: 'e1', type: 'sms.sent', messageId: 'msg_0', recipientIndex: 0 },
      { eventId: 'e2', type: 'sms.failed', messageId: 'msg_0', recipientIndex: 0, errorCode: '1503' },
    ];
    const orphaned = verifyWebhooks(consistent({ webhooks, killedSimulators: new Set([1]) }));
    expect(orphaned.verification.ok).to.equal(true);
    expect(orphaned.verification.summary).to.include('1 ended by the receipt timeout');
    expect(verifyWebhooks(consistent({ webhooks })).verification.ok).to.equal(false);
    // the timeout has not ended it yet: still missing
    const missing = verifyWebhooks(consistent({ webhooks: webhooks.slice(0, 1), killedSimulators: new Set([1]) }));
    expect(missing.figures.missing).to.equal(1);
  });

  it('when an event is delivered twice, then the duplicate rate counts it (the same event id is no failure)', () => {
    const webhooks = [...consistent().webhooks, { eventId: 'e2', type: 'sms.delivered', messageId: 'msg_0', recipientIndex: 0 }];
    const result = verifyWebhooks(consistent({ webhooks }));
    expect(result.verification.ok).to.equal(true);
    expect(result.figures.duplicateRate).to.equal(0.5);
  });

  it('when a recipient gets two terminal events of different ids, then it fails', () => {
    const webhooks = [...consistent().webhooks, { eventId: 'e3', type: 'sms.delivered', messageId: 'msg_0', recipientIndex: 0 }];
    expect(verifyWebhooks(consistent({ webhooks })).verification.ok).to.equal(false);
  });

  it('when a write was made without the lease, or a sequence has a gap, then fencing fails', () => {
    expect(verifyAll(consistent({ staleWrites: 1 })).verifications.find((v) => v.name.startsWith('fencing'))?.ok).to.equal(false);
    expect(verifyAll(consistent({ journalGaps: 1 })).verifications.find((v) => v.name.startsWith('fencing'))?.ok).to.equal(false);
  });

  it('when a node died that the run did not kill, or a fault was never recovered from, then those fail', () => {
    expect(
      verifyNodesSurvived(
        consistent({ deaths: [{ node: 'node-2', during: 'postgres-restart', exit: 'code 1', evidence: 'uncaughtException' }] }),
      ).ok,
    ).to.equal(false);
    const fault: FaultRecord = {
      name: 'nats-kill',
      round: 1,
      target: 'nats-server',
      startedAt: 0,
      endedAt: 10,
      firstSendMs: null,
      allMerchantsMs: null,
      healthOkMs: 5,
      firstDispatchMs: null,
    };
    expect(verifyRecovered(consistent({ faults: [fault] })).ok).to.equal(false);
  });

  it('labels an instant with the fault it falls in or follows', () => {
    const fault = (name: string, startedAt: number): FaultRecord => ({
      name,
      round: 1,
      target: '',
      startedAt,
      endedAt: startedAt + 10_000,
      firstSendMs: 1,
      allMerchantsMs: 1,
      healthOkMs: 1,
      firstDispatchMs: null,
    });
    const faults = [fault('postgres-outage', 100_000), fault('nats-kill', 200_000)];
    expect(faultAt(faults, 99_999)).to.equal('before any fault');
    expect(faultAt(faults, 100_000)).to.equal('during postgres-outage#1');
    expect(faultAt(faults, 110_001)).to.equal('after postgres-outage#1');
    expect(faultAt(faults, 200_000)).to.equal('during nats-kill#1');
  });
});
