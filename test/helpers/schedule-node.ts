/**
 * A gateway node with its HTTP API, the database bus and Agenda, in a child process that crash tests SIGKILL
 * (test/integration/scheduling/crash-schedule.test.ts).
 * Prints `{event:'ready', api}` once it serves. Commands on stdin (JSON lines): `{op:'clock', offsetMs, ref}` moves
 * its wall clock to the test process's (see wall-clock.ts), answered `{ack: ref}`.
 * Env: DATABASE_URL, NODE_ID, WALL_CLOCK_OFFSET_MS.
 */
import './wall-clock-from-env.js';
import { createInterface } from 'node:readline';
import { startApi } from './http-fixture.js';
import { installWallClock } from './wall-clock.js';

const MANY = 1_000_000;

const fixture = await startApi(process.env.DATABASE_URL ?? '', {
  config: {
    rateLimits: { send: MANY, status: MANY, balance: MANY, calculate: MANY, management: MANY },
    cluster: { nodeId: process.env.NODE_ID ?? 'schedule-node' },
  },
});
process.stdout.write(`${JSON.stringify({ event: 'ready', api: fixture.api })}\n`);

createInterface({ input: process.stdin }).on('line', (line) => {
  const command = JSON.parse(line) as { op: 'clock'; offsetMs: number; ref: string };
  installWallClock(command.offsetMs);
  process.stdout.write(`${JSON.stringify({ ack: command.ref })}\n`);
});
