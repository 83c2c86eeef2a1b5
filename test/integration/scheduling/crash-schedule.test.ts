import { PostgresBackend } from '@agendajs/postgres-backend';
import { expect } from 'chai';
import type { Gateway } from '../../../src/gateway.js';
import { DISPATCH_TOPIC, type DispatchOutboxPayload } from '../../../src/carriers/dispatch-outbox.js';
import { startChild, type ChildNode } from '../../helpers/child-node.js';
import { client, dataOf, NUMBERS, type SendData } from '../../helpers/api-helpers.js';
import { gatewayOnPostgres, seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { testPostgres } from '../../helpers/postgres.js';
import { dispatchCounts, eventually, iso, messageEvents } from './scheduling-fixture.js';
import { installWallClock, jumpBeforeNextMinute, jumpForward, uninstallWallClock, wallClockOffset } from '../../helpers/wall-clock.js';

const MINUTE = 60_000;
const HOUR = 3_600_000;
/** Agenda's lock lifetime (occurrence-scheduler.ts): a job locked by a killed node is taken again after it. */
const LOCK_LIFETIME_MS = 60_000;

function kinshasaLocal(instant: number): { date: string; time: string } {
  const local = new Date(instant + HOUR).toISOString();
  return { date: local.slice(0, 10), time: local.slice(11, 16) };
}

const sleep = (ms: number) => new Promise((resolve) => setTimeout(resolve, ms));

describe('scheduled occurrences across node crashes (SIGKILL, PostgreSQL, child processes)', function () {
  this.timeout(90_000);
  let url: string;
  /** Reads the journal and Agenda's jobs; runs no actor the nodes run (it never starts). */
  let operator: Gateway;
  let shop: SeededMerchant;
  const children: ChildNode[] = [];

  before(async () => {
    installWallClock();
    url = await (await testPostgres()).createDatabase('crash_schedule');
    operator = await gatewayOnPostgres(url, { agendaBackend: new PostgresBackend({ connectionString: url, disableNotifications: true }) });
    shop = await seedMerchant(operator, { prepaid: '10' });
    // the nodes own the merchant's actors from now on
    operator.hosts.wallets.passivate();
    operator.hosts.apiKeys.passivate();
  });
  after(async () => {
    for (const child of children) await child.kill('SIGKILL');
    await operator.stop();
    uninstallWallClock();
  });

  async function startNode(nodeId: string): Promise<{ child: ChildNode; api: string }> {
    const child = startChild('schedule-node.ts', { DATABASE_URL: url, NODE_ID: nodeId, WALL_CLOCK_OFFSET_MS: String(wallClockOffset()) });
    children.push(child);
    const ready = await child.waitFor((m) => m.event === 'ready', 30_000);
    return { child, api: String(ready.api) };
  }

  /** Moves a running node's wall clock to the test process's. */
  async function syncClock(child: ChildNode, ref: string): Promise<void> {
    child.send({ op: 'clock', offsetMs: wallClockOffset(), ref });
    await child.waitFor((m) => m.ack === ref, 5_000);
  }

  const dispatchedAt = async (id: string, index: number) =>
    (await messageEvents(operator, id)).find((e) => e.type === 'occurrence_dispatched' && e.occurrence === index)?.at;

  /** `carrier.dispatch` entries of a message not yet handed to the transport. */
  async function dispatchesInOutbox(id: string): Promise<number[]> {
    const entries = await operator.persistence.outbox.pending({ limit: 10_000, topics: [DISPATCH_TOPIC] });
    return entries
      .map((e) => e.payload as DispatchOutboxPayload)
      .filter((p) => p.messageId === id)
      .map((p) => p.occurrence);
  }

  it('when the node dies before an occurrence and comes back after it, then the late occurrence goes once; when it dies right after a dispatch, then the restarted node does not send it again', async () => {
    const first = await startNode('node-1');
    const at = jumpBeforeNextMinute(5_000);
    const next = at + MINUTE;
    await syncClock(first.child, 'clock-1');
    const http = client(() => first.api);
    const body = {
      to: [NUMBERS.vodacom],
      message: 'crash',
      sending_type: 'scheduled',
      scheduled_dates: [kinshasaLocal(at), kinshasaLocal(next)],
    };
    const ids = [
      dataOf<SendData>(await http.send(shop.apiKey, body), 201).message_id,
      dataOf<SendData>(await http.send(shop.apiKey, body), 201).message_id,
    ];
    for (const id of ids) {
      await eventually(`the job of ${id}`, 5_000, async () =>
        (await operator.scheduler?.jobs({ messageId: id }))?.[0]?.nextRunAt === iso(at) ? true : undefined,
      );
    }

    // 1. killed just before the first occurrence, which falls due while no node runs
    await sleep(at - 1_000 - Date.now());
    await first.child.kill('SIGKILL');
    expect(Date.now()).to.be.below(at);
    for (const id of ids) expect(await dispatchCounts(operator, id), id).to.deep.equal({});
    // the node stays down for half a minute
    jumpForward(30_000);
    const restartedAt = Date.now();
    const second = await startNode('node-2');
    for (const id of ids) {
      const late = await eventually(`the late occurrence of ${id}`, 25_000, () => dispatchedAt(id, 0));
      expect(late, 'it went late, after the restart').to.be.at.least(restartedAt);
    }
    for (const id of ids) expect(await dispatchCounts(operator, id), id).to.deep.equal({ 0: 1 });

    // 2. killed right after the second occurrence of one message left (its dispatch barely journaled)
    jumpForward(next - 3_000 - Date.now());
    await syncClock(second.child, 'clock-2');
    await eventually('the second occurrence', 10_000, () => dispatchedAt(ids[0]!, 1), 5);
    await second.child.kill('SIGKILL');
    // back after Agenda's lock lifetime: a job the dead node held is free again
    jumpForward(LOCK_LIFETIME_MS + 1_000);
    await startNode('node-3');
    for (const id of ids) await eventually(`occurrence 1 of ${id}`, 25_000, () => dispatchedAt(id, 1));
    // the restarted node relays what the dead one had not handed over yet, and dispatches nothing twice
    for (const id of ids)
      await eventually(`the dispatches of ${id} relayed`, 15_000, async () =>
        (await dispatchesInOutbox(id)).length === 0 ? true : undefined,
      );
    await sleep(1_500);
    for (const id of ids) expect(await dispatchCounts(operator, id), id).to.deep.equal({ 0: 1, 1: 1 });
    for (const id of ids) {
      const job = await eventually(`the job of ${id} finished`, 10_000, async () => {
        const [current] = (await operator.scheduler?.jobs({ messageId: id })) ?? [];
        return current?.nextRunAt === null && current.lockedAt === null ? current : undefined;
      });
      expect(job.failReason).to.equal(null);
    }
  });
});
