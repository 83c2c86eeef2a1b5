import { expect } from 'chai';
import type { Receipt, ReceiptBatch } from '../../../src/carriers/carrier-protocol.js';
import { createLogger } from '../../../src/libraries/logger/logger.js';
import { startWebhookReceiver, type WebhookReceiver } from '../../helpers/webhook-receiver.js';
import { eventually } from '../../helpers/eventually.js';
import {
  merchantWithWebhook,
  numberEnding,
  recipientEventTypes,
  send,
  startPipeline,
  statusOf,
  uniqueEvents,
  type MessageStatus,
  type Pipeline,
  type WebhookMerchant,
} from './pipeline-fixture.js';

/**
 * A connector's receipts as the gateway takes them over a real nats-server (docs/carrier-protocol.md section 5):
 * batches and single receipts on the same subject, a bad receipt inside a batch refused on its own, a repeated
 * batch changing nothing. No simulator runs: the test is the connector.
 */
describe('pipeline: receipt batches from a connector', function () {
  this.timeout(60_000);
  let pipeline: Pipeline;
  let hooks: WebhookReceiver;
  let merchant: WebhookMerchant;
  const logLines: string[] = [];
  let first: string;
  let second: string;
  const occurredAt = new Date().toISOString();

  const receipt = (messageId: string, recipient: number, status: Receipt['status'], n: number, extra: Partial<Receipt> = {}): Receipt => ({
    version: 1,
    receipt_id: `${messageId}:0:${recipient}:${n}`,
    dispatch_id: `${messageId}:0:${recipient}`,
    status,
    occurred_at: occurredAt,
    ...extra,
  });
  const publish = (payload: unknown, id: string): Promise<void> => pipeline.transport.publish('sms.receipts.simulator', payload, { id });
  const rejections = (): string[] =>
    logLines
      .map((line) => JSON.parse(line) as { msg?: string; err?: { message?: string } })
      .filter((line) => line.msg === 'receipt_rejected')
      .map((line) => line.err?.message ?? '');

  async function settled(messageId: string): Promise<MessageStatus> {
    return eventually(
      async () => {
        const status = await statusOf(pipeline.client, merchant.apiKey, messageId);
        return status.recipients.every(
          (r) => r.status === 'delivered' || r.status === 'failed' || (r.status === 'sent' && r.carrier_status === 'accepted'),
        )
          ? status
          : null;
      },
      20_000,
      `${messageId} settled`,
    );
  }

  before(async () => {
    const logger = createLogger({ level: 'info', base: { service: 'sms-gateway' }, destination: { write: (line) => logLines.push(line) } });
    pipeline = await startPipeline({}, { inProcessSimulator: false, logger });
    hooks = await startWebhookReceiver({ path: '/hooks' });
    merchant = await merchantWithWebhook(pipeline.api.node.gateway, hooks.url, 'Batching connector');
    first = (await send(pipeline.client, merchant.apiKey, [numberEnding('00'), numberEnding('01'), numberEnding('02')])).message_id;
    second = (await send(pipeline.client, merchant.apiKey, [numberEnding('03')])).message_id;
  });

  after(async () => {
    await hooks.close();
    await pipeline.stop();
  });

  it('applies every valid receipt of a batch, refuses the invalid one and the unknown dispatch on their own, and takes single receipts too', async () => {
    const batch: ReceiptBatch = {
      version: 1,
      batch_id: 'batch-1',
      receipts: [
        receipt(first, 0, 'processing', 0),
        receipt(first, 0, 'accepted', 1),
        receipt(first, 1, 'rejected', 0),
        receipt(second, 0, 'delivered', 0),
        receipt('msg_unknown', 0, 'delivered', 0),
      ],
    };
    const withBadOne = { ...batch, receipts: [...batch.receipts, { ...receipt(first, 2, 'delivered', 0), status: 'teleported' }] };
    await publish(withBadOne, 'batch-1');
    // a connector that does not batch: one receipt per NATS message, on the same subject
    await publish(receipt(first, 2, 'delivered', 1), `${first}:0:2:1`);

    const firstStatus = await settled(first);
    const secondStatus = await settled(second);

    expect(firstStatus.recipients.map((r) => [r.status, r.carrier_status, r.error_code])).to.deep.equal([
      ['sent', 'accepted', null],
      ['failed', 'rejected', '1504'],
      ['delivered', 'delivered', null],
    ]);
    expect(secondStatus.recipients.map((r) => r.status)).to.deep.equal(['delivered']);
    await eventually(() => Promise.resolve(rejections().length >= 2 ? true : null), 10_000, 'both refusals logged');
    expect(rejections()).to.have.length(2);
    expect(rejections().find((m) => m.includes('invalid receipt 5 of batch batch-1'))).to.be.a('string');
    expect(rejections()).to.include('receipt for an unknown dispatch msg_unknown:0:0');
  });

  it('emits each recipient’s events once, in lifecycle order, and a repeated batch under another id adds none', async () => {
    // the same receipts again (as a connector that lost the acknowledgement and rebuilt its batch), with one new
    // receipt at the end whose event shows the repeated batch was taken
    const repeated: ReceiptBatch = {
      version: 1,
      batch_id: 'batch-2',
      receipts: [
        receipt(first, 0, 'processing', 0),
        receipt(first, 1, 'rejected', 0),
        receipt(second, 0, 'delivered', 0),
        receipt(first, 0, 'delivered', 2),
      ],
    };
    await publish(repeated, 'batch-2');
    await hooks.waitFor(() => recipientEventTypes(hooks.events(), first, 0).includes('sms.delivered'), 20_000, 'the new receipt’s event');
    await hooks.waitFor(() => uniqueEvents(hooks.events()).length >= 1 + 3 + 2 + 3 + 1 + 3, 20_000, 'every event');

    const events = uniqueEvents(hooks.events());
    expect(recipientEventTypes(events, first, 0)).to.deep.equal(['sms.processing', 'sms.sent', 'sms.delivered']);
    expect(recipientEventTypes(events, first, 1)).to.deep.equal(['sms.processing', 'sms.failed']);
    expect(recipientEventTypes(events, first, 2)).to.deep.equal(['sms.processing', 'sms.sent', 'sms.delivered']);
    expect(recipientEventTypes(events, second, 0)).to.deep.equal(['sms.processing', 'sms.sent', 'sms.delivered']);
    expect(events.filter((e) => e.event_type === 'sms.queued')).to.have.length(2);
    expect(events).to.have.length(2 + 3 + 2 + 3 + 3);
  });

  it('drops a message that is neither a receipt nor a batch, and reports it', async () => {
    const before = rejections().length;
    await publish({ version: 1, batch_id: 'empty', receipts: [] }, 'empty');

    await eventually(() => Promise.resolve(rejections().length > before ? true : null), 10_000, 'the refusal logged');
    expect(rejections().at(-1)).to.include('invalid receipt batch');
  });
});
