import { createGatewayNode } from './gateway-node.js';
import { ConfigError, loadConfig } from './libraries/config/config.js';
import { createLogger } from './libraries/logger/logger.js';

/**
 * Process entry: configuration first (a bad value stops here, before anything connects), then the node; one place
 * handles signals, uncaught exceptions and unhandled rejections.
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
  const logger = createLogger({ level: config.log.level, base: { service: 'sms-gateway', environment: config.environment } });
  const node = await createGatewayNode({ config, logger });
  let stopping = false;
  const shutdown = (signal: string) => {
    if (stopping) return;
    stopping = true;
    logger.info({ signal }, 'shutting down');
    node.stop().then(
      () => process.exit(0),
      (error: unknown) => {
        logger.error({ err: error }, 'shutdown failed');
        process.exit(1);
      },
    );
  };
  process.on('SIGTERM', () => {
    shutdown('SIGTERM');
  });
  process.on('SIGINT', () => {
    shutdown('SIGINT');
  });
  process.on('uncaughtException', (error) => {
    logger.fatal({ err: error }, 'uncaught exception');
    shutdown('uncaughtException');
  });
  process.on('unhandledRejection', (reason) => {
    logger.error({ err: reason }, 'unhandled rejection');
  });
  await node.start();
}

await main();
