import type { DeadLetter } from '../../libraries/persistence/dead-letters-port.js';
import { done, limitOption, rejected, type CliGateway, type CommandOutcome, type CommandSpec } from './command.js';
import { humanTime, isoTime, table } from './format.js';

/**
 * Webhook events the gateway gave up on (the merchant's endpoint answered 4xx, every retry failed, or its address is
 * not public): listed for operators, and replayed once the merchant has fixed the endpoint. A replay removes the
 * letter and sends the event again as a first attempt, with the contract's retries; the event keeps its event_id,
 * so a merchant deduplicating by it is safe.
 */

export const DEFAULT_DEAD_LETTER_LIMIT = 100;
const MAX_DEAD_LETTER_LIMIT = 10_000;

function letterJson(letter: DeadLetter) {
  return {
    id: letter.id,
    event_id: letter.eventId,
    merchant_id: letter.merchantId,
    key_id: letter.keyId,
    url: letter.url,
    reason: letter.reason,
    attempts: letter.attempts,
    last_status: letter.lastStatus,
    last_error: letter.lastError,
    dropped_at: isoTime(letter.droppedAt),
    event: letter.event,
  };
}

const eventType = (letter: DeadLetter): string => {
  const event = letter.event as { readonly event_type?: unknown } | null;
  return typeof event?.event_type === 'string' ? event.event_type : '?';
};

export async function listDeadLetters(
  gateway: CliGateway,
  options: { readonly merchantId?: string | undefined; readonly limit?: number | undefined },
): Promise<CommandOutcome> {
  if (options.merchantId !== undefined && !(await gateway.persistence.directory.merchant(options.merchantId))) {
    return rejected(`unknown merchant ${options.merchantId}`);
  }
  const letters = await gateway.persistence.deadLetters.list({
    ...(options.merchantId !== undefined ? { merchantId: options.merchantId } : {}),
    limit: options.limit ?? DEFAULT_DEAD_LETTER_LIMIT,
  });
  const text = table(
    ['ID', 'MERCHANT', 'EVENT', 'URL', 'REASON', 'ATTEMPTS', 'LAST', 'DROPPED'],
    letters.map((letter) => [
      letter.id,
      letter.merchantId,
      eventType(letter),
      letter.url,
      letter.reason,
      String(letter.attempts),
      letter.lastStatus !== null ? String(letter.lastStatus) : (letter.lastError ?? '-'),
      humanTime(letter.droppedAt),
    ]),
    'No dropped webhook events.',
  );
  return done(text, letters.map(letterJson));
}

export async function replayDeadLetter(gateway: CliGateway, id: string): Promise<CommandOutcome> {
  if (!(await gateway.replayDeadLetter(id))) return rejected(`no dropped webhook event ${id}`);
  return done(`Replaying ${id}: sent again as a first attempt, with the usual retries.`, { replayed: id });
}

export const WEBHOOK_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['webhooks', 'dead-letters'],
    args: [],
    usage: '[--merchant <id>] [--limit <n>]',
    summary: `webhook events given up on (4xx, retries exhausted, refused address), oldest first (at most ${DEFAULT_DEAD_LETTER_LIMIT} unless --limit)`,
    options: { merchant: { type: 'string' }, limit: { type: 'string' } },
    prepare(args) {
      const limit = limitOption(args.option('limit'), MAX_DEAD_LETTER_LIMIT);
      if (typeof limit === 'object') return limit;
      const merchantId = args.option('merchant');
      return (gateway) => listDeadLetters(gateway, { merchantId, limit });
    },
  },
  {
    words: ['webhooks', 'replay'],
    args: ['deadLetterId'],
    summary: 'send a dropped event again (it leaves the list); the event keeps its event_id',
    prepare: (args) => (gateway) => replayDeadLetter(gateway, args.arg('deadLetterId')),
  },
];
