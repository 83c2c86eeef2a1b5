import { expect } from 'chai';
import { secretContext } from '../../../../src/api-keys/api-key-behaviour.js';
import type { ActorRouter } from '../../../../src/cluster/actor-router.js';
import { createLogger } from '../../../../src/libraries/logger/logger.js';
import type { DeadLetter, DeadLetters } from '../../../../src/libraries/persistence/dead-letters-port.js';
import { createSecretBox, type StoredSecret } from '../../../../src/libraries/secrets/secret-box.js';
import { ACK, retryAfter, type Delivery, type Disposition, type Transport } from '../../../../src/libraries/transport/transport-port.js';
import type { WebhookEvent } from '../../../../src/webhooks/event-envelope.js';
import type { AttemptResult } from '../../../../src/webhooks/retry-plan.js';
import type { WebhookJob } from '../../../../src/webhooks/webhook-jobs.js';
import type { WebhookSender } from '../../../../src/webhooks/webhook-sender.js';
import { createWebhookWorker } from '../../../../src/entry-points/transport/webhook-worker.js';

const NOW = Date.UTC(2026, 10, 23, 9, 0, 0);
/** Each attempt takes 40 ms on this clock. */
const ATTEMPT_MS = 40;
const RETRY_DELAYS_MS = [30_000, 120_000];
const PASSWORD = 'c0rrect-h0rse';
const URL_WITH_SECRETS = 'https://shop:in-url-pass@merchant.example:8443/hooks/sms?token=query-secret#frag';

const EVENT = {
  event_id: '6f1c1a4e-1f7e-4c55-9a7e-0c6a2f3b9d10',
  event_type: 'sms.delivered',
  timestamp: '2026-11-23T09:00:00.000Z',
  message_id: 'msg_0123456789abcdef0123456789abcdef',
  data: {},
} as unknown as WebhookEvent;

type LogLine = Record<string, unknown>;

function jobOf(attempt: number, auth: 'key' | 'none' = 'key'): WebhookJob {
  return {
    version: 1,
    jobId: `${EVENT.event_id}:abc`,
    merchantId: 'mer_logged',
    keyId: 'key_logged',
    url: URL_WITH_SECRETS,
    auth,
    event: EVENT,
    attempt,
    dueAt: NOW,
  };
}

/**
 * A worker over a recording transport, a sender answering `result` after ATTEMPT_MS, a key whose webhook has Basic
 * credentials (the password sealed as `sealed` says), and a logger writing into `lines`.
 */
async function workerAnswering(result: AttemptResult, options: { sealedWith?: Buffer; brokerDown?: boolean } = {}) {
  let now = NOW;
  const clock = { now: () => now };
  const box = createSecretBox({ current: Buffer.alloc(32, 7) });
  const sealing = options.sealedWith ? createSecretBox({ current: options.sealedWith }) : box;
  const password: StoredSecret = sealing.seal(PASSWORD, secretContext.webhookPassword('key_logged'));
  const router = {
    apiKey: () => ({
      ask: () =>
        Promise.resolve({ ok: true, target: { webhook: { url: URL_WITH_SECRETS, username: 'shop', password }, signingSecret: null } }),
    }),
  } as unknown as ActorRouter;
  const sender: WebhookSender = {
    send() {
      now += ATTEMPT_MS;
      return Promise.resolve(result);
    },
    close: () => Promise.resolve(),
  };
  const published: WebhookJob[] = [];
  let handler: ((delivery: Delivery) => Promise<Disposition>) | null = null;
  const transport = {
    kind: 'nats',
    publish(_subject: string, payload: unknown) {
      if (options.brokerDown) return Promise.reject(new Error('broker unreachable'));
      published.push(payload as WebhookJob);
      return Promise.resolve();
    },
    consume(spec: { handler: (delivery: Delivery) => Promise<Disposition> }) {
      handler = spec.handler;
      return Promise.resolve({ stop: () => Promise.resolve() });
    },
  } as unknown as Transport;
  const letters: DeadLetter[] = [];
  const deadLetters = {
    record(letter: DeadLetter) {
      letters.push(letter);
      return Promise.resolve();
    },
  } as unknown as DeadLetters;
  const raw: string[] = [];
  const logger = createLogger({ level: 'info', destination: { write: (line) => raw.push(line) } });
  const worker = createWebhookWorker({
    transport,
    router,
    sender,
    deadLetters,
    clock,
    retryDelaysMs: RETRY_DELAYS_MS,
    secrets: box,
    concurrencyPerMerchant: 4,
    concurrency: 16,
    logger,
  });
  await worker.start();
  return {
    async deliver(job: WebhookJob, disposition: Disposition = ACK): Promise<LogLine[]> {
      if (!handler) throw new Error('no consumer');
      expect(await handler({ subject: 'webhook.jobs.mer_logged', id: 'd1', payload: job, headers: {}, deliveryCount: 1 })).to.deep.equal(
        disposition,
      );
      return raw.map((line) => JSON.parse(line) as LogLine);
    },
    raw,
    published,
    letters,
  };
}

const WHO = {
  merchant_id: 'mer_logged',
  message_id: EVENT.message_id,
  event_id: EVENT.event_id,
  event_type: 'sms.delivered',
  url: 'https://merchant.example:8443/hooks/sms',
};

