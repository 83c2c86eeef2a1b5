import { expect } from 'chai';
import { randomUUID } from 'node:crypto';
import { call } from '../../helpers/http-fixture.js';
import { loadNumber, startCluster, toUnits, type ClusterNode, type TestCluster } from '../../helpers/cluster.js';
import { eventually } from '../../helpers/eventually.js';
import { FUNDING, GENEROUS_RATE_LIMITS, seedMerchants, type ClusterMerchant } from './cluster-checks.js';

/**
 * 503/1402 means nothing was applied. Sends go out WITHOUT an Idempotency-Key, each with its own text, so a send
 * answered 503 and applied anyway would show as a charge and a message nobody was told about. After the load the
 * journal is read directly: the charges and the messages must be exactly those of the answers that said so.
 */

interface Answer {
  readonly index: number;
  readonly merchant: ClusterMerchant;
  readonly text: string;
  readonly status: number;
  /** The envelope's code; `detail` for the authentication table's 500 `{detail}`. */
  readonly errorCode: string | null;
  readonly messageId: string | null;
  /** In ten-thousandths. */
  readonly cost: number;
  readonly startedAt: number;
  readonly endedAt: number;
}

async function sendOnce(api: string, merchant: ClusterMerchant, index: number, run: string): Promise<Answer> {
  const text = `deadline ${run} #${index}`;
  const startedAt = Date.now();
  const answer = await call(`${api}/send`, {
    method: 'POST',
    key: merchant.apiKey,
    json: { to: [loadNumber('00', index)], message: text },
  }).catch(() => null);
  // no answer at all (the connection broke): the outcome is unknown to the client, like a 500
  if (answer === null)
    return { index, merchant, text, status: 0, errorCode: null, messageId: null, cost: 0, startedAt, endedAt: Date.now() };
  const body = answer.body as { data?: { message_id: string; total_cost: number }; error_code?: string; detail?: string } | undefined;
  return {
    index,
    merchant,
    text,
    status: answer.status,
    errorCode: body?.error_code ?? (body?.detail === undefined ? null : 'detail'),
    messageId: answer.status === 201 ? (body?.data?.message_id ?? null) : null,
    cost: answer.status === 201 && body?.data ? toUnits(body.data.total_cost) : 0,
    startedAt,
    endedAt: Date.now(),
  };
}

interface Applied {
  /** Charge ids (= message ids) in each merchant's wallet journal. */
  readonly charges: Set<string>;
  /** Messages created, by id, with their text. */
  readonly messages: Map<string, string>;
}

async function appliedOf(cluster: TestCluster, merchants: readonly ClusterMerchant[]): Promise<Applied> {
  const charges = await cluster.sql<{ charge_id: string }>(
    `SELECT e->>'chargeId' AS charge_id FROM journal, jsonb_array_elements(events) e WHERE key = ANY($1) AND e->>'type' = 'charged'`,
    [merchants.map((m) => `wallet:${m.merchantId}`)],
  );
  const messages = await cluster.sql<{ message_id: string; text: string }>(
    `SELECT e->'spec'->>'messageId' AS message_id, e->'spec'->>'text' AS text FROM journal, jsonb_array_elements(events) e
      WHERE key LIKE 'message:%' AND e->>'type' = 'message_created' AND e->'spec'->>'merchantId' = ANY($1)`,
    [merchants.map((m) => m.merchantId)],
  );
  return { charges: new Set(charges.map((c) => c.charge_id)), messages: new Map(messages.map((m) => [m.message_id, m.text])) };
}

/**
 * Every answer is a 201 or a 503/1402 (or, for a send whose outcome the node could not know, 500/1401); the journal
 * holds a charge and a message for each 201, and none for any 503; each balance is its funding less its 201s (and
 * any 500 the journal shows applied, counted by its text).
 */
