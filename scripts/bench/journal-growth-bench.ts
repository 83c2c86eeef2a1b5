/**
 * npm run bench:journal-growth [-- <messages>] — how much PostgreSQL grows per message, and what the JetStream
 * streams keep once everything is consumed.
 *
 * The whole pipeline runs (private PostgreSQL and nats-server, one gateway node with the sandbox simulator, a webhook
 * receiver): N immediate one-recipient sends, each delivered, with its four webhook events. Once every event has
 * arrived, it prints the growth of the journal, snapshot, outbox and message-owner tables (pg_total_relation_size:
 * rows, indexes and TOAST) per message, and the messages each stream still holds (docs/operations.md).
 */
import { jetstreamManager } from '@nats-io/jetstream';
import { connect } from '@nats-io/transport-node';
import pg from 'pg';
import { STREAMS } from '../../src/libraries/transport/transport-port.js';
import { startWebhookReceiver } from '../../test/helpers/webhook-receiver.js';
import { merchantWithWebhook, numberEnding, send, startPipeline } from '../../test/integration/pipeline/pipeline-fixture.js';

const TABLES = ['journal', 'snapshots', 'outbox', 'message_owners'] as const;
/** sms.queued, sms.processing, sms.sent, sms.delivered. */
const EVENTS_PER_MESSAGE = 4;
const IN_FLIGHT = 20;

async function tableBytes(databaseUrl: string): Promise<Record<string, { bytes: number; rows: number }>> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    const sizes: Record<string, { bytes: number; rows: number }> = {};
    for (const table of TABLES) {
      // VACUUM first: the outbox's deleted rows would otherwise count until autovacuum comes
      await client.query(`VACUUM ${table}`);
      const size = await client.query<{ bytes: string; rows: string }>(
        `SELECT pg_total_relation_size($1) AS bytes, (SELECT count(*) FROM ${table}) AS rows`,
        [table],
      );
      sizes[table] = { bytes: Number(size.rows[0]?.bytes ?? 0), rows: Number(size.rows[0]?.rows ?? 0) };
    }
    return sizes;
  } finally {
    await client.end();
  }
}

async function main(): Promise<void> {
  const messages = Number(process.argv[2] ?? 2_000);
  const receiver = await startWebhookReceiver();
  const pipeline = await startPipeline();
  try {
    const merchant = await merchantWithWebhook(pipeline.api.node.gateway, receiver.url);
    const before = await tableBytes(pipeline.databaseUrl);
    let next = 0;
    const started = performance.now();
    await Promise.all(
      Array.from({ length: IN_FLIGHT }, async () => {
        while (next < messages) {
          next++;
          await send(pipeline.client, merchant.apiKey, [numberEnding('00')]);
        }
      }),
    );
    await receiver.waitFor((requests) => requests.length >= messages * EVENTS_PER_MESSAGE, 600_000, 'every webhook event');
    const seconds = (performance.now() - started) / 1000;
    // let the outbox relay retire what it carried out
    await pipeline.api.node.gateway.relay.drain();
    const after = await tableBytes(pipeline.databaseUrl);

    const admin = await connect({ servers: pipeline.nats.url });
    const jsm = await jetstreamManager(admin);
    const streams: string[] = [];
    for (const { name } of Object.values(STREAMS)) {
      const info = await jsm.streams.info(name);
      streams.push(`${name} ${info.state.messages} messages, ${info.state.bytes} bytes`);
    }
    await admin.close();

    const lines = [
      `${messages} messages (1 recipient, delivered, 4 webhook events each) in ${seconds.toFixed(1)} s`,
      '',
      '| table | rows | bytes | bytes per message |',
      '|---|---|---|---|',
    ];
    let total = 0;
    for (const table of TABLES) {
      const grown = (after[table]?.bytes ?? 0) - (before[table]?.bytes ?? 0);
      total += grown;
      lines.push(`| ${table} | ${after[table]?.rows ?? 0} | ${grown} | ${(grown / messages).toFixed(0)} |`);
    }
    lines.push(`| total | | ${total} | ${(total / messages).toFixed(0)} |`, '', `streams once consumed: ${streams.join('; ')}`);
    process.stdout.write(`${lines.join('\n')}\n`);
  } finally {
    await pipeline.stop();
    await receiver.close();
  }
}

await main();
process.exit(0);
