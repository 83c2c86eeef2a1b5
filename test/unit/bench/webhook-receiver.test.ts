import { expect } from 'chai';
import { startReceiver, type ReceiverProcess } from '../../../scripts/bench/bench-children.js';
import type { ReceivedWebhook } from '../../../scripts/bench/webhook-receiver-process.js';

describe('the bench report receiver (webhook-receiver-process)', () => {
  let receiver: ReceiverProcess | null = null;
  const received: ReceivedWebhook[] = [];
  let wake: (() => void) | null = null;

  before(async () => {
    receiver = await startReceiver((webhook) => {
      received.push(webhook);
      wake?.();
    });
  });

  after(async () => {
    await receiver?.close();
  });

  const next = (count: number): Promise<void> =>
    new Promise((resolve) => {
      wake = () => {
        if (received.length >= count) resolve();
      };
      wake();
    });

  it('reports a Kannel dlr-url call by its id and report type, answered 200 (Kannel calls again after a 204)', async () => {
    const response = await fetch(`${receiver?.url ?? ''}?id=r1a7&type=1`);
    expect(response.status).to.equal(200);
    await next(1);
    expect(received[0]).to.include({ type: 'kannel:1', messageId: 'r1a7', recipientIndex: null });
  });

  it('reports a gateway webhook by its event type, message and recipient', async () => {
    const body = { event_id: 'evt_1', event_type: 'sms.delivered', message_id: 'msg_1', data: { recipient_index: 0 } };
    const response = await fetch(receiver?.url ?? '', {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify(body),
    });
    expect(response.status).to.equal(204);
    await next(2);
    expect(received[1]).to.include({ type: 'sms.delivered', messageId: 'msg_1', recipientIndex: 0, eventId: 'evt_1' });
  });
});
