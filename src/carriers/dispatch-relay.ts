import type { Clock } from '../libraries/clock/clock.js';
import { toIsoUtc } from '../libraries/clock/clock.js';
import { runEntryTasks, type TopicHandler } from '../libraries/persistence/outbox-relay.js';
import { dispatchSubject } from '../libraries/transport/nats-names.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import { isDispatchOutboxPayload, type DispatchOutboxPayload } from './dispatch-outbox.js';
import { dispatchId, type DispatchJob } from './carrier-protocol.js';

/**
 * Outbox `carrier.dispatch` (one occurrence to every recipient) → one job per recipient on
 * `sms.dispatch.<carrier>`, published with the dispatch id as message id, so a relay repeated after a crash is
 * deduplicated by the broker and the connector sees each dispatch once. The publishes of a batch run concurrently
 * (bounded): one at a time, the broker's acknowledgements would cap dispatch at a few hundred per second.
 */
/** Publishes in flight at once across a relay batch (each waits for the broker's acknowledgement). */
export const DISPATCH_PUBLISHES_IN_FLIGHT = 256;

export function createDispatchRelay(deps: { transport: Transport; clock: Clock; onError?: (error: unknown) => void }): TopicHandler<DispatchOutboxPayload> {
  return {
    accepts: isDispatchOutboxPayload,
    handle(entries) {
      const submittedAt = toIsoUtc(deps.clock.now());
      return runEntryTasks(
        entries,
        (entry) => {
          const payload = entry.payload;
          return payload.recipients.map((recipient) => () => {
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
          });
        },
        DISPATCH_PUBLISHES_IN_FLIGHT,
        deps.onError ?? (() => undefined),
      );
    },
  };
}
