import type { DispatchOutboxPayload } from './dispatch-outbox.js';
import { dispatchId, type DispatchJob } from './carrier-protocol.js';

/** One recipient's dispatch of an occurrence, and the carrier whose connector sends it. */
export interface CarrierDispatch {
  readonly carrier: string;
  readonly job: DispatchJob;
}

/**
 * An occurrence dispatched to every recipient → one job per recipient, each named by its dispatch id (the same
 * whenever it is built again, so that the broker deduplicates a dispatch relayed twice).
 */
export function dispatchJobsOf(payload: DispatchOutboxPayload, submittedAt: string): CarrierDispatch[] {
  return payload.recipients.map((recipient) => ({
    carrier: recipient.carrier,
    job: {
      version: 1,
      dispatch_id: dispatchId(payload.messageId, payload.occurrence, recipient.index),
      message_id: payload.messageId,
      occurrence_index: payload.occurrence,
      recipient_index: recipient.index,
      to: recipient.phone,
      sender_id: payload.senderId,
      text: payload.text,
      encoding: payload.encoding,
      segments: payload.segments,
      submitted_at: submittedAt,
    },
  }));
}
