import type { ActorRouter } from '../../cluster/actor-router.js';
import type { Clock } from '../../libraries/clock/clock.js';
import type { Config } from '../../libraries/config/config.js';
import type { Persistence } from '../../libraries/persistence/persistence.js';
import type { MerchantCatalog } from '../../merchants/merchant-catalog.js';
import type { OccurrenceScheduler } from '../jobs/occurrence-scheduler.js';
import type { UseCases } from '../use-cases.js';

/**
 * What a command needs of the node it runs on: its use cases, its store (for reads) and its settings; `scheduler` is
 * there (not started: it only reads Agenda's jobs) for the commands that ask for it. A started gateway has all of it.
 */
export interface CliGateway {
  readonly config: Config;
  readonly clock: Clock;
  readonly persistence: Persistence;
  readonly catalog: MerchantCatalog;
  readonly useCases: UseCases;
  readonly router: ActorRouter;
  readonly scheduler: OccurrenceScheduler | null;
  /** Operator: a dropped webhook event goes out again as a first attempt; false when there is nothing to replay. */
  readonly replayDeadLetter: (id: string) => Promise<boolean>;
}

/**
 * A command's answer. `text` is for people, `json` for scripts (`--json`); `notices` go to stderr in both modes
 * (e.g. "this key is not shown again"); `exitCode` (default 0) lets a status command say something needs attention.
 * A failed outcome is a usage or validation error: exit code 1.
 */
export type CommandOutcome =
  | { readonly ok: true; readonly text: string; readonly json: unknown; readonly notices: readonly string[]; readonly exitCode?: number }
  | { readonly ok: false; readonly message: string; readonly details: readonly string[] };

export const done = (text: string, json: unknown, notices: readonly string[] = []): CommandOutcome => ({ ok: true, text, json, notices });

export const rejected = (message: string, details: readonly string[] = []): CommandOutcome => ({ ok: false, message, details });

export type Command = (gateway: CliGateway) => Promise<CommandOutcome>;

/** The arguments of one command line, already checked against its spec. */
export interface CommandArgs {
  /** A required positional argument, by the name its spec gives it. */
  arg(name: string): string;
  option(name: string): string | undefined;
  flag(name: string): boolean;
}

export interface OptionSpec {
  readonly type: 'string' | 'boolean';
}

/** One `<group> <verb>` command: how it is called, and how its arguments become the command to run. */
export interface CommandSpec {
  readonly words: readonly [string, string];
  /** Required positional arguments, in order. */
  readonly args: readonly string[];
  /** The options part of the usage line, e.g. `--name <n> [--timezone <tz>]`. */
  readonly usage?: string;
  readonly summary: string;
  readonly options?: Readonly<Record<string, OptionSpec>>;
  /** The command reads Agenda's jobs: the CLI opens Agenda's backend on the database too. */
  readonly needsScheduler?: boolean;
  /**
   * The command may start a new embedded database (it creates merchants). Every other command refuses a DATA_DIR
   * without a database rather than create an empty one.
   */
  readonly createsDatabase?: boolean;
  /** The command, or the usage error that prevents it. */
  prepare(args: CommandArgs): Command | { readonly usageError: string };
}

/** A `--limit <n>` option: absent, a whole number from 1 to `max`, or the usage error that says so. */
export function limitOption(text: string | undefined, max: number): number | undefined | { readonly usageError: string } {
  if (text === undefined) return undefined;
  const limit = Number(text);
  if (!/^\d+$/.test(text) || limit < 1 || limit > max)
    return { usageError: `--limit must be a whole number from 1 to ${max}, not "${text}"` };
  return limit;
}
