import path from 'node:path';
import type { Config } from '../libraries/config/config.js';
import { silentLogger } from '../libraries/logger/logger.js';
import { hasPgliteDatabase } from '../libraries/persistence/sql/sql-executor.js';
import type { Transport } from '../libraries/transport/transport-port.js';
import type { CliGateway } from '../entry-points/cli/command.js';
import { CliRefusal, runCli as runCliOn, type CliIo, type ExitCode, type GatewayNeeds } from '../entry-points/cli/run-cli.js';
import { openAgendaReader } from './agenda.js';
import { createCommandNode } from './command-node.js';
import { openPersistence } from './persistence.js';
import { openTransport } from './transport.js';

export { EXIT, type CliIo, type ExitCode } from '../entry-points/cli/run-cli.js';

/** One CLI run on the real node (`openCliGateway`), unless the caller passes its own (tests). */
export function runCli(argv: readonly string[], io: Omit<CliIo, 'openGateway'> & Partial<Pick<CliIo, 'openGateway'>>): Promise<ExitCode> {
  return runCliOn(argv, { ...io, openGateway: io.openGateway ?? openCliGateway });
}

/**
 * How the CLI reaches the actors. Embedded mode, or server mode with no live node: it runs them itself (nobody else
 * writes). Server mode with live nodes: it joins the cluster as a client (owns no shard) over NATS, so every command
 * reaches the actor on its shard's owner, exactly as an HTTP request on any node would; without NATS_URL it refuses
 * rather than write beside the owners.
 */
export async function openCliGateway(
  config: Config,
  err: (text: string) => void,
  needs: GatewayNeeds,
): Promise<CliGateway & { stop(): Promise<void> }> {
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
