import { expect } from 'chai';
import { createServer, type Server } from 'node:http';
import type { AddressInfo } from 'node:net';
import { createHttpApp } from '../../../src/entry-points/http/http-app.js';
import { API_ROOT } from '../../../src/entry-points/http/routes.js';
import type { Gateway } from '../../../src/gateway.js';
import type { RequestScope } from '../../../src/libraries/actors/request-deadline.js';
import { createManualClock } from '../../../src/libraries/clock/clock.js';
import { silentLogger } from '../../../src/libraries/logger/logger.js';
import { ActorFailureError } from '../../../src/libraries/errors/internal-errors.js';

/**
 * The HTTP layer gives each request a deadline on the injected clock: its steps run under it, and a request whose
 * deadline has passed by the time it reaches its use case (the node was frozen, or overloaded) starts none of them.
 */
describe('HTTP request deadlines', () => {
  const clock = createManualClock(Date.parse('2026-06-01T00:00:00Z'));
  const BUDGET_MS = 1_000;
  let server: Server;
  let base: string;
  /** What the fake key check does to the clock (the time a frozen or busy node spends before the route). */
  let duringAuthentication: () => void;
  let sends: (number | null)[];
  /** What the fake send fails with, if anything. */
  let failure: Error | null;

  before(async () => {
    const useCases = {
      apiKeys: {
        identify: () => Promise.resolve({ outcome: 'identified', merchantId: 'm1', keyId: 'k1', hash: 'h1' }),
        verify: () => {
          duringAuthentication();
          return Promise.resolve({ outcome: 'authenticated', merchantId: 'm1', keyId: 'k1' });
        },
      },
      sendMessage: (_input: unknown, scope: RequestScope) => {
        if (failure) return Promise.reject(failure);
        sends.push(scope.deadline);
        return Promise.resolve({ ok: true, value: { receipt: { message_id: 'msg-1' }, replayed: false } });
      },
    } as unknown as Gateway['useCases'];
    const app = createHttpApp({
      useCases,
      environment: 'sandbox',
      version: 'test',
      bodyLimitBytes: 10_000,
      health: () => Promise.resolve({ healthy: true, checks: { database: 'ok', transport: 'ok', carriers: {} } }),
      logger: silentLogger,
      deadline: { clock, budgetMs: BUDGET_MS },
    });
    server = createServer(app);
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
    base = `http://127.0.0.1:${(server.address() as AddressInfo).port}${API_ROOT}`;
  });
  after(async () => {
    await new Promise((resolve) => server.close(resolve));
  });
  beforeEach(() => {
    duringAuthentication = () => undefined;
    sends = [];
    failure = null;
  });

  const send = () =>
    fetch(`${base}/send`, {
      method: 'POST',
      headers: { 'app-key': 'key', 'content-type': 'application/json' },
      body: JSON.stringify({ to: ['0812345678'], message: 'hi' }),
    });

  it('when a request reaches its route in time, then its use case runs under the deadline of its arrival plus the budget', async () => {
    const arrival = clock.now();
    const answer = await send();
    expect(answer.status).to.equal(201);
    expect(sends).to.deep.equal([arrival + BUDGET_MS]);
  });

  it('when the deadline passed before the route (a frozen node resuming), then it answers 503/1402 in the envelope and starts no step', async () => {
    duringAuthentication = () => {
      clock.advance(BUDGET_MS);
    };
    const answer = await send();
    expect(answer.status).to.equal(503);
    expect(answer.headers.get('retry-after')).to.equal('1');
    const body = (await answer.json()) as { error_code: string; retry_after: number };
    expect(body).to.include({ error_code: '1402', retry_after: 1 });
    expect(sends).to.deep.equal([]);
  });

  it('when a write was refused at its deadline, then 503/1402; when it was taken but never answered (outcome unknown), then 500/1401, never 503', async () => {
    failure = new ActorFailureError('wallet:m1', 'expired', 'its deadline passed before it was decided');
    const refused = await send();
    expect(refused.status).to.equal(503);
    expect(((await refused.json()) as { error_code: string }).error_code).to.equal('1402');
    failure = new ActorFailureError('wallet:m1', 'timeout', 'taken before its deadline, no answer');
    const unknown = await send();
    expect(unknown.status).to.equal(500);
    expect(((await unknown.json()) as { error_code: string }).error_code).to.equal('1401');
  });
});