describe('webhook worker: one log line per failed attempt', () => {
  it("when an attempt answers 503 and a retry follows, then one warn line names the event, the attempt, http_503 and the next attempt's time", async () => {
    const worker = await workerAnswering({ type: 'response', status: 503 });

    const lines = await worker.deliver(jobOf(1));

    expect(lines).to.have.length(1);
    const nextAt = NOW + ATTEMPT_MS + RETRY_DELAYS_MS[0]!;
    expect(lines[0]).to.deep.include({
      level: 40,
      msg: 'webhook attempt failed: retrying',
      ...WHO,
      attempt: 1,
      outcome: 'http_503',
      target: 'webhook_url',
      duration_ms: ATTEMPT_MS,
      next_attempt_at: new Date(nextAt).toISOString(),
    });
    expect(lines[0]).not.to.have.property('dead_letter');
    expect(worker.published.map((job) => [job.attempt, job.dueAt])).to.deep.equal([[2, nextAt]]);
  });

  for (const [label, result, outcome] of [
    ['times out', { type: 'timeout' }, 'timeout'],
    [
      'is refused a connection',
      { type: 'connection_error', kind: 'connection_refused', reason: 'connect ECONNREFUSED 203.0.113.9:8443' },
      'connection_refused',
    ],
    ['answers a redirect', { type: 'response', status: 302 }, 'http_302'],
  ] as const) {
    it(`when an attempt ${label}, then its line says ${outcome} and when the next attempt is due`, async () => {
      const worker = await workerAnswering(result);

      const lines = await worker.deliver(jobOf(2, 'none'));

      expect(lines).to.have.length(1);
      expect(lines[0]).to.deep.include({
        ...WHO,
        attempt: 2,
        outcome,
        target: 'callback_url',
        next_attempt_at: new Date(NOW + ATTEMPT_MS + RETRY_DELAYS_MS[1]!).toISOString(),
      });
      // the error's own text is not logged (it may quote an address); the outcome names it
      expect(worker.raw.join('')).not.to.include('ECONNREFUSED');
    });
  }

  it('when the last attempt fails, then its line says the event is dead-lettered with retries_exhausted and no next attempt', async () => {
    const worker = await workerAnswering({ type: 'response', status: 500 });

    const lines = await worker.deliver(jobOf(3));

    expect(lines).to.have.length(1);
    expect(lines[0]).to.deep.include({
      level: 40,
      msg: 'webhook attempt failed: event dead-lettered',
      ...WHO,
      attempt: 3,
      outcome: 'http_500',
      dead_letter: 'retries_exhausted',
    });
    expect(lines[0]).not.to.have.property('next_attempt_at');
    expect(worker.letters.map((letter) => letter.reason)).to.deep.equal(['retries_exhausted']);
    expect(worker.published).to.deep.equal([]);
  });

  it('when the endpoint answers 4xx, then the line says the event is dead-lettered as rejected at once', async () => {
    const worker = await workerAnswering({ type: 'response', status: 410 });

    const lines = await worker.deliver(jobOf(1));

    expect(lines).to.have.length(1);
    expect(lines[0]).to.deep.include({ ...WHO, attempt: 1, outcome: 'http_410', dead_letter: 'rejected' });
  });

  it('when the address policy refuses the address dialled, then the line says refused_address and the event is dead-lettered as such', async () => {
    const worker = await workerAnswering({
      type: 'connection_error',
      kind: 'refused_address',
      reason: 'refused_address: 10.0.0.1 is not a public address',
    });

    const lines = await worker.deliver(jobOf(1));

    expect(lines).to.have.length(1);
    expect(lines[0]).to.deep.include({ ...WHO, attempt: 1, outcome: 'refused_address', dead_letter: 'refused_address' });
    expect(worker.letters.map((letter) => letter.reason)).to.deep.equal(['refused_address']);
  });

  it("when the key's Basic password cannot be opened, then nothing is sent and the line says secret_unreadable with the next attempt", async () => {
    const worker = await workerAnswering({ type: 'response', status: 200 }, { sealedWith: Buffer.alloc(32, 9) });

    const lines = await worker.deliver(jobOf(1));

    expect(lines).to.have.length(1);
    // no attempt was made: the clock did not move
    expect(lines[0]).to.deep.include({
      ...WHO,
      attempt: 1,
      outcome: 'secret_unreadable',
      duration_ms: 0,
      next_attempt_at: new Date(NOW + RETRY_DELAYS_MS[0]!).toISOString(),
    });
  });

  it('when the retry cannot be published, then the failed attempt still has its line and the delivery comes back to be made again', async () => {
    const worker = await workerAnswering({ type: 'response', status: 502 }, { brokerDown: true });

    const lines = await worker.deliver(jobOf(1), retryAfter(1_000));

    expect(lines).to.have.length(1);
    expect(lines[0]).to.deep.include({ ...WHO, attempt: 1, outcome: 'http_502', msg: 'webhook attempt failed: retrying' });
  });

  it('when an attempt succeeds, then nothing is logged', async () => {
    const worker = await workerAnswering({ type: 'response', status: 204 });

    expect(await worker.deliver(jobOf(2))).to.deep.equal([]);
  });

  it("never logs the Basic password, the URL's userinfo, its query string or its fragment", async () => {
    for (const result of [{ type: 'response', status: 503 }, { type: 'response', status: 400 }, { type: 'timeout' }] as const) {
      const worker = await workerAnswering(result);

      await worker.deliver(jobOf(1));

      const text = worker.raw.join('');
      for (const secret of [
        PASSWORD,
        Buffer.from(`shop:${PASSWORD}`).toString('base64'),
        'in-url-pass',
        'shop:',
        'query-secret',
        'token=',
        'frag',
      ]) {
        expect(text, secret).not.to.include(secret);
      }
    }
  });
});
