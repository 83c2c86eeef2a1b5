import type { Clock } from '../../libraries/clock/clock.js';
import { toIsoUtc } from '../../libraries/clock/clock.js';
import { runEntryTasks, type TopicHandler } from '../../libraries/persistence/outbox-relay.js';
import { dispatchSubject } from '../../libraries/transport/nats-names.js';
import type { Transport } from '../../libraries/transport/transport-port.js';
import { isDispatchOutboxPayload, type DispatchOutboxPayload } from '../../carriers/dispatch-outbox.js';
import { dispatchJobsOf } from '../../carriers/dispatch-jobs.js';

/**
 * Outbox `carrier.dispatch` (one occurrence to every recipient) → one job per recipient on
 * `sms.dispatch.<carrier>`, published with the dispatch id as message id, so a relay repeated after a crash is
 * deduplicated by the broker and the connector sees each dispatch once. The publishes of a batch run concurrently
 * (bounded): one at a time, the broker's acknowledgements would cap dispatch at a few hundred per second.
 */
/** Publishes in flight at once across a relay batch (each waits for the broker's acknowledgement). */
export const DISPATCH_PUBLISHES_IN_FLIGHT = 256;

export function createDispatchRelay(deps: {
  transport: Transport;
  clock: Clock;
  onError?: (error: unknown) => void;
}): TopicHandler<DispatchOutboxPayload> {
  return {
    accepts: isDispatchOutboxPayload,
    handle(entries) {
      const submittedAt = toIsoUtc(deps.clock.now());
      return runEntryTasks(
        entries,
        (entry) => {
          return dispatchJobsOf(entry.payload, submittedAt).map(
            ({ carrier, job }) =>
              () =>
                deps.transport.publish(dispatchSubject(carrier), job, { id: job.dispatch_id }),
          );
        },
        DISPATCH_PUBLISHES_IN_FLIGHT,
        deps.onError ?? (() => undefined),
      );
    },
  };
}
