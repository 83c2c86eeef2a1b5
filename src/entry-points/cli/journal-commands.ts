import { COMPACT_JOURNAL } from '../../libraries/actors/behaviour.js';
import { done, limitOption, type CliGateway, type CommandOutcome, type CommandSpec } from './command.js';
import { fields } from './format.js';
import { ActorFailureError } from '../../libraries/errors/internal-errors.js';

/**
 * Bounding the journal: a message settled long ago keeps a snapshot of its state and its last record; its earlier
 * records are deleted. Only message keys: the wallet journal is the ledger, and key journals stay whole too.
 */

const DAY_MS = 86_400_000;
const MESSAGE_PREFIX = 'message:';
export const DEFAULT_PRUNE_LIMIT = 1_000;
const MAX_PRUNE_LIMIT = 1_000_000;

export interface PruneJournalOptions {
  /** Only messages whose last record is at least this many days old. */
  readonly settledDays: number;
  readonly limit?: number | undefined;
}

/**
 * Each candidate is compacted by its own actor, on its shard's owner (COMPACT_JOURNAL): the actor checks it is
 * settled, snapshots its state at its last sequence number, then deletes the records before it.
 */
export async function pruneJournal(gateway: CliGateway, options: PruneJournalOptions): Promise<CommandOutcome> {
  const lastBefore = gateway.clock.now() - options.settledDays * DAY_MS;
  const candidates = await gateway.persistence.journal.prunable({
    prefix: MESSAGE_PREFIX,
    lastBefore,
    limit: options.limit ?? DEFAULT_PRUNE_LIMIT,
  });
  let pruned = 0;
  let deleted = 0;
  let unsettled = 0;
  const failed: string[] = [];
  for (const { key } of candidates) {
    const messageId = key.slice(MESSAGE_PREFIX.length);
    const merchantId = await gateway.persistence.directory.messageOwner(messageId);
    if (merchantId === null) {
      failed.push(`${messageId}: no owner recorded`);
      continue;
    }
    try {
      const reply = await gateway.router.message(merchantId, messageId).ask({ type: COMPACT_JOURNAL });
      if (reply.compacted) {
        pruned++;
        deleted += reply.deleted;
      } else unsettled++;
    } catch (error) {
      // one message its owner cannot reach now is left for the next run; the others go on
      if (!(error instanceof ActorFailureError)) throw error;
      failed.push(`${messageId}: ${error.reason}`);
    }
  }
  const text = fields([
    ['Candidates', String(candidates.length)],
    ['Messages pruned', String(pruned)],
    ['Records deleted', String(deleted)],
    ['Not settled', String(unsettled)],
    ['Failed', String(failed.length)],
  ]);
  return done(
    text,
    {
      settled_days: options.settledDays,
      candidates: candidates.length,
      messages_pruned: pruned,
      records_deleted: deleted,
      not_settled: unsettled,
      failed,
    },
    failed.map((line) => `not pruned: ${line}`),
  );
}

export const JOURNAL_COMMANDS: readonly CommandSpec[] = [
  {
    words: ['journal', 'prune'],
    args: [],
    usage: '--settled-days <n> [--limit <n>]',
    summary: `snapshots settled messages whose last event is at least n days old and deletes their earlier journal records (at most ${DEFAULT_PRUNE_LIMIT} messages unless --limit); wallets and keys are never pruned`,
    options: { 'settled-days': { type: 'string' }, limit: { type: 'string' } },
    prepare(args) {
      const days = args.option('settled-days');
      if (days === undefined) return { usageError: '--settled-days is required' };
      if (!/^\d+$/.test(days) || Number(days) > 36_500)
        return { usageError: `--settled-days must be a whole number of days from 0 to 36500, not "${days}"` };
      const limit = limitOption(args.option('limit'), MAX_PRUNE_LIMIT);
      if (typeof limit === 'object') return limit;
      return (gateway) => pruneJournal(gateway, { settledDays: Number(days), limit });
    },
  },
];
