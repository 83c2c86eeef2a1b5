import { carriersDown, createCarrierMonitor, pricingCarriers, routedCarriers } from './carriers/carrier-health.js';
import { PRESENCE_TTL_MS } from './carriers/connector/connector-presence.js';
import type { ShardChanges } from './cluster/shard-manager.js';
import { shardRanges } from './cluster/shards.js';
import { registerCarrierGauges } from './gateway-metrics.js';
import { SANDBOX_CARRIER } from './messaging/send-message-use-case.js';
import { createSimulatorConnector, type SimulatorConnector } from './carriers/simulator/simulator-connector.js';
import { createDocsRouter } from './entry-points/http/docs-routes.js';
import { createHttpApp } from './entry-points/http/http-app.js';
import { createOperationHandler, MERCHANT_REQUEST, type ForwardedRequest } from './entry-points/http/merchant-operations.js';
import { createHttpServer } from './entry-points/http/http-server.js';
import { createOperatorServer, type OperatorServer } from './entry-points/http/operator-server.js';
import { buildOpenApiDocument } from './entry-points/http/openapi/build-document.js';
import { openAgendaBackend, openAgendaLockers } from './composition/agenda.js';
import { createHealthCheck } from './composition/health.js';
import { openPersistence } from './composition/persistence.js';
import { openTransport } from './composition/transport.js';
import { createGateway, type GatewayOptions } from './gateway.js';
import type { Config } from './libraries/config/config.js';
import { systemClock } from './libraries/clock/clock.js';
import { dependencyOf } from './libraries/errors/dependency-failure.js';
import { createDependencyOutages, watchDependencies, type DependencyWatch } from './libraries/observability/dependency-outages.js';
import type { Logger } from './libraries/logger/logger.js';
import type { RequestScope } from './libraries/actors/request-deadline.js';
import { natsNames } from './libraries/transport/nats-names.js';
import { STREAMS, type Transport } from './libraries/transport/transport-port.js';
import { seedDemoMerchant } from './merchants/demo-merchant.js';

export interface GatewayNodeOptions extends Omit<GatewayOptions, 'config' | 'transport'> {
  readonly config: Config;
  readonly logger: Logger;
  /** An already connected transport (tests); otherwise the mode decides: database bus (embedded) or NATS (server). */
  readonly transport?: Transport;
  /** Run the sandbox carrier simulator in this process (always in embedded mode). */
  readonly inProcessSimulator?: boolean;
  /** Where the one-time sandbox key line goes (stdout by default). */
  readonly announce?: (line: string) => void;
  // `metrics` (from GatewayOptions): with it, the node also serves GET /metrics on config.metrics.port
}

/** Grace after start before a production node warns of carriers without a live connector: two presence beats. */
export const START_WARNING_GRACE_MS = PRESENCE_TTL_MS;

/** The start-up warning's message; `dispatchStream` is the deployment's dispatch stream on NATS. */
export const startWarning = (down: readonly string[], dispatchStream: string): string =>
  `no live connector for carrier(s) ${down.join(', ')}: their SMS wait in ${dispatchStream}`;

async function connectMonitorNats(url: string, nodeId: string) {
  const { connectNats } = await import('./libraries/transport/nats-connect.js');
  return connectNats({
    servers: url.split(',').map((server) => server.trim()),
    name: `${nodeId || 'sms-gateway'}-carriers`,
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
    reconnectJitter: 100,
  });
}

/**
 * A round of the shard manager in the log, one line per kind of change, each with the count and compact ranges:
 * `shards acquired: 32 (0-15, 32-47)` and `shards handed over: 16 (48-63)` (info), `shard leases lost: 2 (3, 9): their
 * actors stopped` (warn). A round takes shards or hands them over, never both.
 */
export function logShardChanges(logger: Logger, changes: ShardChanges): void {
  const { acquired, handedOver, expired, owned } = changes;
  if (expired.length > 0) {
    const shards = shardRanges(expired);
    logger.warn({ lost: expired.length, shards, owned }, `shard leases lost: ${expired.length} (${shards}): their actors stopped`);
  }
  if (acquired.length > 0) {
    const shards = shardRanges(acquired);
    logger.info({ acquired: acquired.length, shards, owned }, `shards acquired: ${acquired.length} (${shards})`);
  }
  if (handedOver.length > 0) {
    const shards = shardRanges(handedOver);
    logger.info({ handed_over: handedOver.length, shards, owned }, `shards handed over: ${handedOver.length} (${shards})`);
  }
}

