import { expect } from 'chai';
import { createLogger } from '../../../src/libraries/logger/logger.js';
import type { DeadLetter } from '../../../src/libraries/persistence/dead-letters-port.js';
import { seedMerchant, type SeededMerchant } from '../../helpers/gateway-fixture.js';
import { always, failFirst, respond, startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import { numberEnding, send, startPipeline, type Pipeline } from '../pipeline/pipeline-fixture.js';

type LogLine = Record<string, unknown> & { readonly msg?: string };

/** The contract's 30 s, 2 min… scaled down: three attempts in all. */
const RETRY_DELAYS_MS = [50, 100] as const;
/** A recipient ending 91 (rejected) gives sms.queued, sms.processing, sms.failed. */
const EVENT_TYPES = ['sms.queued', 'sms.processing', 'sms.failed'];
const PASSWORD = 'b4sic-pa55word-never-logged';
const IN_URL_PASSWORD = 'in-url-pa55';
const QUERY_SECRET = 'query-t0ken';
const CALLBACK_SECRET = 'callback-t0ken';

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$/;

/** Over the real pipeline (PostgreSQL, NATS, the sandbox simulator), with the node's log lines captured. */
describe('webhooks: one log line per failed attempt, and never a credential', function () {
  this.timeout(60_000);
  const raw: string[] = [];
  let lines: LogLine[];
  let pipeline: Pipeline;
  let flaky: WebhookReceiver;
  let dead: WebhookReceiver;
  let retried: SeededMerchant;
  let dropped: SeededMerchant;
  let retriedMessage: string;
  let droppedMessage: string;
  let letters: readonly DeadLetter[];

  const failures = (merchant: SeededMerchant): LogLine[] =>
    lines.filter(
      (line) => typeof line.msg === 'string' && line.msg.startsWith('webhook attempt failed') && line.merchant_id === merchant.merchantId,
    );

  before(async () => {
    // Arrange: two merchants; one endpoint fails each event's first attempt, the other always fails. Both URLs carry
    // credentials in their userinfo and a token in their query string; the first key also has a Basic password.
    const logger = createLogger({ level: 'info', destination: { write: (line) => raw.push(line) } });
    pipeline = await startPipeline({ webhooks: { timeoutMs: 2_000, retryDelaysMs: [...RETRY_DELAYS_MS] } }, { logger });
    flaky = await startWebhookReceiver({ path: '/flaky', behaviour: failFirst(1, respond(500)) });
    dead = await startWebhookReceiver({ path: '/dead', behaviour: always(respond(503)) });
    const gateway = pipeline.api.node.gateway;
    retried = await seedMerchant(gateway, { name: 'Flaky endpoint', prepaid: '10' });
    dropped = await seedMerchant(gateway, { name: 'Dead endpoint', prepaid: '10' });
    const withSecrets = (url: string) => url.replace('http://', `http://shop:${IN_URL_PASSWORD}@`) + `?token=${QUERY_SECRET}`;
    expect(
      await gateway.useCases.apiKeys.setWebhook(retried.keyId, { url: withSecrets(flaky.url), username: 'shop', password: PASSWORD }),
    ).to.equal(true);

    // Act: one send each; the second merchant's events go to its send's callback_url only
    retriedMessage = (await send(pipeline.client, retried.apiKey, [numberEnding('91')])).message_id;
    droppedMessage = (
      await send(pipeline.client, dropped.apiKey, [numberEnding('91')], { callback_url: `${dead.url}?token=${CALLBACK_SECRET}` })
    ).message_id;
    await flaky.waitFor((requests) => requests.length >= 2 * EVENT_TYPES.length, 20_000, 'every event failed once, then delivered');
    letters = await eventually(
      async () => {
        const found = await gateway.persistence.deadLetters.list({ merchantId: dropped.merchantId, limit: 10 });
        return found.length === EVENT_TYPES.length ? found : null;
      },
      20_000,
      'every event of the dead endpoint dead-lettered',
    );
    await eventually(
      () => Promise.resolve(raw.filter((line) => line.includes('"dead_letter"')).length >= EVENT_TYPES.length),
      5_000,
      'the dead letters logged',
    );
    lines = raw.map((line) => JSON.parse(line) as LogLine);
  });

  after(async () => {
    await flaky.close();
    await dead.close();
    await pipeline.stop();
  });

  it('when an endpoint answers 500 and then 200, then each event has exactly one line, for its failed first attempt, with the time of the next', () => {
    const found = failures(retried);

    expect(found.map((line) => line.event_type)).to.have.members(EVENT_TYPES);
    for (const line of found) {
      expect(line).to.deep.include({
        level: 40,
        msg: 'webhook attempt failed: retrying',
        merchant_id: retried.merchantId,
        message_id: retriedMessage,
        attempt: 1,
        outcome: 'http_500',
        target: 'webhook_url',
        url: flaky.url,
      });
      // the next attempt came when the line said (the worker starts a due job up to 5 ms early)
      const [, second] = flaky.deliveriesOf(String(line.event_id));
      expect(second, 'the second attempt of the event').to.not.equal(undefined);
      expect(line.next_attempt_at).to.match(ISO);
      expect(second!.at).to.be.at.least(Date.parse(String(line.next_attempt_at)) - 5);
      expect(line).not.to.have.property('dead_letter');
    }
    // the successful second attempts add nothing
    expect(found).to.have.length(EVENT_TYPES.length);
  });

  it('when an endpoint always fails, then each attempt has its line and the last one says the event is dead-lettered, and why', () => {
    const found = failures(dropped);

    expect(found).to.have.length(EVENT_TYPES.length * (RETRY_DELAYS_MS.length + 1));
    for (const eventType of EVENT_TYPES) {
      const ofEvent = found.filter((line) => line.event_type === eventType);
      expect(ofEvent.map((line) => line.attempt)).to.deep.equal([1, 2, 3]);
      for (const line of ofEvent) {
        expect(line).to.deep.include({
          merchant_id: dropped.merchantId,
          message_id: droppedMessage,
          outcome: 'http_503',
          target: 'callback_url',
          url: dead.url,
        });
      }
      expect(ofEvent.slice(0, 2).map((line) => line.msg)).to.deep.equal([
        'webhook attempt failed: retrying',
        'webhook attempt failed: retrying',
      ]);
      expect(ofEvent[2]).to.deep.include({ msg: 'webhook attempt failed: event dead-lettered', dead_letter: 'retries_exhausted' });
      expect(ofEvent[2]).not.to.have.property('next_attempt_at');
      // the line names the dead letter an operator replays
      const letter = letters.find((l) => l.eventId === ofEvent[0]!.event_id);
      expect(letter?.reason).to.equal('retries_exhausted');
    }
  });

  it("never logs the Basic password (nor its header), the URLs' userinfo or their query strings", () => {
    const text = raw.join('\n');
    const forbidden = [
      PASSWORD,
      Buffer.from(`shop:${PASSWORD}`).toString('base64'),
      IN_URL_PASSWORD,
      'shop:',
      QUERY_SECRET,
      CALLBACK_SECRET,
      '?token',
    ];
    expect(failures(retried).length + failures(dropped).length).to.be.greaterThan(0);
    for (const value of forbidden) expect(text.includes(value), value).to.equal(false);
  });
});