async function expectOnly201sApplied(
  cluster: TestCluster,
  merchants: readonly ClusterMerchant[],
  answers: readonly Answer[],
): Promise<void> {
  // the outbox may still finish a creation whose charge was decided: wait until every charge has its message
  const applied = await eventually(
    async () => {
      const now = await appliedOf(cluster, merchants);
      return [...now.charges].every((id) => now.messages.has(id)) ? now : null;
    },
    60_000,
    'every charge with its message',
    500,
  );
  const accepted = answers.filter((a) => a.status === 201);
  const refused = answers.filter((a) => a.status === 503);
  const appliedTexts = new Set(applied.messages.values());
  expect(
    refused.filter((a) => appliedTexts.has(a.text)).map((a) => a.text),
    'sends answered 503 whose message exists',
  ).to.deep.equal([]);
  const kinds = answers.map((a) => `${a.status}/${a.errorCode ?? ''}`);
  // 500 {detail}: the key could not be checked (its shard changing hands past the deadline), the send never ran
  const unexpected = kinds.filter((k) => !['201/', '503/1402', '500/1401', '500/detail', '0/'].includes(k));
  expect(unexpected, 'answers other than 201, 503/1402, 500/1401 or {detail}, and a broken connection').to.deep.equal([]);
  const unknown = answers.filter((a) => a.status === 500 || a.status === 0);
  const unknownApplied = unknown.filter((a) => appliedTexts.has(a.text));
  const createdFor = new Map([...applied.messages].map(([id, text]) => [text, id]));
  const expectedIds = [...accepted.map((a) => a.messageId!), ...unknownApplied.map((a) => createdFor.get(a.text)!)].sort();
  expect([...applied.charges].sort(), 'charges in the journal').to.deep.equal(expectedIds);
  expect([...applied.messages.keys()].sort(), 'messages in the journal').to.deep.equal(expectedIds);
  for (const answer of accepted) expect(applied.messages.get(answer.messageId!)).to.equal(answer.text);
  for (const merchant of merchants) {
    const spent = accepted.filter((a) => a.merchant === merchant).reduce((sum, a) => sum + a.cost, 0);
    // a 500 that was applied costs what the same send costs: one recipient at its price (0.02 here)
    const spentUnknown = unknownApplied.filter((a) => a.merchant === merchant).length * toUnits(0.02);
    // shards may still be changing hands after a freeze: a 503/1402 there says "retry", so the read is retried
    const balance = await eventually(
      async () => {
        const read = await call(`${cluster.running()[0]!.api}/balance`, { key: merchant.apiKey });
        return read.status === 503 ? null : read;
      },
      60_000,
      `the balance of ${merchant.merchantId}`,
      250,
    );
    expect(balance.status, balance.text).to.equal(200);
    expect(toUnits((balance.body as { data: { balance: number } }).data.balance), `balance of ${merchant.merchantId}`).to.equal(
      toUnits(Number(FUNDING)) - spent - spentUnknown,
    );
  }
}

const counts = (answers: readonly Answer[]) => {
  const byKind: Record<string, number> = {};
  for (const a of answers) {
    const kind = a.errorCode === null ? String(a.status) : `${a.status}/${a.errorCode}`;
    byKind[kind] = (byKind[kind] ?? 0) + 1;
  }
  return byKind;
};