/** One gateway process: persistence, transport, the wired gateway, its HTTP facade (and the sandbox simulator). */
export async function createGatewayNode(options: GatewayNodeOptions) {
  const { config, logger } = options;
  // until the start-up announcements (the sandbox key, `listening`) are out, the shard rounds' lines wait here: an
  // operator reads the key first, not after the initial acquisition
  let heldBack: ShardChanges[] | null = [];
  const releaseShardLines = (): void => {
    const held = heldBack ?? [];
    heldBack = null;
    for (const changes of held) logShardChanges(logger, changes);
  };
  // a dependency's outage is logged when it starts and when it ends, not once per failure it causes
  const outages = createDependencyOutages({ logger, clock: options.clock ?? systemClock });
  const databaseFailed = (error: unknown): void => {
    outages.failed('database', error, 'agenda');
  };
  const ownsPersistence = !options.persistence;
  const persistence = options.persistence ?? (await openPersistence(config));
  const ownsTransport = !options.transport;
  const transport = options.transport ?? (await openTransport(config, persistence, logger, outages));
  const gateway = await createGateway({
    ...options,
    persistence,
    transport,
    agendaBackend: options.agendaBackend ?? (await openAgendaBackend(config, persistence, databaseFailed)),
    agendaLockers: options.agendaLockers ?? (options.agendaBackend ? [] : await openAgendaLockers(config, persistence, databaseFailed)),
    onIncident: (incident) => {
      const dependency = dependencyOf(incident.error);
      if (dependency) outages.failed(dependency, incident.error, incident.what);
      else logger.error({ err: incident.error }, incident.what);
    },
    onShardsChanged: (changes) => {
      if (heldBack) heldBack.push(changes);
      else logShardChanges(logger, changes);
    },
  });
  const simulator: SimulatorConnector | null =
    (options.inProcessSimulator ?? config.mode === 'embedded')
      ? createSimulatorConnector({
          transport,
          delays: config.simulator,
          receiptBatchMax: config.simulator.receiptBatchMax,
          receiptLingerMs: config.simulator.receiptLingerMs,
          onError: (error, context) => {
            logger.warn({ err: error, context }, 'simulator');
          },
        })
      : null;

  // server mode: a connection of its own reads the connectors' presence and the dispatch backlog
  const names = natsNames(config.nats.namespace);
  const monitorNats = config.mode === 'server' && config.nats.url ? await connectMonitorNats(config.nats.url, config.cluster.nodeId) : null;
  const carriers = createCarrierMonitor({
    routed: async () =>
      routedCarriers(
        config.environment,
        config.environment === 'sandbox' ? [] : await pricingCarriers(persistence.directory),
        config.carriers.defaultCarrier,
        SANDBOX_CARRIER,
      ),
    nats: monitorNats,
    names,
    inProcess: simulator ? [SANDBOX_CARRIER] : [],
    now: () => gateway.clock.now(),
    onError: (error, context) => {
      const dependency = dependencyOf(error);
      if (dependency) outages.failed(dependency, error, `carriers: ${context}`);
      else logger.warn({ err: error, context }, 'carrier monitor');
    },
  });
  let warnTimer: NodeJS.Timeout | null = null;
  /** Set when the stop begins: GET /health answers 503 from then on. */
  let stopping = false;
  let unregisterCarrierGauges: (() => void) | null = null;
  const { probes, health } = createHealthCheck({
    database: persistence,
    transport,
    carriers: () => carriers.check(),
    timeoutMs: config.tuning.healthProbeTimeoutMs,
    stopping: () => stopping,
  });
  let watch: DependencyWatch | null = null;

  // requests forwarded by other nodes for the shards this one owns
  const cluster = gateway.clusterRouter;
  cluster?.handleOperations(MERCHANT_REQUEST, createOperationHandler(gateway.useCases, logger));
  const app = createHttpApp({
    useCases: gateway.useCases,
    ...(cluster && config.cluster.forwardRequests
      ? {
          forwarding: {
            ownsMerchant: (merchantId: string) => cluster.ownsMerchant(merchantId),
            forward: (merchantId: string, request: ForwardedRequest, scope: RequestScope) =>
              cluster.forward(MERCHANT_REQUEST, merchantId, request, scope),
            messageCreated: gateway.rememberMessageOwner,
          },
        }
      : {}),
    environment: config.environment,
    version: config.version,
    bodyLimitBytes: config.http.bodyLimitBytes,
    health,
    logger,
    deadline: { clock: gateway.clock, budgetMs: gateway.requestBudgetMs },
    extraRouters: [createDocsRouter(buildOpenApiDocument({ version: config.version }))],
    onRequestFinished: (sample) => {
      options.metrics?.requestFinished(sample);
    },
  });
  const http = createHttpServer(app, { host: config.http.host, port: config.http.port, logger });
  const metrics = options.metrics;
  const operator: OperatorServer | null = metrics
    ? createOperatorServer({
        host: config.http.host,
        port: config.metrics.port,
        scrape: () => metrics.scrape(),
        onError: (error) => {
          logger.warn({ err: error }, 'metrics scrape failed');
        },
      })
    : null;
  const announce =
    options.announce ??
    ((line: string) => {
      process.stdout.write(`${line}\n`);
    });

  /** Starts the gateway (the shard manager takes this node's first share), then the facades; announces the key. */
  async function startNode(): Promise<number> {
    await gateway.start();
    // server mode: the database and NATS are other processes that may go away (embedded mode has them in-process)
    if (config.mode === 'server') watch = watchDependencies({ outages, probes });
    // after start: in a cluster the demo merchant's actors live on whichever node owns its shard
    if (config.demo.seedMerchant && config.environment === 'sandbox') {
      const demo = await seedDemoMerchant(gateway);
      if (demo) announce(`Sandbox API key: ${demo.apiKey}`);
    }
    await simulator?.start();
    await carriers.start();
    if (metrics) unregisterCarrierGauges = registerCarrierGauges(metrics, () => carriers.samples());
    // production: say which routed carriers nobody serves, once connectors had time to announce themselves
    if (config.mode === 'server' && config.environment === 'production') {
      warnTimer = setTimeout(() => {
        const down = carriersDown(carriers.check());
        if (down.length > 0) logger.warn({ carriers: down }, startWarning(down, names.stream(STREAMS.dispatch.name)));
      }, START_WARNING_GRACE_MS);
      warnTimer.unref();
    }
    const metricsPort = (await operator?.start()) ?? null;
    const port = await http.start();
    logger.info({ port, metrics_port: metricsPort, mode: config.mode, node_id: gateway.nodeId }, 'listening');
    return port;
  }

  return {
    gateway,
    http,
    /** The operator port serving /metrics (null without metrics). */
    operator,
    transport,
    simulator,
    async start(): Promise<number> {
      try {
        return await startNode();
      } finally {
        releaseShardLines();
      }
    },
    /**
     * Reports itself stopping on GET /health and, unless told not to drain (a crash), keeps serving for
     * shutdown.drainMs; then stops taking requests and finishes those in flight, stops the workers (scheduler,
     * consumers, relay), flushes, hands the shards over and closes everything it opened. The caller bounds the whole
     * (shutdown.graceMs).
     */
    async stop(how: { readonly drain?: boolean } = {}): Promise<void> {
      // first: draining may take seconds, in which this node must not take shards others give up
      gateway.stopAcquiring();
      // a stop during the start: what the shard manager did so far is logged now, before the hand-over
      releaseShardLines();
      // unhealthy from now on; with a drain, still serving meanwhile, so the load balancer takes the node out before
      // it stops accepting (connections it has not accepted yet would be reset)
      stopping = true;
      const { graceMs } = config.shutdown;
      const drainMs = how.drain === false ? 0 : config.shutdown.drainMs;
      if (drainMs > 0) {
        logger.info({ drain_ms: drainMs }, 'health answers 503; serving until the drain ends');
        await new Promise((resolve) => setTimeout(resolve, drainMs));
      }
      await http.stop(Math.ceil((graceMs - drainMs) * config.tuning.httpShareOfGrace));
      logger.info('requests finished; draining');
      watch?.stop();
      if (warnTimer) clearTimeout(warnTimer);
      unregisterCarrierGauges?.();
      await carriers.stop();
      await monitorNats?.close();
      await simulator?.stop();
      await gateway.stop();
      await operator?.stop();
      if (ownsTransport) await transport.close();
      if (ownsPersistence) await persistence.close();
    },
  };
}

export type GatewayNode = Awaited<ReturnType<typeof createGatewayNode>>;
