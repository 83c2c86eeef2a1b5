import type { DispatchJob } from '../../src/carriers/carrier-protocol.js';
import { analyseMessage } from '../../src/messaging/segments.js';

let counter = 0;

/** A valid version 1 dispatch job for `to`, its encoding and segments counted as the gateway would; ids `msg_<prefix><n>`. */
export function dispatchJobFor(to: string, text: string, senderId: string | null = 'ACME', idPrefix = 'test'): DispatchJob {
  const analysis = analyseMessage(text);
  counter++;
  return {
    version: 1,
    dispatch_id: `msg_${idPrefix}${counter}:0:0`,
    message_id: `msg_${idPrefix}${counter}`,
    occurrence_index: 0,
    recipient_index: 0,
    to,
    sender_id: senderId,
    text,
    encoding: analysis.encoding,
    segments: analysis.segments,
    submitted_at: new Date().toISOString(),
  };
}