describe('deadlines: a 503/1402 applied nothing', function () {
  this.timeout(300_000);

  describe('an overloaded node (a burst far above what it decides within the deadline)', () => {
    let cluster: TestCluster;
    let merchants: ClusterMerchant[];
    /**
     * The deadline (the ask's and the failover wait's): a few sends at once fit in it even on a slow, busy machine;
     * a few hundred at once do not, even on a fast one (each costs the node its HTTP, JSON and validation at least).
     */
    const DEADLINE_MS = 40;
    /**
     * From one send (decided in time on any machine) up; the largest stays under the listen backlog (511), so every
     * connection of a burst is waiting when the node resumes.
     */
    const BURST_SIZES = [1, 2, 5, 10, 20, 40, 80, 160, 320, 480, 480, 480];
    /** How long the node stays stopped while a burst is written to it: well under the lease TTL (3 s). */
    const BURST_WRITE_MS = 1_000;

    before(async function () {
      this.timeout(180_000);
      cluster = await startCluster({
        nodes: 1,
        failoverDeadlineMs: DEADLINE_MS,
        env: { ...GENEROUS_RATE_LIMITS, ACTOR_ASK_TIMEOUT_MS: String(DEADLINE_MS) },
        simulator: false,
      });
      merchants = await seedMerchants(cluster, { count: 2 });
    });
    after(async () => {
      await cluster.stop();
    });

    it('when sends are refused with 503 under overload, then none of them was charged or created, and the ledger is funding less the 201s', async () => {
      const run = randomUUID().slice(0, 8);
      const node = cluster.node('node-1');
      const answers: Answer[] = [];
      const bursts: string[] = [];
      // Each burst is written while the node is stopped (SIGSTOP), so the node finds all of it at once when it
      // resumes. Sent live, a burst reaches the node only as fast as this one process writes it, and a node quicker
      // than its client is never overloaded. A node works through a burst's steps in turn: a small burst is decided
      // within the deadline (201s), a large one mostly past it (503s). Bursts grow until both were seen.
      for (const size of BURST_SIZES) {
        const offset = answers.length;
        cluster.pause(node);
        const sent = Promise.all(
          Array.from({ length: size }, (_, i) => sendOnce(node.api, merchants[i % merchants.length]!, offset + i, run)),
        );
        await new Promise((resolve) => setTimeout(resolve, BURST_WRITE_MS));
        cluster.resume(node);
        const burst = await sent;
        answers.push(...burst);
        bursts.push(`${size}: ${JSON.stringify(counts(burst))}`);
        if (answers.some((a) => a.status === 201) && answers.filter((a) => a.status === 503).length >= 20) break;
      }
      const seen = `${JSON.stringify(counts(answers))} (bursts ${bursts.join('; ')})`;
      console.log(`      overload answers: ${seen}`);
      expect(answers.filter((a) => a.status === 503).length, `answers 503 (the node was overloaded) of ${seen}`).to.be.at.least(20);
      expect(answers.filter((a) => a.status === 201).length, `answers 201 of ${seen}`).to.be.greaterThan(0);
      expect(node.state(), 'the node after the bursts').to.equal('running');
      await expectOnly201sApplied(cluster, merchants, answers);
    });
  });

  describe('a node frozen (SIGSTOP) past the deadline while requests wait in it', () => {
    let cluster: TestCluster;
    let merchants: ClusterMerchant[];
    let victim: ClusterNode;
    const DEADLINE_MS = 1_000;
    /**
     * Five deadlines, and past the lease TTL (3 s): the other node takes the victim's shards meanwhile. What matters
     * is a freeze well past the deadline, so a 1 s deadline and a 5 s freeze prove what 5 s and 20 s would, faster.
     */
    const FREEZE_MS = 5_000;

    before(async function () {
      this.timeout(180_000);
      cluster = await startCluster({
        nodes: 2,
        failoverDeadlineMs: DEADLINE_MS,
        env: { ...GENEROUS_RATE_LIMITS, ACTOR_ASK_TIMEOUT_MS: String(DEADLINE_MS) },
        simulator: false,
      });
      victim = cluster.node('node-1');
      // merchants on both nodes' shards: the victim asks its own actors and, through NATS, the other node's
      merchants = await seedMerchants(cluster, { count: 4, onNode: { node: victim.id, atLeast: 2 } });
    });
    after(async () => {
      await cluster.stop();
    });

    it('when the node resumes, then none of the requests that waited in it past their deadline is executed', async () => {
      const run = randomUUID().slice(0, 8);
      const answers: Answer[] = [];
      let next = 0;
      let stop = false;
      // 100 clients sending to the victim one after the other, until told to stop: the node always has requests inside
      const clients = Array.from({ length: 100 }, async () => {
        while (!stop) {
          const index = next++;
          answers.push(await sendOnce(victim.api, merchants[index % merchants.length]!, index, run));
        }
      });
      const answered = (count: number) =>
        eventually(() => Promise.resolve(answers.length >= count ? true : null), 60_000, `${count} answers`, 50);
      /** Requests that were inside the node across a freeze and were refused: they waited past their deadline. */
      let waitedAcross: Answer[] = [];
      // a freeze may catch every request inside already decided (they all finish with 201): freeze again, up to 3 times
      for (let freeze = 0; freeze < 3 && !waitedAcross.some((a) => a.status === 503); freeze++) {
        await answered(answers.length + 100);
        const frozenAt = Date.now();
        cluster.pause(victim);
        await new Promise((resolve) => setTimeout(resolve, FREEZE_MS));
        const resumedAt = Date.now();
        cluster.resume(victim);
        await answered(answers.length + 100);
        waitedAcross = answers.filter((a) => a.startedAt < frozenAt && a.endedAt > resumedAt);
      }
      stop = true;
      await Promise.all(clients);

      console.log(
        `      freeze answers: ${JSON.stringify(counts(answers))}; across the last freeze: ${JSON.stringify(counts(waitedAcross))}`,
      );
      expect(waitedAcross.filter((a) => a.status === 503).length, 'requests refused after waiting across the freeze').to.be.greaterThan(0);
      expect(victim.state(), 'the victim after the freeze').to.equal('running');
      await expectOnly201sApplied(cluster, merchants, answers);
    });
  });
});
