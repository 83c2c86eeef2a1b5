import { appendFileSync, renameSync, writeFileSync } from 'node:fs';
import { createSimulatorConnector } from './simulator-connector.js';
import { systemClock } from '../../libraries/clock/clock.js';
import { loadConfig } from '../../libraries/config/config.js';
import { createProcessTerminator, stopOnSignals } from '../../libraries/lifecycle/process-terminator.js';
import { dispatchSubject, natsNames, receiptSubject } from '../../libraries/transport/nats-names.js';
import { createLogger } from '../../libraries/logger/logger.js';
import { ConfigError } from '../../libraries/errors/internal-errors.js';

/**
 * The sandbox simulator as its own connector process on NATS (`npm run connector:simulator`), exactly as a third
 * party's connector would run (docs/carrier-protocol.md). NATS_URL names the server(s), NATS_NAMESPACE the
 * deployment whose jobs it takes (the gateway's; empty: none); the delays come from the
 * configuration (SIMULATOR_STEP_DELAY_MS, SIMULATOR_SLOW_DELAY_MS), and so does the batching of receipts
 * (SIMULATOR_RECEIPT_BATCH_MAX). SIGTERM/SIGINT stop it gracefully: no new jobs,
 * receipts already planned are still published (copies of one signal are one stop; a later signal force-quits).
 *
 * SIMULATOR_REPORT_FILE (tests): every 200 ms and on stop, the connector writes `{ sent: { <dispatch id>: <deliveries
 * seen> }, writtenAt }` there, so a test can check that no dispatch id reached it twice.
 * SIMULATOR_DELIVERY_LOG (tests): a line `<SIMULATOR_PROCESS> taken|again <dispatch id>` is appended for every job
 * delivered, before it is acknowledged, so the record survives a SIGKILL and spans restarts.
 */
async function main(): Promise<void> {
  let config;
  try {
    config = loadConfig();
  } catch (error) {
    if (error instanceof ConfigError) {
      process.stderr.write(`${error.message}\n`);
      process.exit(1);
    }
    throw error;
  }
  const logger = createLogger({ level: config.log.level, base: { service: 'connector-simulator', environment: config.environment } });
  const servers = config.nats.url;
  if (servers === '') {
    logger.fatal('NATS_URL is required: the simulator connector runs against NATS JetStream');
    process.exit(1);
  }

  const names = natsNames(config.nats.namespace);

  // loaded lazily: the NATS client is only needed by this process, not by whoever imports the connector
  const { connectNatsTransport } = await import('../../libraries/transport/nats-transport.js');
  const transport = await connectNatsTransport({
    servers,
    name: 'connector-simulator',
    names,
    onError: (error, context) => {
      logger.warn({ err: error, context }, 'nats');
    },
  });
  // presence (docs/carriers.md): the gateway's /health counts the simulator as the live connector of its carrier
  const { connectNats } = await import('../../libraries/transport/nats-connect.js');
  const { announcePresence } = await import('../connector/presence-announcer.js');
  const presenceConnection = await connectNats({
    servers: servers.split(',').map((server) => server.trim()),
    name: 'connector-simulator-presence',
    maxReconnectAttempts: -1,
    reconnectTimeWait: 250,
  });
  const closePresenceConnection = async (): Promise<void> => {
    if (!presenceConnection.isClosed()) await presenceConnection.drain().catch(() => presenceConnection.close());
  };
  const deliveryLog = process.env.SIMULATOR_DELIVERY_LOG ?? '';
  const processLabel = process.env.SIMULATOR_PROCESS ?? '1';
  const connector = createSimulatorConnector({
    transport,
    delays: { stepDelayMs: config.simulator.stepDelayMs, slowDelayMs: config.simulator.slowDelayMs },
    receiptBatchMax: config.simulator.receiptBatchMax,
    receiptLingerMs: config.simulator.receiptLingerMs,
    ...(deliveryLog === ''
      ? {}
      : {
          onDelivery: (dispatchId: string, taken: boolean) => {
            appendFileSync(deliveryLog, `${processLabel} ${taken ? 'taken' : 'again'} ${dispatchId}\n`);
          },
        }),
    onError: (error, context) => {
      logger.warn({ err: error }, context);
    },
  });

  const reportFile = process.env.SIMULATOR_REPORT_FILE ?? '';
  const writeReport = (): void => {
    if (reportFile === '') return;
    const report = { sent: Object.fromEntries(connector.dispatchesSeen()), writtenAt: systemClock.now() };
    writeFileSync(`${reportFile}.tmp`, JSON.stringify(report));
    renameSync(`${reportFile}.tmp`, reportFile);
  };
  const reporting = reportFile === '' ? null : setInterval(writeReport, 200);

  let presence: { stop(): Promise<void> } | null = null;
  // the gateway node's terminator: copies of one signal are one stop, a signal more than FORCE_QUIT_AFTER_MS into
  // the stop force-quits
  const terminate = createProcessTerminator({
    logger,
    stop: async () => {
      logger.info('stopping: no new jobs, publishing the receipts already planned');
      if (reporting) clearInterval(reporting);
      await Promise.resolve(presence?.stop()).catch((error: unknown) => {
        logger.warn({ err: error }, 'presence entry not removed');
      });
      await connector.stop();
      writeReport();
      await closePresenceConnection();
      await transport.close();
    },
    exit: (code) => process.exit(code),
  });
  stopOnSignals(terminate);
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled rejection');
  });

  try {
    await connector.start();
    presence = await announcePresence({
      nc: presenceConnection,
      names,
      carrier: 'simulator',
      name: 'simulator',
      kind: 'simulator',
      onError: (error) => {
        logger.warn({ err: error }, 'presence not written');
      },
    });
  } catch (error) {
    await closePresenceConnection();
    await transport.close().catch(() => undefined);
    throw error;
  }
  logger.info(
    { carrier: 'simulator', servers, namespace: names.namespace, ...config.simulator },
    `simulator connector ready: consuming ${names.subject(dispatchSubject('simulator'))}, publishing ${names.subject(receiptSubject('simulator'))}`,
  );
}

main().catch((error: unknown) => {
  process.stderr.write(`connector-simulator failed: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
  process.exit(1);
});
