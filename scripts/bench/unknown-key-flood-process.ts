/**
 * The attacker of `npm run bench:auth-flood`, in its own process so it does not share the gateway's event loop:
 * GET /balance with a fresh random API key on every request, over `connections` keep-alive connections from its own
 * loopback address (127.0.0.2, so the node sees one client address that is not the measured client's), as fast as
 * the answers come, for `seconds`. Prints `{"statuses": {"401": n, "429": n, …}, "requests": n}` on stdout.
 *
 * Usage: tsx unknown-key-flood-process.ts <base url> <connections> <seconds> <key prefix, e.g. sk_test_>
 */
import { randomBytes } from 'node:crypto';
import { Pool } from 'undici';
import { API_ROOT } from './bench-common.js';

async function main(): Promise<void> {
  const [base, connectionsArg, secondsArg, prefix] = process.argv.slice(2);
  if (!base || !connectionsArg || !secondsArg || !prefix)
    throw new Error('usage: unknown-key-flood-process.ts <base url> <connections> <seconds> <key prefix>');
  const connections = Number(connectionsArg);
  const until = Date.now() + Number(secondsArg) * 1000;
  const pool = new Pool(base, { connections, connect: { localAddress: '127.0.0.2' } });
  const statuses = new Map<number, number>();
  let requests = 0;
  const worker = async (): Promise<void> => {
    while (Date.now() < until) {
      // well formed for the node's environment, so each one costs a lookup unless a guard answers first
      const key = `${prefix}${randomBytes(16).toString('hex')}`;
      const response = await pool.request({ path: `${API_ROOT}/balance`, method: 'GET', headers: { 'app-key': key } });
      await response.body.dump();
      statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
      requests++;
    }
  };
  await Promise.all(Array.from({ length: connections }, worker));
  await pool.close();
  process.stdout.write(`${JSON.stringify({ statuses: Object.fromEntries(statuses), requests })}\n`);
}

main().catch((error: unknown) => {
  process.stderr.write(`flood failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
