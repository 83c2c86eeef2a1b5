import { expect } from 'chai';
import { runCli } from '../../../src/composition/cli.js';
import type { SqlExecutor } from '../../../src/libraries/persistence/sql/sql-executor.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { eventually } from '../../helpers/eventually.js';
import { dataOf, type SendData } from '../../helpers/api-helpers.js';
import { isSettled, numberEnding, send, startPipeline, statusOf, type Pipeline } from '../pipeline/pipeline-fixture.js';

const HOUR = 3_600_000;

/** A Kinshasa wall-clock date and time (UTC+1), as scheduled_dates takes them. */
function kinshasaLocal(instant: number): { date: string; time: string } {
  const local = new Date(instant + HOUR).toISOString();
  return { date: local.slice(0, 10), time: local.slice(11, 16) };
}

interface PruneJson {
  readonly candidates: number;
  readonly messages_pruned: number;
  readonly records_deleted: number;
  readonly not_settled: number;
  readonly failed: readonly string[];
}

describe('operator CLI: journal prune (a cluster node on PostgreSQL and NATS, the CLI as a cluster client)', function () {
  this.timeout(120_000);
  let pipeline: Pipeline;
  let merchant: SeededMerchant;
  const ids: Record<'delivered' | 'mixed' | 'pending' | 'scheduled', string> = { delivered: '', mixed: '', pending: '', scheduled: '' };

  const db = (): SqlExecutor => {
    const sql = pipeline.api.node.gateway.persistence.sql;
    if (!sql) throw new Error('no SQL persistence');
    return sql;
  };
  const seqsOf = async (key: string): Promise<number[]> =>
    (await db().query<{ seq: number }>('SELECT seq::float8 AS seq FROM journal WHERE key = $1 ORDER BY seq', [key])).map((r) => r.seq);
  const snapshotSeqOf = async (key: string): Promise<number | null> =>
    (await db().query<{ seq: number }>('SELECT seq::float8 AS seq FROM snapshots WHERE key = $1', [key]))[0]?.seq ?? null;
  const statusText = async (id: string): Promise<string> => {
    const result = await pipeline.client.status(merchant.apiKey, id);
    expect(result.status, result.text).to.equal(200);
    return result.text;
  };

  async function prune(days: string): Promise<PruneJson> {
    const out: string[] = [];
    const err: string[] = [];
    const env = { NODE_ENV: 'test', GATEWAY_MODE: 'server', DATABASE_URL: pipeline.databaseUrl, NATS_URL: pipeline.nats.url };
    const code = await runCli(['journal', 'prune', '--settled-days', days, '--json'], {
      env,
      out: (t) => out.push(t),
      err: (t) => err.push(t),
    });
    expect({ code, err: err.join('') }).to.deep.equal({ code: 0, err: '' });
    return JSON.parse(out.join('')) as PruneJson;
  }

  before(async () => {
    pipeline = await startPipeline();
    merchant = await seedMerchant(pipeline.api.node.gateway, { name: 'Prune shop', prepaid: '100' });
    ids.delivered = (await send(pipeline.client, merchant.apiKey, [numberEnding('00')])).message_id;
    ids.mixed = (
      await send(pipeline.client, merchant.apiKey, [numberEnding('00', '+2438123457'), numberEnding('96'), numberEnding('91')])
    ).message_id;
    // accepted by the carrier: the recipient stays `sent` until its receipt or its timeout, a day later
    ids.pending = (await send(pipeline.client, merchant.apiKey, [numberEnding('97')])).message_id;
    const body = {
      to: [numberEnding('00')],
      message: 'later',
      sending_type: 'scheduled',
      scheduled_dates: [kinshasaLocal(Date.now() + 30 * 24 * HOUR)],
    };
    ids.scheduled = dataOf<SendData>(await pipeline.client.send(merchant.apiKey, body), 201).message_id;
    for (const id of [ids.delivered, ids.mixed, ids.pending]) {
      await eventually(
        async () => (await statusOf(pipeline.client, merchant.apiKey, id)).recipients.every(isSettled),
        30_000,
        `${id} settled`,
      );
    }
  });
  after(async () => {
    await pipeline.stop();
  });

  it('when settled messages are pruned, then their earlier records go, the others are untouched, and every answer stays the same after a restart', async () => {
    const all = Object.values(ids);
    const before = new Map<string, string>();
    for (const id of all) before.set(id, await statusText(id));
    // every answer but its request id
    const cancelOf = async (id: string) => {
      const { request_id: requestId, ...rest } = (await pipeline.client.cancel(merchant.apiKey, id)).body as Record<string, unknown>;
      expect(requestId).to.be.a('string');
      return rest;
    };
    const cancelBefore = await cancelOf(ids.mixed);
    // a late duplicate of a final receipt, as a connector repeating itself would send it
    const duplicateReceipt = () =>
      pipeline.api.node.gateway.router
        .message(merchant.merchantId, ids.delivered)
        .ask({ type: 'apply_receipt', receipt: { occurrence: 0, recipient: 0, status: 'delivered', at: Date.now() } });
    const duplicateBefore = await duplicateReceipt();
    const seqsBefore = new Map<string, number[]>();
    for (const id of all) seqsBefore.set(id, await seqsOf(`message:${id}`));
    const walletBefore = await seqsOf(`wallet:${merchant.merchantId}`);
    const settled = [ids.delivered, ids.mixed];
    for (const id of settled) expect(seqsBefore.get(id)?.length, `records of ${id}`).to.be.greaterThan(1);
    const expectedDeleted = settled.reduce((n, id) => n + (seqsBefore.get(id)?.length ?? 0) - 1, 0);

    const outcome = await prune('0');

    expect(outcome).to.deep.include({ messages_pruned: 2, records_deleted: expectedDeleted, not_settled: 1, failed: [] });
    for (const id of settled) {
      const last = seqsBefore.get(id)?.at(-1);
      expect(await seqsOf(`message:${id}`), `records of ${id} after the prune`).to.deep.equal([last]);
      expect(await snapshotSeqOf(`message:${id}`)).to.equal(last);
    }
    for (const id of [ids.pending, ids.scheduled])
      expect(await seqsOf(`message:${id}`), `records of ${id}`).to.deep.equal(seqsBefore.get(id));
    expect(await seqsOf(`wallet:${merchant.merchantId}`), 'the wallet journal').to.deep.equal(walletBefore);

    await pipeline.restartNode();

    for (const id of all) expect(await statusText(id), `GET /status of ${id} after the restart`).to.equal(before.get(id));
    expect(await cancelOf(ids.mixed), 'cancel of a pruned message').to.deep.equal(cancelBefore);
    expect(await duplicateReceipt(), 'a duplicate receipt on a pruned message').to.deep.equal(duplicateBefore);
    expect(await statusText(ids.delivered)).to.equal(before.get(ids.delivered));
    // a second run finds nothing left to prune
    expect(await prune('0')).to.deep.include({ messages_pruned: 0, records_deleted: 0, not_settled: 1 });
  });

  it('when the settled messages are more recent than the days given, then nothing is pruned', async () => {
    expect(await prune('1')).to.deep.include({ candidates: 0, messages_pruned: 0, records_deleted: 0 });
  });
});
