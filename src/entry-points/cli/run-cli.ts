import path from 'node:path';
import { loadConfig, type Config } from '../../libraries/config/config.js';
import { ConfigError, DataDirectoryInUseError, EnvironmentMismatchError, InternalError } from '../../libraries/errors/internal-errors.js';
import type { CliGateway, CommandOutcome } from './command.js';
import { parseCommandLine } from './command-line.js';

/**
 * `attention`: the command ran and reports something to act on (`carriers status`: a carrier has no live connector).
 * `inUse`: the embedded database is open in another process (a running gateway): nothing ran.
 */
export const EXIT = { ok: 0, usage: 1, failure: 2, attention: 3, inUse: 4 } as const;
export type ExitCode = (typeof EXIT)[keyof typeof EXIT];

export interface CliIo {
  readonly env: Readonly<Record<string, string | undefined>>;
  readonly out: (text: string) => void;
  readonly err: (text: string) => void;
  /**
   * Opens the node the command runs on (the composition root gives the real one; tests may pass their own).
   * `scheduler`: the command reads Agenda's jobs; `createDatabase`: it may start a new embedded database.
   */
  readonly openGateway: (
    config: Config,
    err: (text: string) => void,
    needs: GatewayNeeds,
  ) => Promise<CliGateway & { stop(): Promise<void> }>;
}

export interface GatewayNeeds {
  readonly scheduler: boolean;
  readonly createDatabase: boolean;
}

/** A condition that stops the CLI before any command runs (exit code 1, message on stderr). */
export class CliRefusal extends InternalError {
  readonly kind = 'cli_refusal';
}

/** PGlite serves one process: the server (or another CLI run) holding the directory is reported, not a crash. */
function inUseMessage(config: Config, error: DataDirectoryInUseError): string {
  return (
    `the embedded database in ${path.resolve(config.database.dataDir)} is in use by process ${error.pid} (a running gateway or another CLI run): ` +
    'stop it and run the command again, or run the gateway in server mode (DATABASE_URL) to use the CLI beside it'
  );
}

function print(outcome: CommandOutcome, json: boolean, io: CliIo): ExitCode {
  if (!outcome.ok) {
    if (json) io.err(`${JSON.stringify({ error: outcome.message, details: outcome.details })}\n`);
    else io.err(`error: ${outcome.message}\n${outcome.details.map((d) => `  ${d}\n`).join('')}`);
    return EXIT.usage;
  }
  io.out(json ? `${JSON.stringify(outcome.json, null, 2)}\n` : `${outcome.text}\n`);
  for (const notice of outcome.notices) io.err(`warning: ${notice}\n`);
  return outcome.exitCode === EXIT.attention ? EXIT.attention : EXIT.ok;
}

/**
 * One CLI run: parse, open the configured database, run one command, close. Returns the exit code; an unexpected
 * failure (database down, a bug) is reported on stderr as exit code 2.
 */
export async function runCli(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  try {
    return await runOnce(argv, io);
  } catch (error) {
    io.err(`unexpected failure: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
    return EXIT.failure;
  }
}

async function runOnce(argv: readonly string[], io: CliIo): Promise<ExitCode> {
  const parsed = parseCommandLine(argv);
  if (parsed.type === 'help') {
    io.out(parsed.text);
    return EXIT.ok;
  }
  if (parsed.type === 'usage_error') {
    io.err(`error: ${parsed.message}\n${parsed.hint.endsWith('\n') ? parsed.hint : `${parsed.hint}\n`}`);
    return EXIT.usage;
  }
  let config: Config;
  try {
    config = loadConfig({ env: io.env, reader: 'cli' });
  } catch (error) {
    if (!(error instanceof ConfigError)) throw error;
    io.err(`error: ${error.message}\n`);
    return EXIT.usage;
  }
  let gateway;
  try {
    gateway = await io.openGateway(config, io.err, {
      scheduler: parsed.needsScheduler,
      createDatabase: parsed.createsDatabase,
    });
  } catch (error) {
    if (error instanceof DataDirectoryInUseError) {
      io.err(`error: ${inUseMessage(config, error)}\n`);
      return EXIT.inUse;
    }
    // a database of the other environment is refused like a node would refuse it: it is never re-initialised
    if (!(error instanceof CliRefusal) && !(error instanceof EnvironmentMismatchError)) throw error;
    io.err(`error: ${error.message}\n`);
    return EXIT.usage;
  }
  try {
    return print(await parsed.command(gateway), parsed.json, io);
  } finally {
    await gateway.stop();
  }
}
