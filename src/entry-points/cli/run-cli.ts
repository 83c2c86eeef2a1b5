import path from 'node:path';
import { openPersistence } from '../../composition/persistence.js';
import { createCommandNode } from '../../composition/command-node.js';
import { loadConfig, type Config } from '../../libraries/config/config.js';
import { hasPgliteDatabase } from '../../libraries/persistence/sql/sql-executor.js';
import { ConfigError, DataDirectoryInUseError, EnvironmentMismatchError, InternalError } from '../../libraries/errors/internal-errors.js';
import { silentLogger } from '../../libraries/logger/logger.js';
import type { Transport } from '../../libraries/transport/transport-port.js';
import { openAgendaReader } from '../../composition/agenda.js';
import { openTransport } from '../../composition/transport.js';
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
   * Opens the node the command runs on; the real one by default (tests may pass their own). `scheduler`: the
   * command reads Agenda's jobs; `createDatabase`: it may start a new embedded database.
   */
  readonly openGateway?: (
    config: Config,
    err: (text: string) => void,
    needs: GatewayNeeds,
  ) => Promise<CliGateway & { stop(): Promise<void> }>;
}

export interface GatewayNeeds {
  readonly scheduler: boolean;
  readonly createDatabase: boolean;
}

/**
 * How the CLI reaches the actors. Embedded mode, or server mode with no live node: it runs them itself (nobody else
 * writes). Server mode with live nodes: it joins the cluster as a client (owns no shard) over NATS, so every command
 * reaches the actor on its shard's owner, exactly as an HTTP request on any node would; without NATS_URL it refuses
 * rather than write beside the owners.
 */
async function openRealGateway(config: Config, err: (text: string) => void, needs: GatewayNeeds) {
  const onIncident = ({ what, error }: { what: string; error: unknown }) => {
    err(`incident: ${what}: ${error instanceof Error ? error.message : String(error)}\n`);
  };
  const newDatabase = config.mode === 'embedded' && !embeddedDatabaseFound(config, needs);
  const persistence = await openPersistence(config);
  if (newDatabase) err(`created a new gateway database in ${path.resolve(config.database.dataDir)}\n`);
  let transport: Transport | null = null;
  try {
    const liveNodes = config.mode === 'server' ? await persistence.leases.liveNodes() : [];
    if (liveNodes.length > 0 && !config.nats.url) {
      throw new CliRefusal(`nodes are running (${liveNodes.join(', ')}): set NATS_URL so the CLI reaches their actors`);
    }
    // the database bus in embedded mode (a replayed webhook waits there for the server), NATS in a running cluster
    if (config.mode === 'embedded' || liveNodes.length > 0) transport = await openTransport(config, persistence, silentLogger);
    // only what a command runs on: no relay, no consumers, nothing started (a CLI run carries out its own command)
    const node = createCommandNode({
      config,
      persistence,
      ...(transport ? { transport } : {}),
      ...(liveNodes.length > 0 ? { role: 'client' as const } : {}),
      ...(needs.scheduler ? { agendaBackend: await openAgendaReader(config, persistence) } : {}),
      onIncident,
    });
    const opened = transport;
    return {
      ...node,
      async stop() {
        try {
          await node.stop();
        } finally {
          await opened?.close();
          await persistence.close();
        }
      },
    };
  } catch (error) {
    await transport?.close();
    await persistence.close();
    throw error;
  }
}

/** A condition that stops the CLI before any command runs (exit code 1, message on stderr). */
class CliRefusal extends InternalError {
  readonly kind = 'cli_refusal';
}

/**
 * Whether DATA_DIR holds a database. Opening one that does not creates an empty database: a CLI pointed at the
 * wrong directory (the default ./data, the server running elsewhere) would report "No merchants." from it. Only a
 * command that creates merchants may start one; the others refuse, naming the directory.
 */
function embeddedDatabaseFound(config: Config, needs: GatewayNeeds): boolean {
  const dataDir = path.resolve(config.database.dataDir);
  if (hasPgliteDatabase(dataDir)) return true;
  if (needs.createDatabase) return false;
  throw new CliRefusal(
    `no gateway database in ${dataDir}: set DATA_DIR to the gateway's data directory, or run \`merchants create\` to start a new one`,
  );
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
    gateway = await (io.openGateway ?? openRealGateway)(config, io.err, {
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
