import { parseArgs } from 'node:util';
import type { Command, CommandArgs, CommandSpec } from './command.js';
import { KEY_COMMANDS } from './key-commands.js';
import { MERCHANT_COMMANDS } from './merchant-commands.js';
import { PRICING_COMMANDS } from './pricing-commands.js';
import { SCHEDULE_COMMANDS } from './schedule-commands.js';
import { WALLET_COMMANDS } from './wallet-commands.js';
import { CARRIER_COMMANDS } from './carrier-commands.js';
import { CLUSTER_COMMANDS } from './cluster-commands.js';
import { WEBHOOK_COMMANDS } from './webhook-commands.js';
import { JOURNAL_COMMANDS } from './journal-commands.js';

export const COMMANDS: readonly CommandSpec[] = [
  ...MERCHANT_COMMANDS,
  ...PRICING_COMMANDS,
  ...WALLET_COMMANDS,
  ...KEY_COMMANDS,
  ...SCHEDULE_COMMANDS,
  ...WEBHOOK_COMMANDS,
  ...CLUSTER_COMMANDS,
  ...CARRIER_COMMANDS,
  ...JOURNAL_COMMANDS,
];

export type ParsedCommandLine =
  | { readonly type: 'help'; readonly text: string }
  | { readonly type: 'usage_error'; readonly message: string; readonly hint: string }
  | {
      readonly type: 'run';
      readonly name: string;
      readonly json: boolean;
      readonly needsScheduler: boolean;
      readonly createsDatabase: boolean;
      readonly command: Command;
    };

const HELP_FLAGS = new Set(['help', '--help', '-h']);

export function usageLine(spec: CommandSpec): string {
  return [...spec.words, ...spec.args.map((name) => `<${name}>`), ...(spec.usage ? [spec.usage] : [])].join(' ');
}

/** Every command, or those of one group (`merchants --help`). */
export function helpText(group?: string): string {
  const specs = COMMANDS.filter((spec) => group === undefined || spec.words[0] === group);
  const lines = ['SMS gateway operator CLI', '', 'Usage: npm run cli -- <command> [options] [--json]', ''];
  let heading = '';
  for (const spec of specs) {
    if (spec.words[0] !== heading) {
      if (heading !== '') lines.push('');
      heading = spec.words[0];
      lines.push(`${heading[0]?.toUpperCase() ?? ''}${heading.slice(1)}:`);
    }
    lines.push(`  ${usageLine(spec)}`, `      ${spec.summary}`);
  }
  lines.push(
    '',
    'Options:',
    '  --json        JSON on stdout instead of text',
    '  --help, -h    this help (also: help)',
    '',
    'The CLI opens the database the server uses, from the same configuration (NODE_ENV, GATEWAY_MODE, DATABASE_URL,',
    "MONGO_URL, DATA_DIR, GATEWAY_ENVIRONMENT). In embedded mode, PGlite's data directory must not be open in a running server,",
    'and only `merchants create` starts a new database where DATA_DIR has none.',
    'Exit codes: 0 done, 1 usage, validation or settings error (message on stderr), 2 unexpected failure or unreachable',
    'database, 3 attention (carriers status), 4 the embedded database is in use by another process.',
  );
  return `${lines.join('\n')}\n`;
}

const usageError = (message: string, hint = 'Run "npm run cli -- help" for the list of commands.'): ParsedCommandLine => ({
  type: 'usage_error',
  message,
  hint,
});

/** From argv (without node and the script) to the command to run, the help, or a usage error. No I/O. */
export function parseCommandLine(argv: readonly string[]): ParsedCommandLine {
  const [group, verb] = argv;
  if (group === undefined) return usageError('no command given');
  if (HELP_FLAGS.has(group)) return { type: 'help', text: helpText() };
  const inGroup = COMMANDS.filter((spec) => spec.words[0] === group);
  if (inGroup.length === 0) return usageError(`unknown command "${group}"`);
  if (verb === undefined) return usageError(`"${group}" needs a command`, helpText(group));
  if (HELP_FLAGS.has(verb)) return { type: 'help', text: helpText(group) };
  const spec = inGroup.find((candidate) => candidate.words[1] === verb);
  if (!spec) return usageError(`unknown command "${group} ${verb}"`, helpText(group));
  const hint = `Usage: npm run cli -- ${usageLine(spec)} [--json]`;
  const rest = argv.slice(2);
  if (rest.includes('--help') || rest.includes('-h')) return { type: 'help', text: `${hint}\n  ${spec.summary}\n` };

  let parsed: ReturnType<typeof parseArgs>;
  try {
    parsed = parseArgs({ args: [...rest], options: { ...spec.options, json: { type: 'boolean' } }, allowPositionals: true, strict: true });
  } catch (error) {
    return usageError((error as Error).message, hint);
  }
  const { values, positionals } = parsed;
  if (positionals.length !== spec.args.length) {
    const expected = spec.args.length === 0 ? 'no arguments' : spec.args.map((name) => `<${name}>`).join(' ');
    return usageError(`expected ${expected}, got ${positionals.length === 0 ? 'none' : positionals.map((p) => `"${p}"`).join(' ')}`, hint);
  }
  const args: CommandArgs = {
    arg(name) {
      const value = positionals[spec.args.indexOf(name)];
      if (value === undefined) throw new Error(`${usageLine(spec)} has no argument <${name}>`);
      return value;
    },
    option(name) {
      const value = values[name];
      return typeof value === 'string' ? value : undefined;
    },
    flag: (name) => values[name] === true,
  };
  const prepared = spec.prepare(args);
  if (typeof prepared !== 'function') return usageError(prepared.usageError, hint);
  return {
    type: 'run',
    name: spec.words.join(' '),
    json: values.json === true,
    needsScheduler: spec.needsScheduler === true,
    createsDatabase: spec.createsDatabase === true,
    command: prepared,
  };
}
