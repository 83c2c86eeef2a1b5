import { expect } from 'chai';
import { shardOf } from '../../../src/cluster/shards.js';
import { seedMerchant } from '../../helpers/gateway-fixture.js';
import { call } from '../../helpers/http-fixture.js';
import {
  getOn,
  journalDispatchesOf,
  toUnits,
  type LoadMerchant,
  type LoadSend,
  type SendAttempt,
  type TestCluster,
} from '../../helpers/cluster.js';
import { startWebhookReceiver, type WebhookEnvelope, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';

/**
 * What the cluster tests check after a fault under load: nothing lost (every 201 visible, every terminal webhook
 * arrived), nothing doubled (the ledger exact, no dispatch id twice at the connector, no write by a stale owner).
 */

/** The tests send and poll a lot through one key: the contract's per-key limits are not what they measure. */
export const GENEROUS_RATE_LIMITS: Readonly<Record<string, string>> = {
  RATE_LIMIT_SEND: '1000000',
  RATE_LIMIT_STATUS: '1000000',
  RATE_LIMIT_BALANCE: '1000000',
};

export const FUNDING = '1000';

export interface ClusterMerchant extends LoadMerchant {
  /** Its webhook endpoint, when it has one. */
  readonly receiver: WebhookReceiver | null;
}

export interface SeedOptions {
  readonly count: number;
  /** Seed more (up to 40 in all) until at least this many merchants live on `node`'s shards. */
  readonly onNode?: { readonly node: string; readonly atLeast: number };
  readonly webhooks?: boolean;
}

/** Funded merchants seeded through the operator (a cluster client), each with a key and, optionally, a webhook. */
export async function seedMerchants(cluster: TestCluster, options: SeedOptions): Promise<ClusterMerchant[]> {
  const merchants: ClusterMerchant[] = [];
  const owners = await cluster.ownership();
  const ownerOf = (merchantId: string): string | undefined =>
    [...owners].find(([, shards]) => shards.includes(shardOf(merchantId, cluster.shards)))?.[0];
  const enough = (): boolean => {
    if (merchants.length < options.count) return false;
    if (!options.onNode) return true;
    return merchants.filter((m) => ownerOf(m.merchantId) === options.onNode!.node).length >= options.onNode.atLeast;
  };
  while (!enough()) {
    if (merchants.length >= 40) throw new Error(`no ${options.onNode?.atLeast ?? 0} merchants on ${options.onNode?.node ?? ''} among 40`);
    const seeded = await seedMerchant(cluster.operator, { name: `Cluster shop ${merchants.length + 1}`, prepaid: FUNDING });
    let receiver: WebhookReceiver | null = null;
    if (options.webhooks) {
      receiver = await startWebhookReceiver();
      const set = await cluster.operator.useCases.apiKeys.setWebhook(seeded.keyId, {
        url: receiver.url,
        username: 'cluster',
        password: 'secret',
      });
      expect(set).to.equal(true);
    }
    merchants.push({ merchantId: seeded.merchantId, keyId: seeded.keyId, apiKey: seeded.apiKey, receiver });
  }
  return merchants;
}

export async function closeReceivers(merchants: readonly ClusterMerchant[]): Promise<void> {
  await Promise.all(merchants.flatMap((m) => (m.receiver ? [m.receiver.close()] : [])));
}

/** 1–3 recipients per send, distinct numbers, outcomes cycling delivered / undelivered / rejected / delivered. */
export const ENDINGS = ['00', '90', '91', '01'] as const;
export function recipientsOf(runOffset: number): (i: number) => string[] {
  return (i) =>
    Array.from({ length: 1 + (i % 3) }, (_, j) => {
      const n = runOffset + i * 3 + j;
      return `+24381${String(n % 100_000).padStart(5, '0')}${ENDINGS[n % ENDINGS.length]!}`;
    });
}

export const terminalTypeOf = (phone: string): string => (phone.endsWith('00') || phone.endsWith('01') ? 'sms.delivered' : 'sms.failed');

export const accepted = (sends: readonly LoadSend[]): LoadSend[] => sends.filter((s) => s.accepted !== null);

/** Every accepted message answers GET /status (on the running nodes, in turn) with its recipients. */
export async function expectAllVisible(cluster: TestCluster, sends: readonly LoadSend[], timeoutMs = 30_000): Promise<void> {
  const list = accepted(sends);
  let turn = 0;
  await Promise.all(
    list.map(async (send) => {
      const { messageId, totalRecipients } = send.accepted!;
      const data = await eventually(
        async () => {
          const nodes = cluster.running();
          const answer = await getOn(nodes[turn++ % nodes.length]!.api, `/status/${messageId}`, send.merchant.apiKey);
          return answer.status === 200 ? (answer.body as { data: { message_id: string; total_recipients: number } }).data : null;
        },
        timeoutMs,
        `GET /status of ${messageId}`,
        200,
      );
      expect(data.message_id).to.equal(messageId);
      expect(data.total_recipients).to.equal(totalRecipients);
    }),
  );
}

/** Each merchant's balance (GET /balance) is its funding minus the cost of exactly its accepted sends. */
export async function expectLedgerExact(
  cluster: TestCluster,
  merchants: readonly LoadMerchant[],
  sends: readonly LoadSend[],
): Promise<void> {
  const nodes = cluster.running();
  for (const [i, merchant] of merchants.entries()) {
    const spent = accepted(sends)
      .filter((s) => s.merchant.merchantId === merchant.merchantId)
      .reduce((sum, s) => sum + s.accepted!.totalCost, 0);
    const answer = await call(`${nodes[i % nodes.length]!.api}/balance`, { key: merchant.apiKey });
    expect(answer.status, answer.text).to.equal(200);
    const balance = toUnits((answer.body as { data: { balance: number } }).data.balance);
    let context = '';
    if (balance !== toUnits(Number(FUNDING)) - spent) {
      // what every node answers, and who owns the merchant's shard: the failure message says where it went wrong
      const views = await Promise.all(
        nodes.map(async (n) => `${n.id}: ${(await call(`${n.api}/balance`, { key: merchant.apiKey })).text}`),
      );
      context = ` (shard ${shardOf(merchant.merchantId, cluster.shards)}; ${views.join('; ')}; owners ${JSON.stringify([...(await cluster.ownership())])})`;
    }
    expect(balance, `balance of ${merchant.merchantId}${context}`).to.equal(toUnits(Number(FUNDING)) - spent);
  }
}

/** The dispatch ids every accepted send must produce: `<message>:0:<recipient>`. */
export function expectedDispatchIds(sends: readonly LoadSend[]): string[] {
  return accepted(sends)
    .flatMap((s) => Array.from({ length: s.accepted!.totalRecipients }, (_, r) => `${s.accepted!.messageId}:0:${r}`))
    .sort();
}

export interface DispatchCheckOptions {
  readonly timeoutMs?: number;
  /**
   * The broker was stopped during the test: a job may then reach the connector again, which is JetStream's
   * at-least-once delivery (an acknowledgement lost with the server, or a publish retried after the restart whose
   * first copy the connector had already taken: nats-server forgets the ids of consumed work-queue messages when it
   * restarts). What must still hold is the connector's rule: each dispatch id handed to the carrier once, so the
   * simulator's own log of what it took is counted instead of what it was delivered.
   */
  readonly brokerStopped?: boolean;
}

/**
 * The connector received exactly the expected dispatch ids, each once; after a broker stop, each taken (sent to the
 * carrier) once, a redelivery acknowledged without sending.
 */
export async function expectDispatchedOnce(
  cluster: TestCluster,
  sends: readonly LoadSend[],
  options: DispatchCheckOptions = {},
): Promise<void> {
  const expected = expectedDispatchIds(sends);
  const report = await eventually(
    async () => {
      const latest = await cluster.simulatorReport();
      return expected.every((id) => latest.sent[id] !== undefined) ? latest : null;
    },
    options.timeoutMs ?? 60_000,
    `all ${expected.length} dispatches at the connector`,
    500,
  );
  expect(Object.keys(report.sent).sort()).to.deep.equal(expected);
  if (!options.brokerStopped) {
    const twice = Object.entries(report.sent).filter(([, count]) => count !== 1);
    expect(twice, 'dispatch ids delivered to the connector more than once').to.deep.equal([]);
    return;
  }
  const taken = new Map<string, number>();
  for (const delivery of cluster.simulatorDeliveries()) {
    if (delivery.taken) taken.set(delivery.dispatchId, (taken.get(delivery.dispatchId) ?? 0) + 1);
  }
  expect([...taken.keys()].sort(), 'dispatch ids taken by the connector').to.deep.equal(expected);
  const twice = [...taken].filter(([, count]) => count !== 1);
  expect(twice, 'dispatch ids sent to the carrier more than once').to.deep.equal([]);
  // the connector's memory hides a second dispatch by the gateway: its journal must hold one per occurrence
  const dispatched = await journalDispatchesOf(cluster);
  const occurrences = [...new Set(accepted(sends).map((s) => `${s.accepted!.messageId}:0`))].sort();
  expect([...dispatched.keys()].sort(), 'occurrences dispatched (journal)').to.deep.equal(occurrences);
  expect(
    [...dispatched].filter(([, n]) => n !== 1),
    'occurrences dispatched more than once (journal)',
  ).to.deep.equal([]);
}

/** Every recipient of every accepted send got exactly one terminal event (by event_id), of the expected type. */
export async function expectTerminalWebhooks(
  merchants: readonly ClusterMerchant[],
  sends: readonly LoadSend[],
  timeoutMs = 90_000,
): Promise<void> {
  const terminal = (e: WebhookEnvelope): boolean => e.event_type === 'sms.delivered' || e.event_type === 'sms.failed';
  for (const merchant of merchants) {
    const receiver = merchant.receiver;
    if (!receiver) throw new Error(`merchant ${merchant.merchantId} has no webhook receiver`);
    const mine = accepted(sends).filter((s) => s.merchant.merchantId === merchant.merchantId);
    const expected = new Map<string, string>();
    for (const send of mine) {
      send.body.to.forEach((phone, r) => expected.set(`${send.accepted!.messageId}:${r}`, terminalTypeOf(phone)));
    }
    const received = (): Map<string, WebhookEnvelope[]> => {
      const byRecipient = new Map<string, Map<string, WebhookEnvelope>>();
      for (const event of receiver.events()) {
        if (!terminal(event)) continue;
        const id = `${event.message_id}:${String(event.data.recipient_index)}`;
        const events = byRecipient.get(id) ?? new Map<string, WebhookEnvelope>();
        events.set(event.event_id, event);
        byRecipient.set(id, events);
      }
      return new Map([...byRecipient].map(([id, events]) => [id, [...events.values()]]));
    };
    await receiver.waitFor(
      () => [...expected.keys()].every((id) => received().has(id)),
      timeoutMs,
      `${expected.size} terminal events of ${merchant.merchantId}`,
    );
    const got = received();
    expect([...got.keys()].sort()).to.deep.equal([...expected.keys()].sort());
    for (const [id, events] of got) {
      expect(
        events.map((e) => e.event_type),
        `terminal events of ${id}`,
      ).to.deep.equal([expected.get(id)]);
    }
  }
}

/** No journal record by a stale owner, and every key's sequence numbers exactly 1..n. */
export async function expectFencingHeld(cluster: TestCluster): Promise<void> {
  // the audit saw the writes (so an empty list below means something), all by nodes
  const writers = await cluster.writesByNode();
  expect([...writers.values()].reduce((a, b) => a + b, 0)).to.be.greaterThan(0);
  for (const writer of writers.keys())
    expect(
      cluster.nodes.map((n) => n.id),
      `journal writer ${writer}`,
    ).to.include(writer);
  expect(await cluster.staleWrites(), 'journal records written without the current lease').to.deep.equal([]);
  expect(await cluster.journalGaps(), 'journal keys with gaps').to.deep.equal([]);
}

/**
 * What a request gets during a failover: 503/1402 when nothing was applied (no owner within the deadline, or the
 * command refused at it); 500/1401 when its command reached a node that died (or froze) and no answer came back, so
 * it may or may not have been applied; or, when it was the API key's check that went unanswered, the authentication
 * table's 500 `{detail}` ("retry"). After a 500 the client retries with the same Idempotency-Key.
 */
export function isFailoverAnswer(attempt: SendAttempt): boolean {
  if (attempt.outcome === 503) return attempt.errorCode === '1402';
  if (attempt.outcome === 500 && attempt.errorCode === '1401') return true;
  return attempt.outcome === 500 && attempt.detail === JSON.stringify({ detail: 'Could not verify the API key; retry.' });
}

/** Attempts of the sends by outcome, e.g. { 201: 290, 503: 3, refused: 10 }. */
export function outcomeCounts(sends: readonly LoadSend[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const send of sends) for (const a of send.attempts) counts[String(a.outcome)] = (counts[String(a.outcome)] ?? 0) + 1;
  return counts;
}
