import { createSimulatorConnector, type SimulatorConnector } from './carriers/simulator/simulator-connector.js';
import { createDocsRouter } from './entry-points/http/docs-routes.js';
import { createHttpApp, type HealthReport } from './entry-points/http/http-app.js';
import { createHttpServer } from './entry-points/http/http-server.js';
import { buildOpenApiDocument } from './entry-points/http/openapi.js';
import { createGateway, openPersistence, type GatewayOptions } from './gateway.js';
import type { Config } from './libraries/config/config.js';
import type { Logger } from './libraries/logger/logger.js';
import type { Persistence } from './libraries/persistence/persistence.js';
import { createDatabaseBus } from './libraries/transport/database-bus.js';
import type { Transport } from './libraries/transport/transport-port.js';
import { seedDemoMerchant } from './merchants/demo-merchant.js';
import type { AgendaBackend } from 'agenda';

export interface GatewayNodeOptions extends Omit<GatewayOptions, 'config' | 'transport'> {
  readonly config: Config;
  readonly logger: Logger;
  /** An already connected transport (tests); otherwise the mode decides: database bus (embedded) or NATS (server). */
  readonly transport?: Transport;
  /** Run the sandbox carrier simulator in this process (always in embedded mode). */
  readonly inProcessSimulator?: boolean;
  /** Where the one-time sandbox key line goes (stdout by default). */
  readonly announce?: (line: string) => void;
}

async function within<T>(ms: number, work: Promise<T>): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const timeout = new Promise<never>((_, reject) => {
    timer = setTimeout(() => {
      reject(new Error(`no answer within ${ms} ms`));
    }, ms);
  });
  try {
    return await Promise.race([work, timeout]);
  } finally {
    clearTimeout(timer);
  }
}

const probe = (ms: number, check: () => Promise<void>) =>
  within(ms, check()).then(
    () => 'ok' as const,
    () => 'down' as const,
  );

async function openTransport(config: Config, persistence: Persistence, logger: Logger): Promise<Transport> {
  if (config.mode === 'embedded') {
    if (!persistence.sql) throw new Error('embedded mode needs the SQL database for its bus');
    return createDatabaseBus({ db: persistence.sql });
  }
  if (!config.nats.url) throw new Error('server mode needs NATS_URL');
  const { connectNatsTransport } = await import('./libraries/transport/nats-transport.js');
  return connectNatsTransport({
    servers: config.nats.url,
    name: config.cluster.nodeId || 'sms-gateway',
    onError: (error: unknown) => {
      logger.warn({ err: error }, 'nats');
    },
  });
}

/** Agenda on the journal's database: PostgreSQL (or PGlite served on a loopback port), or MongoDB. */
async function openAgendaBackend(config: Config, persistence: Persistence): Promise<AgendaBackend> {
  if (persistence.sql) {
    const { PostgresBackend } = await import('@agendajs/postgres-backend');
    // PGlite never delivers NOTIFY to a listener: it relies on polling
    return new PostgresBackend({ connectionString: await persistence.sql.connectionString(), disableNotifications: persistence.kind === 'pglite', poolConfig: { max: 4 } });
  }
  const { MongoBackend } = await import('@agendajs/mongo-backend');
  return new MongoBackend({ address: config.database.mongoUrl });
}

/** One gateway process: persistence, transport, the wired gateway, its HTTP facade (and the sandbox simulator). */
export async function createGatewayNode(options: GatewayNodeOptions) {
  const { config, logger } = options;
  const ownsPersistence = !options.persistence;
  const persistence = options.persistence ?? (await openPersistence(config));
  const ownsTransport = !options.transport;
  const transport = options.transport ?? (await openTransport(config, persistence, logger));
  const gateway = await createGateway({
    ...options,
    persistence,
    transport,
    agendaBackend: options.agendaBackend ?? (await openAgendaBackend(config, persistence)),
    onIncident: (incident) => {
      logger.error({ err: incident.error }, incident.what);
    },
  });
  const simulator: SimulatorConnector | null =
    (options.inProcessSimulator ?? config.mode === 'embedded')
      ? createSimulatorConnector({
          transport,
          delays: config.simulator,
          onError: (error, context) => {
            logger.warn({ err: error, context }, 'simulator');
          },
        })
      : null;

  async function health(): Promise<HealthReport> {
    const [database, transportState] = await Promise.all([probe(1_000, () => persistence.ping()), probe(1_000, () => transport.ping())]);
    return { healthy: database === 'ok' && transportState === 'ok', checks: { database, transport: transportState } };
  }

  const app = createHttpApp({
    useCases: gateway.useCases,
    environment: config.environment,
    version: config.version,
    bodyLimitBytes: config.http.bodyLimitBytes,
    health,
    logger,
    extraRouters: [createDocsRouter(buildOpenApiDocument({ version: config.version }))],
  });
  const http = createHttpServer(app, { host: config.http.host, port: config.http.port });
  const announce =
    options.announce ??
    ((line: string) => {
      process.stdout.write(`${line}\n`);
    });

  return {
    gateway,
    http,
    transport,
    simulator,
    async start(): Promise<number> {
      if (config.demo.seedMerchant && config.environment === 'sandbox') {
        const demo = await seedDemoMerchant(gateway);
        if (demo) announce(`Sandbox API key: ${demo.apiKey}`);
      }
      await gateway.start();
      await simulator?.start();
      const port = await http.start();
      logger.info({ port, mode: config.mode }, 'listening');
      return port;
    },
    /** Stops taking requests, finishes what is in flight, then closes everything it opened. */
    async stop(): Promise<void> {
      await http.stop();
      await simulator?.stop();
      await gateway.stop();
      if (ownsTransport) await transport.close();
      if (ownsPersistence) await persistence.close();
    },
  };
}

export type GatewayNode = Awaited<ReturnType<typeof createGatewayNode>>;
