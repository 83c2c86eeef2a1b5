import type { Logger } from '../../libraries/logger/logger.js';
import type { SmppLinkEvent } from './smpp-link.js';

/**
 * The SMPP link's events as log lines: binds coming and going at info/warn, each refused or failed bind attempt at
 * warn, throttling and resubmissions at info/warn, mobile-originated messages at info (they are counted, not
 * forwarded), unreadable receipts and receipts the connector could not take at warn.
 */
export function logSmppLinkEvent(logger: Logger, event: SmppLinkEvent): void {
  switch (event.type) {
    case 'bind-up':
      logger.info({ bind: event.bind, session: event.session }, 'smpp bind up');
      return;
    case 'bind-down':
      logger.warn({ bind: event.bind, session: event.session, reason: event.reason }, 'smpp bind down');
      return;
    case 'bind-failed':
      logger.warn({ bind: event.bind, session: event.session, reason: event.reason, attempt: event.attempt }, 'smpp bind attempt failed');
      return;
    case 'enquire-link-timeout':
      logger.warn({ bind: event.bind, session: event.session }, 'smpp enquire_link unanswered: closing the session');
      return;
    case 'resubmit':
      logger.warn(
        { dispatch_id: event.dispatchId, part: event.part, reason: event.reason },
        'smpp part submitted again (the centre may receive it twice)',
      );
      return;
    case 'throttled':
      logger.info({ dispatch_id: event.dispatchId, part: event.part, status: event.status }, 'smpp submit throttled: backing off');
      return;
    case 'mobile-originated':
      logger.info(
        { from: event.from, to: event.to, length: event.text.length },
        'smpp mobile-originated message acknowledged (not forwarded)',
      );
      return;
    case 'unreadable-receipt':
      logger.warn({ reason: event.reason }, 'smpp receipt acknowledged but unreadable');
      return;
    case 'report-failed':
      logger.warn({ reference: event.reference, reason: event.reason }, 'smpp receipt not taken: answered with a temporary error');
      return;
  }
}
