import type { Clock } from '../libraries/clock/clock.js';
import { toIsoUtc } from '../libraries/clock/clock.js';
import type { TopicHandler } from '../libraries/persistence/outbox-relay.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { DispatchOutboxPayload } from '../messaging/message-behaviour.js';
import { dispatchId, dispatchSubject, type DispatchJob } from './carrier-protocol.js';

/**
 * Outbox `carrier.dispatch` (one occurrence to every recipient) → one job per recipient on
 * `sms.dispatch.<carrier>`, published with the dispatch id as message id, so a relay repeated after a crash is
 * deduplicated by the broker and the connector sees each dispatch once.
 */
export function createDispatchRelay(deps: { transport: Transport; clock: Clock }): TopicHandler {
  return {
    async handle(entries) {
      const done: string[] = [];
      for (const entry of entries) {
        const payload = entry.payload as DispatchOutboxPayload;
        const submittedAt = toIsoUtc(deps.clock.now());
        await Promise.all(
          payload.recipients.map((recipient) => {
            const id = dispatchId(payload.messageId, payload.occurrence, recipient.index);
            const job: DispatchJob = {
              version: 1,
              dispatch_id: id,
              message_id: payload.messageId,
              occurrence_index: payload.occurrence,
              recipient_index: recipient.index,
              to: recipient.phone,
              sender_id: payload.senderId,
              text: payload.text,
              encoding: payload.encoding,
              segments: payload.segments,
              submitted_at: submittedAt,
            };
            return deps.transport.publish(dispatchSubject(recipient.carrier), job, { id });
          }),
        );
        done.push(entry.id);
      }
      return done;
    },
  };
}
