/**
 * A gateway node in a child process, driven by JSON lines on stdin, answering JSON lines on stdout. Crash tests
 * SIGKILL it at chosen moments. Commands: {op:'charge', merchantId, chargeId, amount}, {op:'send', merchantId,
 * keyId, body}. Env: DATABASE_URL; FAULT=crash_after_charge kills the process right after the charge's write;
 * JOURNAL=without_companions runs its journal as one that writes no companion records (as MongoDB's), so a send
 * creates its message by a second write after the charge.
 */
import { createInterface } from 'node:readline';
import { createGateway } from '../../src/gateway.js';
import { openPostgresPersistence } from '../../src/libraries/persistence/persistence.js';
import { fromUnits } from '../../src/pricing/money.js';
import { testConfig } from './gateway-fixture.js';

const url = process.env.DATABASE_URL ?? '';
const crashAfterCharge = process.env.FAULT === 'crash_after_charge';

const persistence = await openPostgresPersistence({ url, poolSize: 10 });
const gateway = await createGateway({
  config: testConfig({ database: { url } }),
  persistence:
    process.env.JOURNAL === 'without_companions'
      ? { ...persistence, journal: { ...persistence.journal, writesCompanions: false } }
      : persistence,
  ...(crashAfterCharge
    ? {
        faults: {
          afterCharge: async () => {
            process.stdout.write(`${JSON.stringify({ event: 'charged_then_crashing' })}\n`);
            await new Promise((resolve) => setTimeout(resolve, 20));
            process.kill(process.pid, 'SIGKILL');
          },
        },
      }
    : {}),
});
await gateway.start();
process.stdout.write(`${JSON.stringify({ event: 'ready' })}\n`);

type Command =
  | { op: 'charge'; merchantId: string; chargeId: string; amount: number }
  | { op: 'send'; merchantId: string; keyId: string; body: unknown; ref: string };

const lines = createInterface({ input: process.stdin });
lines.on('line', (line) => {
  const command = JSON.parse(line) as Command;
  void (async () => {
    if (command.op === 'charge') {
      const reply = await gateway.router.wallet(command.merchantId).ask({
        type: 'charge',
        chargeId: command.chargeId,
        amount: fromUnits(command.amount),
        refundable: false,
        idempotency: null,
        followUp: null,
      });
      process.stdout.write(`${JSON.stringify({ ack: command.chargeId, ok: reply.ok })}\n`);
    } else {
      const result = await gateway.useCases.sendMessage({
        merchantId: command.merchantId,
        keyId: command.keyId,
        body: command.body,
        idempotencyKey: null,
      });
      process.stdout.write(
        `${JSON.stringify({ ack: command.ref, ok: result.ok, messageId: result.ok ? result.value.receipt.message_id : null })}\n`,
      );
    }
  })().catch((error: unknown) => {
    process.stdout.write(`${JSON.stringify({ error: String(error) })}\n`);
  });
});
